// Regular-expression syntax -> RegexPool expressions.
//
// The syntax is the common subset of ECMA-262 (JSON Schema's `pattern`) and Python's `re`
// (vLLM's `regex`): literals and escapes (\n \t \r \f \v \0 \xHH \uHHHH \u{H..} \/ and
// escaped metacharacters), `.`, classes [...] with ranges and negation, \d \w \s \D \W \S
// (ASCII meanings, as in ECMA-262 without the u flag for \d and \w; \s is ECMA's whitespace
// set), groups (...), (?:...), named groups (?<name>...) / (?P<name>...), alternation,
// quantifiers * + ? {n} {n,} {n,m} and their lazy forms (laziness does not change the
// language), anchors ^ and $ at the ends of the pattern (or of a top-level alternative).
// Lookaround, backreferences, \b \B, and anchors in the middle are refused with
// INVALID_ARGUMENT naming the construct and its offset.
//
// Details of the subset (regex_parser.cc):
//  - `.` is any code point but ECMA-262's line terminators \n \r U+2028 U+2029; \d \w
//    are ASCII; \s is ECMA-262's WhiteSpace and LineTerminator set.
//  - An anchor may also lead (^) or end ($) a group that itself leads or ends the pattern
//    or a top-level alternative: (^a|b)c. It may not be repeated.
//  - \uHHHH\uHHHH surrogate pairs are one code point (as with ECMA-262's u flag); a lone
//    surrogate matches nothing. \u{H...} is up to 10FFFF.
//  - Also refused, where ECMA-262 and Python read a pattern differently or one refuses
//    it: inline flags (?i), a class starting with ] ([] []a]), {,n} and {,}, escapes of
//    unknown ASCII letters (\a \q ...), \cX, octal \0N, \p{..}, \A \Z, a class escape as
//    a range end ([\w-z]).
//  - A `{` that starts no quantifier is a literal: x{ x{a} x{1,2 .
//  - Bounds: a pattern above max_pattern_bytes is INVALID_ARGUMENT; groups nested deeper
//    than max_depth are RESOURCE_EXHAUSTED; a counted repetition above the pool's
//    max_repeat (or its node bound) is the pool's RESOURCE_EXHAUSTED from LowerRegex.
//
// The parser builds a code-point-level expression; Lower() turns it into bytes for where
// it is used:
//  - kUtf8: the text itself (a regex constraint on the output);
//  - kJsonString: the inside of a JSON string literal (a schema's `pattern`, `format`):
//    each code point may appear as JSON writes it — `"` as \", `\` as \\, controls as
//    \n \t \r \b \f or \u00XX, `/` also as \/ — so the regex constrains the decoded value.
//    \uXXXX is accepted for the controls U+0000..U+001F only (hex in either case): other
//    code points appear as their UTF-8 bytes (no \u00e9, no UTF-16 surrogate pairs).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "constraint/regex.h"

namespace llmserve::constraint {

// A code-point-level regular expression (the parser's output).
struct CharRegex {
  enum class Kind : uint8_t { kNothing, kEmpty, kClass, kConcat, kAlt, kRepeat };
  Kind kind = Kind::kEmpty;
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // kClass: inclusive code point ranges
  std::vector<CharRegex> children;                    // kConcat, kAlt, kRepeat (one)
  uint32_t min = 0, max = 0;                          // kRepeat; max == RegexPool::kUnbounded
};

struct RegexParseOptions {
  // JSON Schema's `pattern` matches anywhere in the string unless anchored (ECMA-262
  // search): unanchored ends get `.*`. A regex constraint matches the whole output.
  bool search = false;
  uint32_t max_pattern_bytes = 100'000;
  uint32_t max_depth = 200;  // nesting of groups
};

absl::StatusOr<CharRegex> ParseRegex(std::string_view pattern, const RegexParseOptions& opts = {});

enum class RegexEncoding { kUtf8, kJsonString };
// RESOURCE_EXHAUSTED if the pool's bounds are hit.
absl::StatusOr<RegexId> LowerRegex(const CharRegex& re, RegexEncoding encoding, RegexPool& pool);

// Parse + lower in one step.
absl::StatusOr<RegexId> CompileRegex(std::string_view pattern, const RegexParseOptions& opts,
                                     RegexEncoding encoding, RegexPool& pool);

// Reference matcher for tests and tools: does `re` match all of `bytes`? (Simulates the
// expression directly by memoized end-position sets: polynomial, no backtracking blow-up,
// but slow and O(size^2) memory per node; no DFA.) False for an id outside the pool.
bool RegexFullMatch(const RegexPool& pool, RegexId re, std::string_view bytes);

}  // namespace llmserve::constraint
