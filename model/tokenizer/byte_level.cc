#include "model/tokenizer/byte_level.h"

#include <array>

#include "model/tokenizer/utf8.h"

namespace llmserve::byte_level {

namespace {

bool Printable(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

struct Tables {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 0x200> to_byte{};  // every mapped code point is below U+0144
  Tables() {
    to_byte.fill(-1);
    uint32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      to_cp[b] = Printable(b) ? static_cast<uint32_t>(b) : next++;
      to_byte[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& T() {
  static const Tables tables;
  return tables;
}

}  // namespace

uint32_t ByteToCodePoint(uint8_t b) { return T().to_cp[b]; }

int CodePointToByte(uint32_t cp) { return cp < T().to_byte.size() ? T().to_byte[cp] : -1; }

std::string Encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) utf8::Append(ByteToCodePoint(static_cast<uint8_t>(c)), &out);
  return out;
}

std::string Decode(std::string_view text, bool* exact) {
  std::string out;
  out.reserve(text.size());
  if (exact != nullptr) *exact = true;
  size_t i = 0;
  while (i < text.size()) {
    size_t len = utf8::ValidSequenceAt(text.substr(i));
    int b = -1;
    if (len != 0) b = CodePointToByte(utf8::DecodeAt(text.substr(i), len));
    if (len == 0) len = 1;
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
    } else {
      out.append(text.substr(i, len));
      if (exact != nullptr) *exact = false;
    }
    i += len;
  }
  return out;
}

}  // namespace llmserve::byte_level
