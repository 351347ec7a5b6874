#include "model/chat/jinja_lexer.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/chat/jinja_pystr.h"

namespace llmserve::chat::jinja {
namespace {

bool IsWs(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }

int HexVal(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  absl::StatusOr<std::vector<Token>> Run() {
    const size_t n = src_.size();
    size_t pos = 0;
    while (pos < n) {
      size_t t = FindTagStart(pos);
      if (t == std::string::npos) {
        Emit(Tok::kData, src_.substr(pos), pos);
        break;
      }
      const char kind = src_[t + 1];
      size_t p = t + 2;
      char sign = 0;
      if (p < n && (src_[p] == '-' || src_[p] == '+')) sign = src_[p++];
      size_t raw_end = kind == '%' ? MatchRawBegin(p) : std::string::npos;
      EmitText(pos, t, sign, kind != '{');
      if (kind == '#') {
        size_t j = src_.find("#}", p);
        if (j == std::string::npos) return Error(t, "Missing end of comment tag");
        pos = AfterEnd(j + 2, j > p ? src_[j - 1] : 0);
      } else if (raw_end != std::string::npos) {
        auto next = LexRaw(raw_end, t);
        if (!next.ok()) return next.status();
        pos = *next;
      } else {
        auto next = LexTag(kind == '{', t, p);
        if (!next.ok()) return next.status();
        pos = *next;
      }
    }
    Emit(Tok::kEof, "", n);
    return std::move(tokens_);
  }

 private:
  size_t FindTagStart(size_t pos) const {
    while (true) {
      size_t t = src_.find('{', pos);
      if (t == std::string::npos || t + 1 >= src_.size()) return std::string::npos;
      char c = src_[t + 1];
      if (c == '{' || c == '%' || c == '#') return t;
      pos = t + 1;
    }
  }

  // Position after a tag end at `after` (just past "%}" / "#}"); `sign` precedes the end.
  size_t AfterEnd(size_t after, char sign) const {
    if (sign == '-') {
      while (after < src_.size() && IsWs(src_[after])) ++after;
    } else if (sign != '+' && after < src_.size() && src_[after] == '\n') {
      ++after;  // trim_blocks
    }
    return after;
  }

  // Emits the text src_[pos, t) before a tag, applying `-` and lstrip_blocks.
  void EmitText(size_t pos, size_t t, char sign, bool lstrip_ok) {
    std::string text = src_.substr(pos, t - pos);
    if (sign == '-') {
      text = PyStrip(text, nullptr, false, true);
    } else if (sign != '+' && lstrip_ok) {
      size_t nl = text.rfind('\n');
      size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
      bool line_starting = pos == 0 || src_[pos - 1] == '\n';
      if ((l_pos > 0 || line_starting) &&
          std::all_of(text.begin() + l_pos, text.end(), [](char c) { return c == ' ' || c == '\t'; })) {
        text.resize(l_pos);
      }
    }
    if (!text.empty()) Emit(Tok::kData, std::move(text), pos);
  }

  // If "raw" + "%}" follows `p`, the position after the raw-begin tag; else npos.
  size_t MatchRawBegin(size_t p) const {
    while (p < src_.size() && IsWs(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0) return std::string::npos;
    p += 3;
    if (p < src_.size() && IsNameChar(src_[p])) return std::string::npos;
    while (p < src_.size() && IsWs(src_[p])) ++p;
    if (src_.compare(p, 3, "-%}") == 0) {
      p += 3;
      while (p < src_.size() && IsWs(src_[p])) ++p;
      return p;
    }
    if (src_.compare(p, 2, "%}") == 0) return p + 2;
    return std::string::npos;
  }

  absl::StatusOr<size_t> LexRaw(size_t body, size_t tag_pos) {
    size_t search = body;
    while (true) {
      size_t t = src_.find("{%", search);
      if (t == std::string::npos) return Error(tag_pos, "Missing end of raw directive");
      size_t p = t + 2;
      char sign = 0;
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) sign = src_[p++];
      while (p < src_.size() && IsWs(src_[p])) ++p;
      if (src_.compare(p, 6, "endraw") != 0) { search = t + 2; continue; }
      p += 6;
      while (p < src_.size() && IsWs(src_[p])) ++p;
      char end_sign = 0;
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) end_sign = src_[p++];
      if (src_.compare(p, 2, "%}") != 0) { search = t + 2; continue; }
      EmitText(body, t, sign, true);
      return AfterEnd(p + 2, end_sign);
    }
  }

  // Tokens inside {{ }} or {% %}; returns the position after the end tag.
  absl::StatusOr<size_t> LexTag(bool var, size_t tag_pos, size_t p) {
    Emit(var ? Tok::kVarBegin : Tok::kBlockBegin, "", tag_pos);
    std::vector<char> stack;
    const size_t n = src_.size();
    while (true) {
      if (stack.empty()) {
        if (var) {
          if (src_.compare(p, 3, "-}}") == 0) { Emit(Tok::kVarEnd, "", p); return AfterEnd(p + 3, '-'); }
          if (src_.compare(p, 2, "}}") == 0) { Emit(Tok::kVarEnd, "", p); return p + 2; }
        } else {
          for (char s : {'-', '+'}) {
            if (p + 2 < n && src_[p] == s && src_[p + 1] == '%' && src_[p + 2] == '}') {
              Emit(Tok::kBlockEnd, "", p);
              return AfterEnd(p + 3, s);
            }
          }
          if (src_.compare(p, 2, "%}") == 0) { Emit(Tok::kBlockEnd, "", p); return AfterEnd(p + 2, 0); }
        }
      }
      if (p >= n) return Error(p, "unexpected end of template");
      const char c = src_[p];
      if (IsWs(c)) { ++p; continue; }
      if (IsDigit(c)) { p = LexNumber(p); continue; }
      if (IsNameStart(c)) {
        size_t e = p;
        while (e < n && IsNameChar(src_[e])) ++e;
        Emit(Tok::kName, src_.substr(p, e - p), p);
        p = e;
        continue;
      }
      if (c == '\'' || c == '"') {
        auto e = LexString(p);
        if (!e.ok()) return e.status();
        p = *e;
        continue;
      }
      static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
      bool two = false;
      for (std::string_view op : kTwo) {
        if (src_.compare(p, 2, op) == 0) {
          Emit(Tok::kOp, std::string(op), p);
          p += 2;
          two = true;
          break;
        }
      }
      if (two) continue;
      if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
        return Error(p, absl::StrCat("unexpected char '", std::string(1, c), "'"));
      }
      if (c == '(' || c == '[' || c == '{') stack.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
      if (c == ')' || c == ']' || c == '}') {
        if (stack.empty()) return Error(p, absl::StrCat("unexpected '", std::string(1, c), "'"));
        if (stack.back() != c) {
          return Error(p, absl::StrCat("unexpected '", std::string(1, c), "', expected '",
                                       std::string(1, stack.back()), "'"));
        }
        stack.pop_back();
      }
      Emit(Tok::kOp, std::string(1, c), p);
      ++p;
    }
  }

  size_t Digits(size_t p, std::string* out) const {
    while (p < src_.size() && (IsDigit(src_[p]) || (src_[p] == '_' && p + 1 < src_.size() &&
                                                    IsDigit(src_[p + 1])))) {
      if (src_[p] != '_') out->push_back(src_[p]);
      ++p;
    }
    return p;
  }

  size_t LexNumber(size_t p) {
    std::string text;
    size_t start = p;
    p = Digits(p, &text);
    bool is_float = false;
    const bool after_dot = start > 0 && src_[start - 1] == '.';
    if (!after_dot) {
      if (p + 1 < src_.size() && src_[p] == '.' && IsDigit(src_[p + 1])) {
        text.push_back('.');
        p = Digits(p + 1, &text);
        is_float = true;
      }
      size_t q = p;
      if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
        ++q;
        std::string exp = "e";
        if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) exp.push_back(src_[q++]);
        if (q < src_.size() && IsDigit(src_[q])) {
          p = Digits(q, &exp);
          text += exp;
          is_float = true;
        }
      }
    }
    Emit(is_float ? Tok::kFloat : Tok::kInt, std::move(text), start);
    return p;
  }

  absl::StatusOr<size_t> LexString(size_t p) {
    const char quote = src_[p];
    std::string out;
    size_t i = p + 1;
    while (true) {
      if (i >= src_.size()) return Error(p, absl::StrCat("unexpected char '", std::string(1, quote), "'"));
      char c = src_[i];
      if (c == quote) break;
      if (c != '\\') { out.push_back(c); ++i; continue; }
      if (i + 1 >= src_.size()) return Error(p, "unterminated string");
      char e = src_[i + 1];
      i += 2;
      switch (e) {
        case '\n': break;
        case '\\': out.push_back('\\'); break;
        case '\'': out.push_back('\''); break;
        case '"': out.push_back('"'); break;
        case 'a': out.push_back('\a'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'v': out.push_back('\v'); break;
        case 'x': case 'u': case 'U': {
          int len = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          char32_t cp = 0;
          for (int k = 0; k < len; ++k) {
            int h = i + k < src_.size() ? HexVal(src_[i + k]) : -1;
            if (h < 0) return Error(i - 2, absl::StrCat("truncated \\", std::string(1, e), " escape"));
            cp = cp * 16 + h;
          }
          if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            return Error(i - 2, "invalid code point in string escape");
          }
          i += len;
          AppendUtf8(cp, &out);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            char32_t cp = e - '0';
            for (int k = 0; k < 2 && i < src_.size() && src_[i] >= '0' && src_[i] <= '7'; ++k) {
              cp = cp * 8 + (src_[i++] - '0');
            }
            AppendUtf8(cp, &out);
          } else {
            out.push_back('\\');
            out.push_back(e);
          }
      }
    }
    Emit(Tok::kString, std::move(out), p);
    return i + 1;
  }

  void Emit(Tok kind, std::string value, size_t offset) {
    Token t;
    t.kind = kind;
    t.value = std::move(value);
    Position(offset, &t.line, &t.col);
    tokens_.push_back(std::move(t));
  }

  void Position(size_t offset, int* line, int* col) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t idx = static_cast<size_t>(it - line_starts_.begin()) - 1;
    *line = static_cast<int>(idx + 1);
    *col = static_cast<int>(CodePointCount(std::string_view(src_).substr(
               line_starts_[idx], offset - line_starts_[idx]))) + 1;
  }

  absl::Status Error(size_t offset, std::string_view message) const {
    int line, col;
    Position(std::min(offset, src_.size()), &line, &col);
    return absl::InvalidArgumentError(absl::StrCat("line ", line, " col ", col, ": ", AV(message)));
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

absl::StatusOr<std::vector<Token>> Lex(std::string_view source) {
  // jinja2 normalizes newlines to "\n" and drops a single trailing newline.
  std::string src;
  src.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      src.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      src.push_back(source[i]);
    }
  }
  if (!src.empty() && src.back() == '\n') src.pop_back();
  return Lexer(std::move(src)).Run();
}

}  // namespace llmserve::chat::jinja
