// GBNF -> Grammar. The syntax follows llama.cpp's parser (src/llama-grammar.cpp there:
// parse_space, parse_sequence, parse_alternates, parse_char): a rule body ends at a newline
// unless the newline follows `|` or `::=` or lies inside parentheses; names are
// [a-zA-Z0-9-]+; `.` is any code point (newline included). Deliberate differences: errors
// instead of llama.cpp's quirks (an empty class [] is refused rather than matching the
// empty string, a reversed range [z-a] or a twice-defined rule is refused, {m,n} bounds
// above the regex limit are refused rather than read as unbounded), left recursion is
// accepted (the matcher is an Earley parser), and token references <...> are refused (a
// grammar is compiled before it meets a vocabulary).
//
// Every terminal is one lexeme per code point: a literal "ab" is two lexemes, a class one.
// Repetitions become nonterminals: x* is r ::= r x | (), x+ is r ::= r x | x, and the
// optional part of x{m,n} a right-nested chain o_k ::= x o_(k-1) | (), linear in n.
#include "constraint/gbnf.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace llmserve::constraint {
namespace {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;
constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '-';
}
bool IsSurrogate(uint32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

// The code point at s[*i] (advancing *i), or -1 if the bytes there are not well-formed
// UTF-8 (overlong forms, surrogates and values above U+10FFFF are not).
int64_t DecodeUtf8(std::string_view s, size_t* i) {
  const auto b = static_cast<uint8_t>(s[*i]);
  if (b < 0x80) {
    ++*i;
    return b;
  }
  int len;
  uint32_t min;
  if (b >= 0xC2 && b <= 0xDF) {
    len = 2, min = 0x80;
  } else if ((b & 0xF0) == 0xE0) {
    len = 3, min = 0x800;
  } else if (b >= 0xF0 && b <= 0xF4) {
    len = 4, min = 0x10000;
  } else {
    return -1;
  }
  if (s.size() - *i < static_cast<size_t>(len)) return -1;
  uint32_t cp = b & (0x7F >> len);
  for (int k = 1; k < len; ++k) {
    const auto c = static_cast<uint8_t>(s[*i + k]);
    if ((c & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (c & 0x3F);
  }
  if (cp < min || cp > kMaxCodepoint || IsSurrogate(cp)) return -1;
  *i += len;
  return cp;
}

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

// The code points 0..10FFFF not in `ranges`.
Ranges Complement(Ranges ranges) {
  std::sort(ranges.begin(), ranges.end());
  Ranges out;
  uint64_t next = 0;  // first code point not yet covered
  for (auto [lo, hi] : ranges) {
    if (lo > next) out.push_back({static_cast<uint32_t>(next), lo - 1});
    next = std::max<uint64_t>(next, uint64_t{hi} + 1);
  }
  if (next <= kMaxCodepoint) out.push_back({static_cast<uint32_t>(next), kMaxCodepoint});
  return out;
}

class Parser {
 public:
  Parser(std::string_view text, const GbnfOptions& opts) : text_(text), opts_(opts), b_(opts.grammar) {}
  absl::StatusOr<Grammar> Run();

 private:
  using Alternatives = std::vector<std::vector<Symbol>>;
  struct UserRule {
    std::string name;
    NonterminalId id;
    bool defined = false;
    size_t first_use = 0;  // byte offset of the first reference (for "undefined rule")
  };

  char Peek(size_t k = 0) const { return pos_ + k < text_.size() ? text_[pos_ + k] : '\0'; }
  bool AtEnd() const { return pos_ >= text_.size(); }
  void SkipSpace(bool newline_ok);
  std::string Where(size_t at) const;
  bool Fail(absl::StatusCode code, std::string_view what, size_t at);
  bool Syntax(std::string_view what, size_t at) {
    return Fail(absl::StatusCode::kInvalidArgument, what, at);
  }
  bool BuilderOk(size_t at);

  bool ParseRule();
  bool ParseAlternates(const std::string& rule, bool nested, uint32_t depth, Alternatives* out);
  bool ParseSequence(const std::string& rule, bool nested, uint32_t depth, std::vector<Symbol>* seq);
  bool ParseLiteral(std::vector<Symbol>* seq);
  bool ParseClass(std::vector<Symbol>* seq);
  bool ParseChar(uint32_t* cp);
  bool ParseInt(uint64_t* value);
  bool ParseRepetition(const std::string& rule, bool nested, size_t item, std::vector<Symbol>* seq);
  bool Repeat(const std::string& rule, size_t item, uint64_t min, uint64_t max, size_t at,
              std::vector<Symbol>* seq);

  NonterminalId Reference(std::string_view name, size_t at);
  NonterminalId Fresh(const std::string& rule) {
    return b_.NewNonterminal(absl::StrCat(rule, "_", ++fresh_));  // '_' never in a user name
  }
  Symbol CodepointSymbol(uint32_t cp);

  std::string_view text_;
  const GbnfOptions& opts_;
  GrammarBuilder b_;
  size_t pos_ = 0;
  absl::Status status_;
  std::vector<UserRule> rules_;
  absl::flat_hash_map<std::string, size_t> rule_index_;  // name -> rules_ index
  // Lexemes already made, so that repeated terminals skip building their expressions.
  absl::flat_hash_map<uint32_t, Symbol> codepoint_symbols_;
  absl::flat_hash_map<std::string, Symbol> class_symbols_;  // by the class's text
  std::optional<Symbol> any_codepoint_;
  uint32_t fresh_ = 0;
  uint64_t repeated_symbols_ = 0;  // copies made by {m,...}, bounded before they are made
};

void Parser::SkipSpace(bool newline_ok) {
  while (!AtEnd()) {
    const char c = text_[pos_];
    if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
      ++pos_;
    } else if (c == '#') {
      while (!AtEnd() && text_[pos_] != '\r' && text_[pos_] != '\n') ++pos_;
    } else {
      break;
    }
  }
}

// "line L:C", 1-based, the column counted in code points.
std::string Parser::Where(size_t at) const {
  at = std::min(at, text_.size());
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < at; ++i) {
    if (text_[i] == '\n') ++line, line_start = i + 1;
  }
  size_t column = 1;
  for (size_t i = line_start; i < at; ++i) {
    if ((static_cast<uint8_t>(text_[i]) & 0xC0) != 0x80) ++column;
  }
  return absl::StrCat("line ", line, ":", column);
}

bool Parser::Fail(absl::StatusCode code, std::string_view what, size_t at) {
  if (status_.ok()) status_ = absl::Status(code, std::string(what) + " at " + Where(at));
  return false;
}

// A bound of the builder (rules, symbols, lexemes, regex nodes) hit while parsing near `at`.
bool Parser::BuilderOk(size_t at) {
  const absl::Status& s = b_.status();
  if (s.ok()) return true;
  return Fail(s.code(), std::string(s.message().data(), s.message().size()), at);
}

NonterminalId Parser::Reference(std::string_view name, size_t at) {
  auto [it, inserted] = rule_index_.try_emplace(std::string(name), rules_.size());
  if (inserted) {
    rules_.push_back(UserRule{std::string(name), b_.NewNonterminal(std::string(name)), false, at});
  }
  return rules_[it->second].id;
}

Symbol Parser::CodepointSymbol(uint32_t cp) {
  auto it = codepoint_symbols_.find(cp);
  if (it != codepoint_symbols_.end()) return it->second;
  Symbol s = b_.LexemeSymbol(b_.regex().Literal(EncodeUtf8(cp)));
  codepoint_symbols_.emplace(cp, s);
  return s;
}

absl::StatusOr<Grammar> Parser::Run() {
  if (text_.size() > opts_.max_grammar_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the grammar has ", text_.size(), " bytes, above the limit of ", opts_.max_grammar_bytes));
  }
  for (size_t i = 0; i < text_.size();) {
    const size_t at = i;
    if (text_[i] == '\0' || DecodeUtf8(text_, &i) < 0) {
      Syntax(text_[at] == '\0' ? "NUL byte in the grammar" : "invalid UTF-8", at);
      return status_;
    }
  }
  SkipSpace(true);
  if (AtEnd()) return absl::InvalidArgumentError("the grammar is empty: it defines no rules");
  while (!AtEnd()) {
    if (!ParseRule()) return status_;
  }
  // The first reference (in the text) to a rule that is never defined.
  const UserRule* undefined = nullptr;
  for (const UserRule& r : rules_) {
    if (!r.defined && (undefined == nullptr || r.first_use < undefined->first_use)) undefined = &r;
  }
  if (undefined != nullptr) {
    Syntax(absl::StrCat("undefined rule \"", undefined->name, "\""), undefined->first_use);
    return status_;
  }
  auto root = rule_index_.find("root");
  if (root == rule_index_.end()) return absl::InvalidArgumentError("grammar has no root rule");
  if (!BuilderOk(text_.size())) return status_;
  return std::move(b_).Build(rules_[root->second].id);
}

// name ::= alternatives (newline | end)
bool Parser::ParseRule() {
  const size_t start = pos_;
  while (IsWordChar(Peek())) ++pos_;
  if (pos_ == start) return Syntax("expected a rule name", start);
  const std::string name(text_.substr(start, pos_ - start));
  SkipSpace(false);
  if (text_.substr(pos_, 3) != "::=") return Syntax("expected '::=' after the rule name", pos_);
  pos_ += 3;
  SkipSpace(true);
  const NonterminalId id = Reference(name, start);
  UserRule& rule = rules_[rule_index_.at(name)];
  if (rule.defined) return Syntax(absl::StrCat("rule \"", name, "\" is defined twice"), start);
  rule.defined = true;
  Alternatives alts;
  if (!ParseAlternates(name, /*nested=*/false, 0, &alts)) return false;
  for (auto& alt : alts) b_.AddRule(id, std::move(alt));
  if (!BuilderOk(pos_)) return false;
  if (Peek() == '\r') {
    pos_ += Peek(1) == '\n' ? 2 : 1;
  } else if (Peek() == '\n') {
    ++pos_;
  } else if (!AtEnd()) {
    const char c = Peek();
    return Syntax(c > ' ' && c < 0x7F ? absl::StrFormat("unexpected '%c'", c)
                                      : std::string("unexpected character"),
                  pos_);
  }
  SkipSpace(true);
  return true;
}

// sequence ('|' sequence)*; a newline may follow each '|'.
bool Parser::ParseAlternates(const std::string& rule, bool nested, uint32_t depth, Alternatives* out) {
  out->emplace_back();
  if (!ParseSequence(rule, nested, depth, &out->back())) return false;
  while (Peek() == '|') {
    ++pos_;
    SkipSpace(true);
    out->emplace_back();
    if (!ParseSequence(rule, nested, depth, &out->back())) return false;
  }
  return true;
}

// Items up to the first character that cannot start or repeat one. `item` is where the
// last item's symbols start in `seq`, which a following repetition applies to.
bool Parser::ParseSequence(const std::string& rule, bool nested, uint32_t depth,
                           std::vector<Symbol>* seq) {
  size_t item = std::string::npos;
  while (!AtEnd()) {
    if (!BuilderOk(pos_)) return false;
    const size_t at = pos_;
    const char c = Peek();
    if (c == '"') {
      item = seq->size();
      if (!ParseLiteral(seq)) return false;
    } else if (c == '[') {
      item = seq->size();
      if (!ParseClass(seq)) return false;
    } else if (IsWordChar(c)) {
      while (IsWordChar(Peek())) ++pos_;
      item = seq->size();
      seq->push_back(Symbol::Nonterminal(Reference(text_.substr(at, pos_ - at), at)));
    } else if (c == '(') {
      if (depth >= opts_.max_depth) {
        return Syntax(absl::StrCat("groups nested more than ", opts_.max_depth, " deep"), at);
      }
      ++pos_;
      SkipSpace(true);
      Alternatives alts;
      if (!ParseAlternates(rule, /*nested=*/true, depth + 1, &alts)) return false;
      if (Peek() != ')') return Syntax("expected ')'", pos_);
      ++pos_;
      item = seq->size();
      if (alts.size() == 1) {  // a plain sequence needs no nonterminal of its own
        seq->insert(seq->end(), alts[0].begin(), alts[0].end());
      } else {
        const NonterminalId nt = Fresh(rule);
        for (auto& alt : alts) b_.AddRule(nt, std::move(alt));
        seq->push_back(Symbol::Nonterminal(nt));
      }
    } else if (c == '.') {
      ++pos_;
      item = seq->size();
      if (!any_codepoint_) any_codepoint_ = b_.LexemeSymbol(b_.regex().AnyCodepoint());
      seq->push_back(*any_codepoint_);
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      if (item == std::string::npos) {
        return Syntax(absl::StrFormat("expected an item before '%c'", c), at);
      }
      if (!ParseRepetition(rule, nested, item, seq)) return false;
    } else if (c == '<' || c == '!') {
      return Syntax("token references (<...>, !<...>) are not supported", at);
    } else {
      break;
    }
    SkipSpace(nested);
  }
  return true;
}

// "..." -> one lexeme per code point.
bool Parser::ParseLiteral(std::vector<Symbol>* seq) {
  const size_t start = pos_++;
  while (true) {
    if (AtEnd()) return Syntax("unterminated string literal", start);
    if (Peek() == '"') {
      ++pos_;
      return true;
    }
    const size_t at = pos_;
    uint32_t cp;
    if (!ParseChar(&cp)) return false;
    if (IsSurrogate(cp)) return Syntax(absl::StrFormat("U+%04X is a surrogate, not a character", cp), at);
    seq->push_back(CodepointSymbol(cp));
  }
}

// [...] or [^...] -> one lexeme. A '-' between two characters makes a range; first, last
// or after a range it is itself.
bool Parser::ParseClass(std::vector<Symbol>* seq) {
  const size_t start = pos_++;
  const bool negated = Peek() == '^';
  if (negated) ++pos_;
  Ranges ranges;
  while (true) {
    if (AtEnd()) return Syntax("unterminated character class", start);
    if (Peek() == ']') {
      ++pos_;
      break;
    }
    const size_t at = pos_;
    uint32_t lo, hi;
    if (!ParseChar(&lo)) return false;
    hi = lo;
    if (Peek() == '-' && Peek(1) != ']' && pos_ + 1 < text_.size()) {
      ++pos_;
      if (!ParseChar(&hi)) return false;
      if (hi < lo) return Syntax("character range is reversed", at);
    }
    ranges.push_back({lo, hi});
  }
  if (ranges.empty()) return Syntax("empty character class", start);
  std::string source(text_.substr(start, pos_ - start));
  auto it = class_symbols_.find(source);
  if (it == class_symbols_.end()) {
    if (negated) ranges = Complement(std::move(ranges));
    // Surrogates are clipped from the ranges; a class of nothing else matches nothing, and
    // GrammarBuilder::Build drops what depends on it.
    it = class_symbols_.emplace(std::move(source), b_.LexemeSymbol(b_.regex().CodepointRanges(ranges))).first;
  }
  seq->push_back(it->second);
  return true;
}

// One character of a literal or class: an escape or a UTF-8 code point (already validated).
bool Parser::ParseChar(uint32_t* cp) {
  const size_t at = pos_;
  if (Peek() != '\\') {
    *cp = static_cast<uint32_t>(DecodeUtf8(text_, &pos_));
    return true;
  }
  int digits = 0;
  switch (Peek(1)) {
    case 'x': digits = 2; break;
    case 'u': digits = 4; break;
    case 'U': digits = 8; break;
    case 't': *cp = '\t'; break;
    case 'r': *cp = '\r'; break;
    case 'n': *cp = '\n'; break;
    case '\\': case '"': case '[': case ']': *cp = static_cast<uint8_t>(Peek(1)); break;
    default: {
      const char c = Peek(1);
      return Syntax(c > ' ' && c < 0x7F ? absl::StrFormat("unknown escape '\\%c'", c)
                                        : std::string("unknown escape"),
                    at);
    }
  }
  pos_ += 2;
  if (digits == 0) return true;
  uint32_t value = 0;
  for (int i = 0; i < digits; ++i) {
    const char c = Peek();
    int d = IsDigit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
    if (d < 0) return Syntax(absl::StrCat("expected ", digits, " hex digits"), at);
    value = value * 16 + static_cast<uint32_t>(d);
    ++pos_;
  }
  if (value > kMaxCodepoint) return Syntax("code point above U+10FFFF", at);
  *cp = value;
  return true;
}

// Decimal digits; a value too large for any bound saturates instead of overflowing.
bool Parser::ParseInt(uint64_t* value) {
  if (!IsDigit(Peek())) return Syntax("expected a number", pos_);
  uint64_t v = 0;
  while (IsDigit(Peek())) {
    v = std::min<uint64_t>(v * 10 + static_cast<uint64_t>(Peek() - '0'), uint64_t{1} << 40);
    ++pos_;
  }
  *value = v;
  return true;
}

// * + ? {m} {m,} {m,n} applied to the item at seq[item..].
bool Parser::ParseRepetition(const std::string& rule, bool nested, size_t item, std::vector<Symbol>* seq) {
  const size_t at = pos_;
  const char c = Peek();
  ++pos_;
  if (c == '*') return Repeat(rule, item, 0, kUnbounded, at, seq);
  if (c == '+') return Repeat(rule, item, 1, kUnbounded, at, seq);
  if (c == '?') return Repeat(rule, item, 0, 1, at, seq);
  uint64_t min, max;
  SkipSpace(nested);
  if (!ParseInt(&min)) return false;
  SkipSpace(nested);
  if (Peek() == '}') {
    max = min;
  } else if (Peek() == ',') {
    ++pos_;
    SkipSpace(nested);
    max = kUnbounded;
    if (IsDigit(Peek())) {
      ParseInt(&max);
      SkipSpace(nested);
    }
    if (Peek() != '}') return Syntax("expected '}'", pos_);
  } else {
    return Syntax("expected ',' or '}'", pos_);
  }
  ++pos_;
  const uint64_t limit = opts_.grammar.regex.max_repeat;
  if (min > limit || (max != kUnbounded && max > limit)) {
    return Fail(absl::StatusCode::kResourceExhausted,
                absl::StrCat("a repetition bound of ", min > limit ? min : max,
                             " is above the limit of ", limit),
                at);
  }
  if (max < min) return Syntax(absl::StrCat("repetition {", min, ",", max, "} has max < min"), at);
  return Repeat(rule, item, min, max, at, seq);
}

bool Parser::Repeat(const std::string& rule, size_t item, uint64_t min, uint64_t max, size_t at,
                    std::vector<Symbol>* seq) {
  std::vector<Symbol> body(seq->begin() + static_cast<ptrdiff_t>(item), seq->end());
  seq->erase(seq->begin() + static_cast<ptrdiff_t>(item), seq->end());
  if (body.empty() || max == 0) return true;  // x{0}, ""*, ()+: the empty string
  Symbol x = body.size() == 1 ? body[0] : Symbol::Nonterminal(Fresh(rule));
  if (body.size() > 1) b_.AddRule(x.id(), std::move(body));
  // The copies x x ... x sit in the rule being parsed, not yet counted by the builder.
  const uint64_t copies = max == kUnbounded && min > 0 ? min - 1 : min;
  repeated_symbols_ += copies;
  if (repeated_symbols_ > opts_.grammar.max_symbols) {
    return Fail(absl::StatusCode::kResourceExhausted,
                absl::StrCat("the grammar's repetitions need more than ", opts_.grammar.max_symbols,
                             " symbols"),
                at);
  }
  seq->insert(seq->end(), copies, x);
  if (max == kUnbounded) {
    const NonterminalId r = Fresh(rule);  // r ::= r x | () (x*) or r ::= r x | x (x+)
    b_.AddRule(r, {Symbol::Nonterminal(r), x});
    b_.AddRule(r, min == 0 ? std::vector<Symbol>{} : std::vector<Symbol>{x});
    seq->push_back(Symbol::Nonterminal(r));
  } else if (max > min) {
    NonterminalId tail = Fresh(rule);  // o_1 ::= x | (); o_k ::= x o_(k-1) | ()
    b_.AddRule(tail, {x});
    b_.AddRule(tail, {});
    for (uint64_t k = 2; k <= max - min && b_.status().ok(); ++k) {
      const NonterminalId o = Fresh(rule);
      b_.AddRule(o, {x, Symbol::Nonterminal(tail)});
      b_.AddRule(o, {});
      tail = o;
    }
    seq->push_back(Symbol::Nonterminal(tail));
  }
  return BuilderOk(at);
}

}  // namespace

absl::StatusOr<Grammar> ParseGbnf(std::string_view text, const GbnfOptions& opts) {
  return Parser(text, opts).Run();
}

}  // namespace llmserve::constraint
