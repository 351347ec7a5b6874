#include "model/tokenizer/utf8.h"

namespace llmserve::utf8 {

namespace {
inline bool IsCont(uint8_t b) { return (b & 0xC0) == 0x80; }
}  // namespace

size_t ValidSequenceAt(std::string_view s) {
  if (s.empty()) return 0;
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t len = SequenceLength(p[0]);
  if (len == 0 || s.size() < len) return 0;
  if (len == 1) return 1;
  for (size_t i = 1; i < len; ++i) {
    if (!IsCont(p[i])) return 0;
  }
  // Second-byte ranges that exclude overlongs, surrogates and > U+10FFFF.
  if (p[0] == 0xE0 && p[1] < 0xA0) return 0;
  if (p[0] == 0xED && p[1] > 0x9F) return 0;
  if (p[0] == 0xF0 && p[1] < 0x90) return 0;
  if (p[0] == 0xF4 && p[1] > 0x8F) return 0;
  return len;
}

bool IsValid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<uint8_t>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    const size_t len = ValidSequenceAt(s.substr(i));
    if (len == 0) return false;
    i += len;
  }
  return true;
}

uint32_t DecodeAt(std::string_view s, size_t len) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  switch (len) {
    case 1: return p[0];
    case 2: return ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu);
    case 3: return ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    default: return ((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
  }
}

void Append(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

void AppendReplacingInvalid(std::string_view bytes, std::string* out) {
  size_t i = 0;
  while (i < bytes.size()) {
    const auto b = static_cast<uint8_t>(bytes[i]);
    if (b < 0x80) {
      out->push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    const size_t len = ValidSequenceAt(bytes.substr(i));
    if (len == 0) {
      out->append("\xEF\xBF\xBD");  // U+FFFD
      ++i;
    } else {
      out->append(bytes.substr(i, len));
      i += len;
    }
  }
}

size_t CompletePrefixLength(std::string_view bytes) {
  // Look at most 3 bytes back for a lead byte whose sequence is not complete yet.
  const size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto b = static_cast<uint8_t>(bytes[n - back]);
    if (IsCont(b)) continue;
    const size_t len = SequenceLength(b);
    if (len > back) {
      // Incomplete: hold it back only if what we have is a valid prefix so far.
      const auto* p = reinterpret_cast<const uint8_t*>(bytes.data() + n - back);
      bool ok = true;
      for (size_t i = 1; i < back; ++i) ok = ok && IsCont(p[i]);
      if (ok && back >= 2) {
        if (p[0] == 0xE0 && p[1] < 0xA0) ok = false;
        if (p[0] == 0xED && p[1] > 0x9F) ok = false;
        if (p[0] == 0xF0 && p[1] < 0x90) ok = false;
        if (p[0] == 0xF4 && p[1] > 0x8F) ok = false;
      }
      return ok ? n - back : n;
    }
    return n;
  }
  return n;
}

}  // namespace llmserve::utf8
