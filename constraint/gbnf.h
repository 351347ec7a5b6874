// GBNF (llama.cpp's grammar syntax, grammars/README.md there) -> Grammar.
//
// rule ::= alternatives; literals "..." with escapes (\n \r \t \\ \" \[ \] \xHH \uHHHH
// \UHHHHHHHH), character classes [...] and [^...], `.` (any code point), groups, | and
// the repetitions * + ? {n} {n,} {n,m}; comments from #. The start rule is `root`.
// Every terminal becomes single-code-point lexemes, so greedy lexing never changes the
// grammar's language. INVALID_ARGUMENT names the line and column of a syntax error or an
// undefined rule.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "constraint/grammar.h"

namespace llmserve::constraint {

struct GbnfOptions {
  uint32_t max_grammar_bytes = 1 << 20;
  uint32_t max_depth = 200;  // nesting of groups
  GrammarLimits grammar;
};

absl::StatusOr<Grammar> ParseGbnf(std::string_view text, const GbnfOptions& opts = {});

}  // namespace llmserve::constraint
