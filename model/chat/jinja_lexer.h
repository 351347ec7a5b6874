// Jinja lexer: template source -> tokens, with jinja2's whitespace rules as HuggingFace
// configures them (trim_blocks, lstrip_blocks, `-`/`+` markers, one trailing newline
// dropped, raw blocks, comments).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace llmserve::chat::jinja {

// Token kinds.
enum class Tok {
  kData,        // template text, already whitespace-trimmed
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,        // identifier or keyword
  kString,      // string literal (value unescaped)
  kInt,         // integer literal (digits, '_' removed)
  kFloat,       // float literal
  kOp,          // operator or punctuation
  kEof,
};

// One token with its 1-based source position.
struct Token {
  Tok kind;
  std::string value;
  int line = 1;
  int col = 1;
};

// Tokenizes `source`; errors are "line L col C: message" (without the template name).
absl::StatusOr<std::vector<Token>> Lex(std::string_view source);

}  // namespace llmserve::chat::jinja
