// Strings: a JSON string value is one lexeme, quotes included.
//
// The body is built at the code-point level and lowered with RegexEncoding::kJsonString,
// so every way JSON may write a character (raw, \" \\ \n ..., \u00XX for controls) is
// accepted and the constraint applies to the decoded value:
//  - const/enum: a trie of the values (shared prefixes stay shared, so a 100,000-value
//    enum is one compact alternation), after dropping the values that fail the other
//    constraints (lengths, patterns, formats are checked on each value);
//  - minLength/maxLength alone: a counted repetition of one JSON character (a maxLength
//    above the regex pool's repetition bound is lowered to it: longer valid strings are
//    refused, no invalid one accepted);
//  - one pattern (matched anywhere unless anchored) or one format; together with length
//    bounds only when the pattern's own lengths already satisfy them (we have no regex
//    intersection), two patterns/formats never: those are errors naming the keyword.
// Object keys: a named property is the one-value trie; keys of additional properties are
// the complement of the named ones, built from the same trie (any string that leaves it,
// or stops at a node that does not end a name).
#include <algorithm>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "constraint/json_formats.h"
#include "constraint/json_schema_gen.h"

namespace llmserve::constraint::json_schema {
namespace {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;
// A trie deeper than this (a name or value this long) is refused: the code-point
// expressions are recursive.
constexpr size_t kMaxTrieDepth = 2'000;

std::vector<uint32_t> DecodeUtf8(const std::string& s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const uint8_t c = static_cast<uint8_t>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += len;
  }
  return out;
}

CharRegex Class(std::vector<std::pair<uint32_t, uint32_t>> ranges) {
  CharRegex r;
  r.kind = CharRegex::Kind::kClass;
  r.ranges = std::move(ranges);
  return r;
}

struct Trie {
  struct TrieNode {
    bool terminal = false;
    std::map<uint32_t, uint32_t> children;
  };
  std::vector<TrieNode> nodes{TrieNode{}};
  size_t depth = 0;

  void Add(const std::vector<uint32_t>& cps) {
    uint32_t n = 0;
    for (uint32_t cp : cps) {
      auto it = nodes[n].children.find(cp);
      if (it == nodes[n].children.end()) {
        nodes.emplace_back();
        it = nodes[n].children.emplace(cp, static_cast<uint32_t>(nodes.size() - 1)).first;
      }
      n = it->second;
    }
    nodes[n].terminal = true;
    depth = std::max(depth, cps.size());
  }

  // The code points no value continues with at node n.
  std::vector<std::pair<uint32_t, uint32_t>> Gaps(uint32_t n) const {
    std::vector<std::pair<uint32_t, uint32_t>> gaps;
    uint32_t next = 0;
    for (const auto& [cp, _] : nodes[n].children) {
      if (cp > next) gaps.push_back({next, cp - 1});
      next = cp + 1;
    }
    if (next <= kMaxCodepoint) gaps.push_back({next, kMaxCodepoint});
    return gaps;
  }
};

// The tries as byte regexes (kJsonString), built straight in the pool, node by node:
//  - Values(n), the values from node n: a run of single-child non-terminal nodes as one
//    concatenation of their code points, then the alternatives (empty if n ends a value,
//    and each child's code point followed by Values(child));
//  - Others(n), the strings that are not values, continuing from n: empty if n does not
//    end a value, a code point no value continues with followed by any string, and each
//    child's code point followed by Others(child).
// Pool calls are made children first, left to right (as LowerRegex would for the same
// expression as a CharRegex). Both depend only on the subtree at n, so they are
// remembered per distinct subtree (TrieMemo, shared by all the tries of one generator),
// as is each lowered code point class: building one again would only find the nodes
// already interned, so the remembered id is the one the pool would return (the caller
// checks the pool's status at the end).
class TrieLowerer {
 public:
  TrieLowerer(const Trie& trie, RegexPool& pool, TrieMemo& memo) : trie_(trie), pool_(pool), memo_(memo) {
    // Subtree ids, children first (a child is added to the trie after its parent).
    shape_.resize(trie.nodes.size());
    std::vector<uint32_t> key;
    for (size_t n = trie.nodes.size(); n-- > 0;) {
      key.clear();
      key.push_back(trie.nodes[n].terminal ? 1 : 0);
      for (auto [cp, child] : trie.nodes[n].children) {
        key.push_back(cp);
        key.push_back(shape_[child]);
      }
      shape_[n] = memo_.shapes.try_emplace(key, static_cast<uint32_t>(memo_.shapes.size())).first->second;
    }
  }

  RegexId Values(uint32_t n) {
    if (auto it = memo_.values.find(shape_[n]); it != memo_.values.end()) return it->second;
    const uint32_t start = n;
    std::vector<RegexId> chain;
    while (!trie_.nodes[n].terminal && trie_.nodes[n].children.size() == 1) {
      auto [cp, child] = *trie_.nodes[n].children.begin();
      chain.push_back(Single(cp));
      n = child;
    }
    std::vector<RegexId> alts;
    if (trie_.nodes[n].terminal) alts.push_back(pool_.Empty());
    for (auto [cp, child] : trie_.nodes[n].children) {
      const RegexId head = Single(cp);
      const RegexId rest = Values(child);
      alts.push_back(pool_.Concat({head, rest}));
    }
    chain.push_back(alts.size() == 1 ? alts[0] : pool_.Alt(std::move(alts)));
    const RegexId id = chain.size() == 1 ? chain[0] : pool_.Concat(std::move(chain));
    memo_.values.emplace(shape_[start], id);
    return id;
  }

  RegexId Others(uint32_t n) {
    if (auto it = memo_.others.find(shape_[n]); it != memo_.others.end()) return it->second;
    std::vector<RegexId> alts;
    if (!trie_.nodes[n].terminal) alts.push_back(pool_.Empty());
    std::vector<std::pair<uint32_t, uint32_t>> gaps = trie_.Gaps(n);
    if (!gaps.empty()) {
      const RegexId head = LowerClass(std::move(gaps));
      const RegexId rest = AnyString();
      alts.push_back(pool_.Concat({head, rest}));
    }
    for (auto [cp, child] : trie_.nodes[n].children) {
      const RegexId head = Single(cp);
      const RegexId rest = Others(child);
      alts.push_back(pool_.Concat({head, rest}));
    }
    RegexId id = pool_.Nothing();
    if (!alts.empty()) id = alts.size() == 1 ? alts[0] : pool_.Alt(std::move(alts));
    memo_.others.emplace(shape_[n], id);
    return id;
  }

 private:
  RegexId Single(uint32_t cp) {
    if (cp < memo_.ascii.size()) {
      if (!memo_.ascii[cp]) memo_.ascii[cp] = LowerClass({{cp, cp}});
      return *memo_.ascii[cp];
    }
    return LowerClass({{cp, cp}});
  }

  RegexId LowerClass(std::vector<std::pair<uint32_t, uint32_t>> ranges) {
    if (auto it = memo_.classes.find(ranges); it != memo_.classes.end()) return it->second;
    auto id = LowerRegex(Class(ranges), RegexEncoding::kJsonString, pool_);
    if (!id.ok()) return pool_.Nothing();  // the pool's bound: the caller returns its status
    memo_.classes.emplace(std::move(ranges), *id);
    return *id;
  }

  // Any string (the class of every code point, repeated).
  RegexId AnyString() {
    if (!memo_.any_string) {
      const RegexId c = LowerClass({{0, kMaxCodepoint}});
      memo_.any_string = pool_.Repeat(c, 0, RegexPool::kUnbounded);
    }
    return *memo_.any_string;
  }

  const Trie& trie_;
  RegexPool& pool_;
  TrieMemo& memo_;
  std::vector<uint32_t> shape_;  // trie node -> its subtree's id in memo_.shapes
};

// Lengths (in code points) of the strings an expression matches: [lo, hi], hi
// UINT64_MAX for unbounded; lo > hi when it matches nothing.
struct Lengths {
  uint64_t lo, hi;
};

uint64_t SatAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
uint64_t SatMul(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

Lengths LengthRange(const CharRegex& r, int depth) {
  if (depth > 1000) return {0, UINT64_MAX};
  switch (r.kind) {
    case CharRegex::Kind::kNothing:
      return {1, 0};
    case CharRegex::Kind::kEmpty:
      return {0, 0};
    case CharRegex::Kind::kClass:
      return r.ranges.empty() ? Lengths{1, 0} : Lengths{1, 1};
    case CharRegex::Kind::kConcat: {
      Lengths l{0, 0};
      for (const CharRegex& c : r.children) {
        Lengths x = LengthRange(c, depth + 1);
        if (x.lo > x.hi) return x;
        l = {SatAdd(l.lo, x.lo), SatAdd(l.hi, x.hi)};
      }
      return l;
    }
    case CharRegex::Kind::kAlt: {
      Lengths l{UINT64_MAX, 0};
      for (const CharRegex& c : r.children) {
        Lengths x = LengthRange(c, depth + 1);
        if (x.lo > x.hi) continue;
        l = {std::min(l.lo, x.lo), std::max(l.hi, x.hi)};
      }
      return l.lo > l.hi ? Lengths{1, 0} : l;
    }
    case CharRegex::Kind::kRepeat: {
      Lengths x = r.children.empty() ? Lengths{0, 0} : LengthRange(r.children[0], depth + 1);
      if (x.lo > x.hi) return r.min == 0 ? Lengths{0, 0} : x;
      const uint64_t hi = r.max == RegexPool::kUnbounded ? (x.hi == 0 ? 0 : UINT64_MAX) : SatMul(x.hi, r.max);
      return {SatMul(x.lo, r.min), hi};
    }
  }
  return {0, UINT64_MAX};
}

uint64_t CodepointCount(const std::string& s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<uint8_t>(c) & 0xC0) != 0x80; });
}

std::string RegexSource(const StringRegex& r) {
  return r.is_format ? std::string(JsonFormatPattern(r.source)) : r.source;
}

absl::Status RegexError(const StringRegex& r, const absl::Status& s) {
  return absl::InvalidArgumentError(absl::StrCat("unsupported ", r.is_format ? "format \"" + r.source + "\"" : "\"pattern\"",
                                                 " at ", PathText(r.path), ": ", s.message()));
}

}  // namespace

RegexId Generator::JsonChar() {
  if (!json_char_) {
    auto r = LowerRegex(Class({{0, kMaxCodepoint}}), RegexEncoding::kJsonString, pool());
    json_char_ = r.ok() ? *r : pool().Nothing();
  }
  return *json_char_;
}

RegexId Generator::Quoted(RegexId body) {
  RegexId quote = pool().Byte('"');
  return pool().Concat({quote, body, quote});
}

absl::StatusOr<RegexId> Generator::StringOneOf(const std::vector<std::string>& values) {
  if (values.empty()) return pool().Nothing();
  // The same values again: the pool would intern nothing new and return the same id.
  if (auto it = one_of_cache_.find(values); it != one_of_cache_.end()) {
    if (!pool().status().ok()) return pool().status();
    return it->second;
  }
  Trie trie;
  for (const std::string& v : values) trie.Add(DecodeUtf8(v));
  if (trie.depth > kMaxTrieDepth) {
    return absl::ResourceExhaustedError(absl::StrCat("a string value or property name is longer than ",
                                                     kMaxTrieDepth, " characters"));
  }
  const RegexId body = TrieLowerer(trie, pool(), trie_memo_).Values(0);
  if (!pool().status().ok()) return pool().status();
  const RegexId quoted = Quoted(body);
  one_of_cache_.emplace(values, quoted);
  return quoted;
}

absl::StatusOr<RegexId> Generator::StringNoneOf(const std::vector<std::string>& values) {
  if (values.empty()) return Quoted(pool().Star(JsonChar()));
  if (auto it = none_of_cache_.find(values); it != none_of_cache_.end()) {
    if (!pool().status().ok()) return pool().status();
    return it->second;
  }
  Trie trie;
  for (const std::string& v : values) trie.Add(DecodeUtf8(v));
  if (trie.depth > kMaxTrieDepth) {
    return absl::ResourceExhaustedError(absl::StrCat("a property name is longer than ", kMaxTrieDepth, " characters"));
  }
  const RegexId body = TrieLowerer(trie, pool(), trie_memo_).Others(0);
  if (!pool().status().ok()) return pool().status();
  const RegexId quoted = Quoted(body);
  none_of_cache_.emplace(values, quoted);
  return quoted;
}

absl::StatusOr<RegexId> Generator::PatternBody(const StringRegex& r) {
  auto key = std::make_pair(r.source, r.is_format);
  if (auto it = pattern_cache_.find(key); it != pattern_cache_.end()) return it->second;
  absl::StatusOr<RegexId> body;
  if (r.is_format) {
    body = JsonFormatRegex(r.source, pool());
  } else {
    RegexParseOptions po;
    po.search = true;
    body = CompileRegex(r.source, po, RegexEncoding::kJsonString, pool());
  }
  if (!body.ok()) {
    if (body.status().code() == absl::StatusCode::kResourceExhausted) return body.status();
    return RegexError(r, body.status());
  }
  pattern_cache_.emplace(key, *body);
  return *body;
}

absl::StatusOr<RegexId> Generator::StringToken(const StringSchema& s) {
  if (s.max_length && s.min_length > *s.max_length) {
    if (unsat_reason_.empty()) unsat_reason_ = "minLength > maxLength";
    return pool().Nothing();
  }
  const uint32_t max_repeat = pool().limits().max_repeat;
  if (s.literals) {
    std::vector<std::string> kept;
    for (const std::string& v : *s.literals) {
      const uint64_t n = CodepointCount(v);
      bool ok = n >= s.min_length && (!s.max_length || n <= *s.max_length);
      for (const StringRegex& r : s.regexes) {
        if (!ok) break;
        const std::string source = RegexSource(r);
        if (r.is_format && source.empty()) {
          return RegexError(r, absl::InvalidArgumentError("this format is not supported"));
        }
        // Formats are whole-string patterns; `pattern` is a search.
        auto m = ctx_.PatternMatches(r.is_format ? absl::StrCat("^(?:", source, ")$") : source, v, r.path);
        if (!m.ok()) return m.status();
        ok = *m;
      }
      if (ok) kept.push_back(v);
    }
    if (kept.empty() && unsat_reason_.empty()) unsat_reason_ = "no value of const/enum satisfies the other keywords";
    return StringOneOf(kept);
  }
  if (s.regexes.empty()) {
    if (s.min_length > max_repeat) {
      return absl::ResourceExhaustedError(absl::StrCat("minLength ", s.min_length, " at ", PathText(s.length_path),
                                                       " is above the limit of ", max_repeat));
    }
    uint32_t max = RegexPool::kUnbounded;
    if (s.max_length) max = static_cast<uint32_t>(std::min<uint64_t>(*s.max_length, max_repeat));
    return Quoted(pool().Repeat(JsonChar(), static_cast<uint32_t>(s.min_length), max));
  }
  if (s.regexes.size() > 1) {
    const StringRegex& r = s.regexes[1];
    return absl::InvalidArgumentError(absl::StrCat(
        "unsupported ", r.is_format ? "keyword \"format\"" : "keyword \"pattern\"", " at ", PathText(r.path),
        ": a string constrained by several patterns/formats at once (\"", s.regexes[0].source, "\" and \"",
        r.source, "\")"));
  }
  const StringRegex& r = s.regexes[0];
  if (s.min_length > 0 || s.max_length) {
    // Only when the pattern's own lengths satisfy the bounds.
    RegexParseOptions po;
    po.search = !r.is_format;
    auto parsed = ParseRegex(RegexSource(r), po);
    if (!parsed.ok()) return RegexError(r, parsed.status());
    const Lengths len = LengthRange(*parsed, 0);
    const bool redundant = len.lo > len.hi || (len.lo >= s.min_length && (!s.max_length || len.hi <= *s.max_length));
    if (!redundant) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unsupported keyword \"", s.max_length ? "maxLength" : "minLength", "\" at ", PathText(s.length_path),
          " together with ", r.is_format ? "format \"" + r.source + "\"" : "a pattern",
          " (a length bound on a pattern is not supported)"));
    }
  }
  auto body = PatternBody(r);
  if (!body.ok()) return body.status();
  return Quoted(*body);
}

}  // namespace llmserve::constraint::json_schema
