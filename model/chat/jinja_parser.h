// Jinja parser: tokens -> AST, following jinja2 3.1's grammar and operator precedence.
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "model/chat/jinja_ast.h"

namespace llmserve::chat::jinja {

// Parses `source`; `max_depth` caps block nesting and expression height. Errors read
// "line L col C: message" (the caller prefixes the template name).
absl::StatusOr<std::unique_ptr<TemplateAst>> ParseTemplate(std::string_view source, int max_depth);

}  // namespace llmserve::chat::jinja
