// openai_constraint: the structured-output fields of an OpenAI-compatible request body as
// the GenerationInput's constraint (constraint/constraint_spec.h), named as the caller
// sent them. One constraint per request, from any of the dialects clients speak:
//
//   OpenAI     response_format {"type": "text"}                        (none)
//                              {"type": "json_object"}                 any JSON object
//                              {"type": "json_schema", "json_schema": {"name", "schema", "strict",
//                                                                       "whitespace"}}
//   vLLM       structured_outputs {"json" | "regex" | "choice" | "grammar" | "json_object": true,
//                                  "whitespace"}
//              guided_json, guided_regex, guided_choice, guided_grammar  (vLLM's older fields)
//   llama.cpp  json_schema (a schema object), grammar (GBNF)
//
// "whitespace": "flexible" (our extension; "compact" is the default) lets JSON output carry
// any JSON whitespace between tokens. A schema object is passed on as the exact text the
// client sent (RawJsonValue), so that its property order, which orders the output's
// properties, survives: the body's parsed form (nlohmann::json) sorts object keys.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "server/generation_input.h"

namespace llmserve {

// Fills out->constraint and out->constraint_field from `body` (the parsed form of
// `raw_body`). INVALID_ARGUMENT naming the field: a wrong JSON type, an unknown
// response_format type, an unsupported option, or two fields that each constrain the
// output (naming both).
absl::Status ParseOpenAiConstraint(const nlohmann::json& body, std::string_view raw_body, GenerationInput* out);

// The exact text of the value at `path` (object keys from the top) in `json_text`, which
// must be valid JSON; the last of duplicate keys, as nlohmann's parser keeps. nullopt when
// the path is absent or the text is not what the scan expects.
std::optional<std::string_view> RawJsonValue(std::string_view json_text, std::span<const std::string_view> path);

}  // namespace llmserve
