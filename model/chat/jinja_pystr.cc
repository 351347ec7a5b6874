#include "model/chat/jinja_pystr.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <utf8proc.h>

#include "model/chat/jinja_value.h"

namespace llmserve::chat::jinja {
namespace {

// Decodes one code point at s[*i] (valid UTF-8 assumed, else returns the byte).
char32_t Next(std::string_view s, size_t* i) {
  const unsigned char c = static_cast<unsigned char>(s[*i]);
  int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  if (*i + len > s.size()) len = 1;
  char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
  for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[*i + k]) & 0x3f);
  *i += len;
  return cp;
}

template <typename F>
std::string MapCodePoints(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) AppendUtf8(f(Next(s, &i)), &out);
  return out;
}

bool InChars(char32_t c, const std::vector<char32_t>& set) {
  for (char32_t x : set) {
    if (x == c) return true;
  }
  return false;
}

}  // namespace

bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    int len;
    char32_t min;
    if (c < 0x80) { ++i; continue; }
    if ((c >> 5) == 6) { len = 2; min = 0x80; }
    else if ((c >> 4) == 14) { len = 3; min = 0x800; }
    else if ((c >> 3) == 30) { len = 4; min = 0x10000; }
    else return false;
    if (i + len > s.size()) return false;
    char32_t cp = c & (0x7f >> len);
    for (int k = 1; k < len; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 2) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  return true;
}

std::vector<char32_t> DecodeUtf8(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) out.push_back(Next(s, &i));
  return out;
}

void AppendUtf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  }
}

std::vector<size_t> CodePointOffsets(std::string_view s) {
  std::vector<size_t> out;
  out.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size();) {
    out.push_back(i);
    Next(s, &i);
  }
  out.push_back(s.size());
  return out;
}

size_t CodePointCount(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return n;
}

bool IsPySpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
         c == 0x202f || c == 0x205f || c == 0x3000;
}

std::string PyStrip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<char32_t> set;
  if (chars != nullptr) set = DecodeUtf8(*chars);
  auto strip_me = [&](char32_t c) { return chars == nullptr ? IsPySpace(c) : InChars(c, set); };
  std::vector<size_t> offs = CodePointOffsets(s);
  size_t n = offs.size() - 1, b = 0, e = n;
  auto cp_at = [&](size_t k) { size_t i = offs[k]; return Next(s, &i); };
  if (left) while (b < e && strip_me(cp_at(b))) ++b;
  if (right) while (e > b && strip_me(cp_at(e - 1))) --e;
  return std::string(s.substr(offs[b], offs[e] - offs[b]));
}

std::vector<std::string> PySplit(std::string_view s, const std::string* sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep != nullptr) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      size_t pos = s.find(*sep, start);
      if (pos == std::string_view::npos) break;
      out.emplace_back(s.substr(start, pos - start));
      start = pos + sep->size();
    }
    out.emplace_back(s.substr(start));
    return out;
  }
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    while (j < s.size()) {  // skip whitespace
      size_t k = j;
      if (!IsPySpace(Next(s, &k))) break;
      j = k;
    }
    if (j >= s.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
      out.emplace_back(s.substr(j));
      return out;
    }
    size_t k = j;
    while (k < s.size()) {
      size_t m = k;
      if (IsPySpace(Next(s, &m))) break;
      k = m;
    }
    out.emplace_back(s.substr(j, k - j));
    i = k;
  }
  return out;
}

std::vector<std::string> PyRSplit(std::string_view s, const std::string* sep, int64_t maxsplit) {
  if (maxsplit < 0) return PySplit(s, sep, maxsplit);
  std::vector<std::string> out;
  if (sep != nullptr) {
    size_t end = s.size();
    while (static_cast<int64_t>(out.size()) < maxsplit && end >= sep->size()) {
      size_t pos = s.rfind(*sep, end - sep->size());
      if (pos == std::string_view::npos) break;
      out.emplace_back(s.substr(pos + sep->size(), end - pos - sep->size()));
      end = pos;
    }
    out.emplace_back(s.substr(0, end));
  } else {
    std::vector<size_t> offs = CodePointOffsets(s);
    auto space_at = [&](size_t k) { size_t i = offs[k]; return IsPySpace(Next(s, &i)); };
    size_t e = offs.size() - 1;  // code-point index one past the current word
    while (true) {
      while (e > 0 && space_at(e - 1)) --e;
      if (e == 0) break;
      if (static_cast<int64_t>(out.size()) >= maxsplit) {
        out.emplace_back(s.substr(0, offs[e]));
        break;
      }
      size_t b = e;
      while (b > 0 && !space_at(b - 1)) --b;
      out.emplace_back(s.substr(offs[b], offs[e] - offs[b]));
      e = b;
    }
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> PySplitLines(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0, i = 0;
  while (i < s.size()) {
    size_t k = i;
    char32_t c = Next(s, &k);
    bool brk = c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || c == 0x1c || c == 0x1d ||
               c == 0x1e || c == 0x85 || c == 0x2028 || c == 0x2029;
    if (brk) {
      out.emplace_back(s.substr(start, i - start));
      if (c == '\r' && k < s.size() && s[k] == '\n') ++k;
      start = k;
    }
    i = k;
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

std::string PyReplace(std::string_view s, std::string_view from, std::string_view to,
                      int64_t count) {
  std::string out;
  if (from.empty()) {  // inserts `to` around every code point
    std::vector<size_t> offs = CodePointOffsets(s);
    int64_t done = 0;
    for (size_t k = 0; k + 1 <= offs.size(); ++k) {
      if (count < 0 || done < count) { out.append(to); ++done; }
      if (k + 1 < offs.size()) out.append(s.substr(offs[k], offs[k + 1] - offs[k]));
    }
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t pos = s.find(from, start);
    if (pos == std::string_view::npos) break;
    out.append(s.substr(start, pos - start));
    out.append(to);
    start = pos + from.size();
    ++done;
  }
  out.append(s.substr(start));
  return out;
}

std::string PyUpper(std::string_view s) {
  return MapCodePoints(s, [](char32_t c) { return static_cast<char32_t>(utf8proc_toupper(c)); });
}

std::string PyLower(std::string_view s) {
  return MapCodePoints(s, [](char32_t c) { return static_cast<char32_t>(utf8proc_tolower(c)); });
}

std::string PyCapitalize(std::string_view s) {
  bool first = true;
  return MapCodePoints(s, [&](char32_t c) {
    char32_t r = static_cast<char32_t>(first ? utf8proc_toupper(c) : utf8proc_tolower(c));
    first = false;
    return r;
  });
}

bool PyIsLower(std::string_view s) {
  bool cased = false;
  for (char32_t c : DecodeUtf8(s)) {
    if (utf8proc_isupper(c)) return false;
    if (utf8proc_islower(c)) cased = true;
  }
  return cased;
}

bool PyIsUpper(std::string_view s) {
  bool cased = false;
  for (char32_t c : DecodeUtf8(s)) {
    if (utf8proc_islower(c)) return false;
    if (utf8proc_isupper(c)) cased = true;
  }
  return cased;
}

std::string PyFloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // "-d.ddde+XX"
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t epos = sci.find('e');
  int exp = std::atoi(sci.c_str() + epos + 1);
  std::string digits;
  for (size_t i = 0; i < epos; ++i) {
    if (sci[i] != '.') digits.push_back(sci[i]);
  }
  std::string out = neg ? "-" : "";
  const int n = static_cast<int>(digits.size());
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0." + std::string(-exp - 1, '0') + digits;
    } else if (exp + 1 >= n) {
      out += digits + std::string(exp + 1 - n, '0') + ".0";
    } else {
      out += digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (n > 1) {
    out.push_back('.');
    out.append(digits, 1, std::string::npos);
  }
  char ebuf[16];
  std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return out + ebuf;
}

std::string PyStrRepr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size();) {
    size_t start = i;
    char32_t c = Next(s, &i);
    char buf[16];
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') { out += "\\n"; }
    else if (c == '\r') { out += "\\r"; }
    else if (c == '\t') { out += "\\t"; }
    else if (c < 0x20 || c == 0x7f) {
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else {
      utf8proc_category_t cat = utf8proc_category(c);
      bool printable = !(cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF ||
                         cat == UTF8PROC_CATEGORY_CS || cat == UTF8PROC_CATEGORY_CO ||
                         cat == UTF8PROC_CATEGORY_CN || cat == UTF8PROC_CATEGORY_ZL ||
                         cat == UTF8PROC_CATEGORY_ZP || cat == UTF8PROC_CATEGORY_ZS);
      if (printable) {
        out.append(s.substr(start, i - start));
      } else {
        if (c < 0x100) std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(c));
        else if (c < 0x10000) std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
        else std::snprintf(buf, sizeof(buf), "\\U%08x", static_cast<unsigned>(c));
        out += buf;
      }
    }
  }
  out.push_back(quote);
  return out;
}

namespace {

// Past this size a repr is cut short (values may share elements, so a small DAG can
// print exponentially long); callers then fail the string-size cap.
constexpr size_t kReprCap = 16u << 20;

void ReprInto(const Value& v, int depth, std::string* out) {
  if (depth > 200 || out->size() > kReprCap) {
    *out += "...";
    return;
  }
  switch (v.kind()) {
    case Value::Kind::kUndefined: return;
    case Value::Kind::kNone: *out += "None"; return;
    case Value::Kind::kBool: *out += v.as_bool() ? "True" : "False"; return;
    case Value::Kind::kInt: *out += std::to_string(v.as_int()); return;
    case Value::Kind::kFloat: *out += PyFloatRepr(v.as_float()); return;
    case Value::Kind::kString: *out += PyStrRepr(v.str()); return;
    case Value::Kind::kList: {
      const ListObj& l = v.list();
      if (l.is_iter) {
        *out += "<generator object>";
        return;
      }
      if (l.view != nullptr) *out += l.view, *out += '(';
      *out += l.is_tuple ? '(' : '[';
      for (size_t i = 0; i < l.items.size() && out->size() <= kReprCap; ++i) {
        if (i > 0) *out += ", ";
        ReprInto(l.items[i], depth + 1, out);
      }
      if (l.is_tuple && l.items.size() == 1) *out += ',';
      *out += l.is_tuple ? ')' : ']';
      if (l.view != nullptr) *out += ')';
      return;
    }
    case Value::Kind::kDict:
    case Value::Kind::kNamespace: {
      const DictObj& d = v.is_dict() ? v.dict() : v.ns().attrs;
      if (v.is_namespace()) *out += "<Namespace ";
      *out += '{';
      bool first = true;
      for (const auto& [k, val] : d.items()) {
        if (out->size() > kReprCap) break;
        if (!first) *out += ", ";
        first = false;
        ReprInto(k, depth + 1, out);
        *out += ": ";
        ReprInto(val, depth + 1, out);
      }
      *out += '}';
      if (v.is_namespace()) *out += '>';
      return;
    }
    case Value::Kind::kCallable: *out += v.callable().Repr(); return;
  }
}

}  // namespace

std::string PyStr(const Value& v) {
  if (v.is_string()) return v.str();
  std::string out;
  ReprInto(v, 0, &out);
  return out;
}

std::string PyRepr(const Value& v) {
  std::string out;
  ReprInto(v, 0, &out);
  return out;
}

}  // namespace llmserve::chat::jinja
