// ParseRegex and CompileRegex: a recursive-descent parser from pattern text to CharRegex.
//
// Two passes: Parser builds a tree that still holds the anchors ^ and $ (Ast); Resolve
// checks that each anchor is at an end of the pattern (or of a top-level alternative, or
// of a group in that position), removes it, and in search mode pads the unanchored ends
// with "any code point, any number of times".
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "constraint/regex_parser.h"

namespace llmserve::constraint {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

constexpr uint32_t kMaxCodepoint = 0x10FFFF;
constexpr uint32_t kEndOfPattern = UINT32_MAX;  // Peek() past the end
// Repetition counts saturate here, so a huge {n} reaches the pool's bound check (which
// reports RESOURCE_EXHAUSTED) instead of overflowing or meaning "unbounded".
constexpr uint32_t kSaturatedCount = RegexPool::kUnbounded - 1;

Ranges Normalize(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  for (auto [lo, hi] : r) {
    if (!out.empty() && lo <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, hi);
    } else {
      out.push_back({lo, hi});
    }
  }
  return out;
}

// The code points 0..10FFFF not in r.
Ranges Complement(const Ranges& r) {
  Ranges out;
  uint32_t next = 0;
  for (auto [lo, hi] : Normalize(r)) {
    if (lo > next) out.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= kMaxCodepoint) out.push_back({next, kMaxCodepoint});
  return out;
}

// \d, \w: ASCII (ECMA-262 without the u/i flags; Python with re.ASCII).
const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// \s: ECMA-262's WhiteSpace and LineTerminator (TAB VT FF SP NBSP ZWNBSP, Unicode Zs,
// LF CR LS PS).
const Ranges kSpace = {{0x09, 0x0D}, {0x20, 0x20}, {0xA0, 0xA0}, {0x1680, 0x1680},
                       {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F},
                       {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
// `.`: anything but ECMA-262's line terminators.
const Ranges kNotDot = {{0x0A, 0x0A}, {0x0D, 0x0D}, {0x2028, 0x2029}};

// The parser's tree: CharRegex plus the anchors, which Resolve removes.
struct Ast {
  enum class Kind : uint8_t { kEmpty, kClass, kConcat, kAlt, kRepeat, kStart, kEnd };
  Kind kind = Kind::kEmpty;
  Ranges ranges;              // kClass
  std::vector<Ast> children;  // kConcat, kAlt, kRepeat (one)
  uint32_t min = 0, max = 0;  // kRepeat
  size_t offset = 0;          // byte offset of an anchor (for the error message)
};

Ast ClassAst(Ranges r) {
  Ast a;
  a.kind = Ast::Kind::kClass;
  a.ranges = std::move(r);
  return a;
}

// Decodes UTF-8 strictly (no overlongs, no surrogates, nothing above 10FFFF). Returns the
// byte offset of the first invalid sequence, or npos.
size_t DecodeUtf8(std::string_view s, std::vector<uint32_t>* cps, std::vector<size_t>* offsets) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<uint8_t>(s[i]);
    int len = b0 < 0x80 ? 1 : (b0 & 0xE0) == 0xC0 ? 2 : (b0 & 0xF0) == 0xE0 ? 3 : (b0 & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return i;
    uint32_t cp = len == 1 ? b0 : len == 2 ? (b0 & 0x1F) : len == 3 ? (b0 & 0x0F) : (b0 & 0x07);
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<uint8_t>(s[i + k]);
      if ((b & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (b & 0x3F);
    }
    static constexpr uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[len] || cp > kMaxCodepoint || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    cps->push_back(cp);
    offsets->push_back(i);
    i += len;
  }
  offsets->push_back(s.size());
  return std::string_view::npos;
}

// Debian's absl::string_view is its own type: absl::StrCat needs the conversion.
absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

bool IsAsciiLetter(uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(uint32_t c) { return c >= '0' && c <= '9'; }
int HexValue(uint32_t c) {
  if (c >= '0' && c <= '9') return static_cast<int>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
  return -1;
}

// A code point for a message: itself if printable ASCII, else U+XXXX.
std::string Show(uint32_t cp) {
  if (cp >= 0x21 && cp < 0x7F) return std::string(1, static_cast<char>(cp));
  return absl::StrFormat("U+%04X", cp);
}

// One item of a class or an escape: a single code point or a set (\d, \w, ...).
struct ClassItem {
  bool is_set = false;
  uint32_t cp = 0;
  Ranges set;
};

struct Quantifier {
  enum class Form { kNone, kCounted, kAmbiguous } form = Form::kNone;
  uint32_t min = 0, max = 0;
  size_t length = 0;  // code points it spans (without a lazy `?`)
};

class Parser {
 public:
  Parser(std::string_view pattern, const RegexParseOptions& opts) : pattern_(pattern), opts_(opts) {}

  absl::StatusOr<Ast> Parse() {
    if (pattern_.size() > opts_.max_pattern_bytes) {
      return absl::InvalidArgumentError(absl::StrCat("regex: the pattern is ", pattern_.size(),
                                                     " bytes, above the limit of ",
                                                     opts_.max_pattern_bytes));
    }
    size_t bad = DecodeUtf8(pattern_, &cps_, &offsets_);
    if (bad != std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("regex: invalid UTF-8 at offset ", bad));
    }
    absl::StatusOr<Ast> ast = ParseAlternation();
    if (!ast.ok()) return ast;
    if (!AtEnd()) return Invalid(pos_, "unbalanced parenthesis: ) at offset ", " has no matching (");
    return ast;
  }

 private:
  bool AtEnd() const { return pos_ >= cps_.size(); }
  uint32_t Peek(size_t ahead = 0) const {
    return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : kEndOfPattern;
  }
  size_t Offset(size_t index) const { return offsets_[std::min(index, cps_.size())]; }

  // "regex: <before><offset><after>".
  absl::Status Invalid(size_t index, std::string_view before, std::string_view after = "") const {
    return absl::InvalidArgumentError(absl::StrCat("regex: ", Av(before), Offset(index), Av(after)));
  }
  absl::Status Unsupported(size_t index, std::string_view construct) const {
    return absl::InvalidArgumentError(
        absl::StrCat("regex: ", Av(construct), " at offset ", Offset(index), " is not supported"));
  }

  absl::StatusOr<Ast> ParseAlternation() {
    std::vector<Ast> alternatives;
    while (true) {
      absl::StatusOr<Ast> concat = ParseConcat();
      if (!concat.ok()) return concat;
      alternatives.push_back(*std::move(concat));
      if (Peek() != '|') break;
      ++pos_;
    }
    if (alternatives.size() == 1) return std::move(alternatives[0]);
    Ast alt;
    alt.kind = Ast::Kind::kAlt;
    alt.children = std::move(alternatives);
    return alt;
  }

  absl::StatusOr<Ast> ParseConcat() {
    std::vector<Ast> items;
    while (!AtEnd() && Peek() != '|' && Peek() != ')') {
      if (QuantifierAt(pos_).form != Quantifier::Form::kNone) {
        return Invalid(pos_, absl::StrCat("quantifier ", Show(Peek()), " at offset "),
                       " has nothing to repeat");
      }
      absl::StatusOr<Ast> atom = ParseAtom();
      if (!atom.ok()) return atom;
      Quantifier q = QuantifierAt(pos_);
      if (q.form == Quantifier::Form::kAmbiguous) {
        return Unsupported(pos_, "repetition {,n} (Python reads it as {0,n}, ECMA-262 as text)");
      }
      if (q.form == Quantifier::Form::kCounted) {
        if (atom->kind == Ast::Kind::kStart || atom->kind == Ast::Kind::kEnd) {
          return Invalid(pos_, absl::StrCat("quantifier ", Show(Peek()), " at offset "),
                         " has nothing to repeat (it follows an anchor)");
        }
        if (q.min > q.max) {
          return Invalid(pos_, "repetition {n,m} at offset ", " has n > m");
        }
        pos_ += q.length;
        if (Peek() == '?') ++pos_;  // lazy: the same language
        Quantifier again = QuantifierAt(pos_);
        if (again.form != Quantifier::Form::kNone) {
          return Invalid(pos_, absl::StrCat("quantifier ", Show(Peek()), " at offset "),
                         " has nothing to repeat (it follows another quantifier)");
        }
        Ast rep;
        rep.kind = Ast::Kind::kRepeat;
        rep.min = q.min;
        rep.max = q.max;
        rep.children.push_back(*std::move(atom));
        items.push_back(std::move(rep));
      } else {
        items.push_back(*std::move(atom));
      }
    }
    if (items.empty()) return Ast{};
    if (items.size() == 1) return std::move(items[0]);
    Ast concat;
    concat.kind = Ast::Kind::kConcat;
    concat.children = std::move(items);
    return concat;
  }

  // A quantifier starting at `at`: * + ? {n} {n,} {n,m}. A `{` that starts none of these
  // is a literal (as in both ECMA-262 Annex B and Python), except {,m} and {,}, which
  // Python reads as {0,m} and {0,}.
  Quantifier QuantifierAt(size_t at) const {
    Quantifier q;
    if (at >= cps_.size()) return q;
    const uint32_t c = cps_[at];
    if (c == '*' || c == '+' || c == '?') {
      q.form = Quantifier::Form::kCounted;
      q.min = c == '+' ? 1 : 0;
      q.max = c == '?' ? 1 : RegexPool::kUnbounded;
      q.length = 1;
      return q;
    }
    if (c != '{') return q;
    size_t i = at + 1;
    auto number = [&](uint32_t* out) {
      size_t start = i;
      uint64_t v = 0;
      while (i < cps_.size() && IsDigit(cps_[i])) {
        v = std::min<uint64_t>(v * 10 + (cps_[i] - '0'), kSaturatedCount);
        ++i;
      }
      *out = static_cast<uint32_t>(v);
      return i > start;
    };
    uint32_t lo = 0, hi = 0;
    bool has_lo = number(&lo);
    if (!has_lo) {
      if (i < cps_.size() && cps_[i] == ',') {
        ++i;
        number(&hi);
        if (i < cps_.size() && cps_[i] == '}') q.form = Quantifier::Form::kAmbiguous;
      }
      return q;
    }
    if (i < cps_.size() && cps_[i] == '}') {
      hi = lo;
    } else if (i < cps_.size() && cps_[i] == ',') {
      ++i;
      if (!number(&hi)) hi = RegexPool::kUnbounded;
      if (i >= cps_.size() || cps_[i] != '}') return q;
    } else {
      return q;
    }
    q.form = Quantifier::Form::kCounted;
    q.min = lo;
    q.max = hi;
    q.length = i + 1 - at;
    return q;
  }

  absl::StatusOr<Ast> ParseAtom() {
    const uint32_t c = Peek();
    switch (c) {
      case '(': return ParseGroup();
      case '[': return ParseClass();
      case '.': ++pos_; return ClassAst(Complement(kNotDot));
      case '^':
      case '$': {
        Ast a;
        a.kind = c == '^' ? Ast::Kind::kStart : Ast::Kind::kEnd;
        a.offset = Offset(pos_);
        ++pos_;
        return a;
      }
      case '\\': {
        absl::StatusOr<ClassItem> item = ParseEscape(/*in_class=*/false);
        if (!item.ok()) return item.status();
        if (item->is_set) return ClassAst(std::move(item->set));
        return ClassAst({{item->cp, item->cp}});
      }
      default:
        ++pos_;
        return ClassAst({{c, c}});
    }
  }

  absl::StatusOr<Ast> ParseGroup() {
    const size_t open = pos_;
    ++pos_;
    if (Peek() == '?') {
      const uint32_t kind = Peek(1);
      if (kind == ':') {
        pos_ += 2;
      } else if (kind == '=') {
        return Unsupported(open, "lookahead (?=...)");
      } else if (kind == '!') {
        return Unsupported(open, "negative lookahead (?!...)");
      } else if (kind == '<' && Peek(2) == '=') {
        return Unsupported(open, "lookbehind (?<=...)");
      } else if (kind == '<' && Peek(2) == '!') {
        return Unsupported(open, "negative lookbehind (?<!...)");
      } else if (kind == '<' || (kind == 'P' && Peek(2) == '<')) {
        pos_ += kind == '<' ? 2 : 3;
        if (absl::Status s = ParseGroupName(open); !s.ok()) return s;
      } else if (kind == 'P' && Peek(2) == '=') {
        return Unsupported(open, "backreference (?P=name)");
      } else if (IsAsciiLetter(kind) || kind == '-') {
        return Unsupported(open, absl::StrCat("inline flags (?", Show(kind), "...)"));
      } else {
        return Unsupported(open, absl::StrCat("group syntax (?", kind == kEndOfPattern ? "" : Show(kind)));
      }
    }
    if (++depth_ > opts_.max_depth) {
      return absl::ResourceExhaustedError(absl::StrCat("regex: groups nested deeper than ",
                                                       opts_.max_depth, " at offset ", Offset(open)));
    }
    absl::StatusOr<Ast> body = ParseAlternation();
    --depth_;
    if (!body.ok()) return body;
    if (Peek() != ')') return Invalid(open, "unbalanced parenthesis: ( at offset ", " is not closed");
    ++pos_;
    return body;
  }

  // A group name up to '>': an identifier (ASCII letters, digits, _ and any non-ASCII
  // code point, not starting with a digit), unique in the pattern.
  absl::Status ParseGroupName(size_t open) {
    std::string name;
    const size_t start = pos_;
    while (!AtEnd() && Peek() != '>') {
      const uint32_t c = Peek();
      bool ok = IsAsciiLetter(c) || c == '_' || c >= 0x80 || (IsDigit(c) && pos_ > start);
      if (!ok) return Invalid(pos_, "invalid character in a group name at offset ");
      name.append(pattern_.substr(Offset(pos_), Offset(pos_ + 1) - Offset(pos_)));
      ++pos_;
    }
    if (AtEnd()) return Invalid(open, "unterminated group name at offset ");
    if (name.empty()) return Invalid(open, "empty group name at offset ");
    ++pos_;  // '>'
    if (!names_.insert(name).second) {
      return Invalid(open, absl::StrCat("duplicate group name \"", name, "\" at offset "));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Ast> ParseClass() {
    const size_t open = pos_;
    ++pos_;
    bool negated = false;
    if (Peek() == '^') {
      negated = true;
      ++pos_;
    }
    if (Peek() == ']') {
      return Unsupported(open, "a class starting with ] ([] or []...]: ECMA-262 and Python read it differently)");
    }
    Ranges ranges;
    while (true) {
      if (AtEnd()) return Invalid(open, "unterminated character class [ at offset ");
      if (Peek() == ']') {
        ++pos_;
        break;
      }
      const size_t item_at = pos_;
      absl::StatusOr<ClassItem> first = ParseClassItem();
      if (!first.ok()) return first.status();
      if (Peek() == '-' && Peek(1) != ']' && Peek(1) != kEndOfPattern) {
        ++pos_;
        absl::StatusOr<ClassItem> last = ParseClassItem();
        if (!last.ok()) return last.status();
        if (first->is_set || last->is_set) {
          return Unsupported(item_at, "a class escape (\\d \\w \\s ...) as a range end");
        }
        if (first->cp > last->cp) {
          return Invalid(item_at, absl::StrCat("character range ", Show(first->cp), "-",
                                               Show(last->cp), " at offset "),
                         " is out of order");
        }
        ranges.push_back({first->cp, last->cp});
      } else if (first->is_set) {
        ranges.insert(ranges.end(), first->set.begin(), first->set.end());
      } else {
        ranges.push_back({first->cp, first->cp});
      }
    }
    return ClassAst(negated ? Complement(ranges) : Normalize(std::move(ranges)));
  }

  absl::StatusOr<ClassItem> ParseClassItem() {
    if (Peek() == '\\') return ParseEscape(/*in_class=*/true);
    ClassItem item;
    item.cp = Peek();
    ++pos_;
    return item;
  }

  // Reads n hex digits; -1 if they are not all there.
  int64_t Hex(size_t n) {
    int64_t v = 0;
    for (size_t k = 0; k < n; ++k) {
      int d = HexValue(Peek(k));
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    pos_ += n;
    return v;
  }

  absl::StatusOr<ClassItem> ParseEscape(bool in_class) {
    const size_t at = pos_;
    ++pos_;
    if (AtEnd()) return Invalid(at, "trailing backslash at offset ");
    const uint32_t c = Peek();
    ++pos_;
    ClassItem item;
    auto set = [&](const Ranges& r, bool negate) {
      item.is_set = true;
      item.set = negate ? Complement(r) : r;
      return item;
    };
    auto single = [&](uint32_t cp) {
      item.cp = cp;
      return item;
    };
    switch (c) {
      case 'd': return set(kDigit, false);
      case 'D': return set(kDigit, true);
      case 'w': return set(kWord, false);
      case 'W': return set(kWord, true);
      case 's': return set(kSpace, false);
      case 'S': return set(kSpace, true);
      case 'n': return single('\n');
      case 't': return single('\t');
      case 'r': return single('\r');
      case 'f': return single('\f');
      case 'v': return single('\v');
      case '0':
        if (IsDigit(Peek())) return Unsupported(at, "octal escape \\0<digits>");
        return single(0);
      case 'x': {
        int64_t v = Hex(2);
        if (v < 0) return Invalid(at, "escape \\x at offset ", " needs two hex digits");
        return single(static_cast<uint32_t>(v));
      }
      case 'u': return ParseUnicodeEscape(at);
      case 'b':
        if (in_class) return single('\b');
        return Unsupported(at, "word boundary \\b");
      case 'B': return Unsupported(at, "word boundary \\B");
      case 'k': return Unsupported(at, "backreference \\k<name>");
      case 'p':
      case 'P': return Unsupported(at, absl::StrCat("Unicode property escape \\", Show(c), "{...}"));
      case 'A':
      case 'Z':
      case 'z':
      case 'G': return Unsupported(at, absl::StrCat("anchor \\", Show(c)));
      case 'c': return Unsupported(at, "control escape \\cX");
      default: break;
    }
    if (c >= '1' && c <= '9') return Unsupported(at, absl::StrCat("backreference \\", Show(c)));
    if (IsAsciiLetter(c)) {
      // ECMA-262 reads an unknown letter escape as the letter, Python refuses it (or, like
      // \a, gives it another meaning): not in the common subset.
      return Invalid(at, absl::StrCat("unknown escape \\", Show(c), " at offset "));
    }
    return single(c);  // \. \/ \- \\ \  \é ...: the code point itself
  }

  // After "\u": HHHH (a UTF-16 surrogate pair \uHHHH\uHHHH is one code point) or {H...}.
  absl::StatusOr<ClassItem> ParseUnicodeEscape(size_t at) {
    ClassItem item;
    if (Peek() == '{') {
      ++pos_;
      uint64_t v = 0;
      size_t digits = 0;
      while (HexValue(Peek()) >= 0 && digits <= 6) {
        v = v * 16 + HexValue(Peek());
        ++pos_;
        ++digits;
      }
      if (digits == 0 || Peek() != '}' || v > kMaxCodepoint) {
        return Invalid(at, "escape \\u{...} at offset ", " needs 1-6 hex digits up to 10FFFF");
      }
      ++pos_;
      item.cp = static_cast<uint32_t>(v);
      return item;
    }
    int64_t v = Hex(4);
    if (v < 0) return Invalid(at, "escape \\u at offset ", " needs four hex digits");
    if (v >= 0xD800 && v <= 0xDBFF && Peek() == '\\' && Peek(1) == 'u') {
      const size_t save = pos_;
      pos_ += 2;
      int64_t low = Hex(4);
      if (low >= 0xDC00 && low <= 0xDFFF) {
        item.cp = static_cast<uint32_t>(0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00));
        return item;
      }
      pos_ = save;
    }
    // A lone surrogate stays a surrogate: no UTF-8 string contains it, so it matches nothing.
    item.cp = static_cast<uint32_t>(v);
    return item;
  }

  std::string_view pattern_;
  const RegexParseOptions& opts_;
  std::vector<uint32_t> cps_;
  std::vector<size_t> offsets_;  // byte offset of each code point, then the pattern's size
  size_t pos_ = 0;               // index into cps_
  uint32_t depth_ = 0;
  absl::flat_hash_set<std::string> names_;
};

// Builders that keep the CharRegex flat.
CharRegex MakeConcat(std::vector<CharRegex> parts) {
  CharRegex out;
  out.kind = CharRegex::Kind::kConcat;
  for (CharRegex& p : parts) {
    if (p.kind == CharRegex::Kind::kEmpty) continue;
    if (p.kind == CharRegex::Kind::kConcat) {
      for (CharRegex& c : p.children) out.children.push_back(std::move(c));
    } else {
      out.children.push_back(std::move(p));
    }
  }
  if (out.children.empty()) return CharRegex{};
  if (out.children.size() == 1) return std::move(out.children[0]);
  return out;
}

CharRegex AnyStar() {
  CharRegex any;
  any.kind = CharRegex::Kind::kClass;
  any.ranges = {{0, kMaxCodepoint}};
  CharRegex star;
  star.kind = CharRegex::Kind::kRepeat;
  star.min = 0;
  star.max = RegexPool::kUnbounded;
  star.children.push_back(std::move(any));
  return star;
}

// Removes the anchors. `lead`: nothing can come before this node in a match (it starts
// the pattern, a top-level alternative, or a group in that position), so ^ is allowed
// here and, in search mode, an unanchored start gets the `.*` pad; `trail` likewise at
// the end for $.
class Resolver {
 public:
  explicit Resolver(bool search) : search_(search) {}

  absl::StatusOr<CharRegex> Run(const Ast& a, bool lead, bool trail) {
    switch (a.kind) {
      case Ast::Kind::kStart:
        if (!lead) return Misplaced('^', a.offset, "start");
        return Pad(CharRegex{}, false, trail);
      case Ast::Kind::kEnd:
        if (!trail) return Misplaced('$', a.offset, "end");
        return Pad(CharRegex{}, lead, false);
      case Ast::Kind::kEmpty: return Pad(CharRegex{}, lead, trail);
      case Ast::Kind::kClass: {
        CharRegex c;
        c.kind = CharRegex::Kind::kClass;
        c.ranges = a.ranges;
        return Pad(std::move(c), lead, trail);
      }
      case Ast::Kind::kRepeat: {
        absl::StatusOr<CharRegex> child = Run(a.children[0], false, false);
        if (!child.ok()) return child;
        CharRegex r;
        r.kind = CharRegex::Kind::kRepeat;
        r.min = a.min;
        r.max = a.max;
        r.children.push_back(*std::move(child));
        return Pad(std::move(r), lead, trail);
      }
      case Ast::Kind::kAlt: {
        CharRegex alt;
        alt.kind = CharRegex::Kind::kAlt;
        for (const Ast& c : a.children) {
          absl::StatusOr<CharRegex> r = Run(c, lead, trail);
          if (!r.ok()) return r;
          alt.children.push_back(*std::move(r));
        }
        return alt;
      }
      case Ast::Kind::kConcat: {
        std::vector<CharRegex> parts;
        const size_t n = a.children.size();
        for (size_t i = 0; i < n; ++i) {
          absl::StatusOr<CharRegex> r = Run(a.children[i], lead && i == 0, trail && i == n - 1);
          if (!r.ok()) return r;
          parts.push_back(*std::move(r));
        }
        return MakeConcat(std::move(parts));
      }
    }
    return CharRegex{};
  }

 private:
  static absl::Status Misplaced(char anchor, size_t offset, std::string_view end) {
    return absl::InvalidArgumentError(absl::StrCat(
        "regex: anchor ", std::string(1, anchor), " at offset ", offset,
        " is not supported (only at the ", Av(end), " of the pattern or of a top-level alternative)"));
  }

  // In search mode: `.*` before an unanchored start, after an unanchored end.
  CharRegex Pad(CharRegex x, bool before, bool after) const {
    if (!search_ || (!before && !after)) return x;
    if (x.kind == CharRegex::Kind::kEmpty) return AnyStar();
    std::vector<CharRegex> parts;
    if (before) parts.push_back(AnyStar());
    parts.push_back(std::move(x));
    if (after) parts.push_back(AnyStar());
    return MakeConcat(std::move(parts));
  }

  bool search_;
};

}  // namespace

absl::StatusOr<CharRegex> ParseRegex(std::string_view pattern, const RegexParseOptions& opts) {
  absl::StatusOr<Ast> ast = Parser(pattern, opts).Parse();
  if (!ast.ok()) return ast.status();
  return Resolver(opts.search).Run(*ast, true, true);
}

absl::StatusOr<RegexId> CompileRegex(std::string_view pattern, const RegexParseOptions& opts,
                                     RegexEncoding encoding, RegexPool& pool) {
  absl::StatusOr<CharRegex> re = ParseRegex(pattern, opts);
  if (!re.ok()) return re.status();
  return LowerRegex(*re, encoding, pool);
}

}  // namespace llmserve::constraint
