// JSON Schema -> Grammar.
//
// Supported (everything else that constrains is an error naming the keyword and its JSON
// pointer path; annotations such as title, description, examples, $comment, default, and
// names that are not keywords of the schema's draft, such as x-... or OpenAPI's
// "nullable", are ignored, as validators ignore them):
//   type (one or a list), enum, const, anyOf, oneOf (as anyOf only where the alternatives
//   are provably disjoint, else an error), allOf and siblings of $ref/anyOf/oneOf (by
//   merging schemas), not (of types, of required), $ref / $defs / definitions (local
//   JSON pointers and anchors, recursion), properties, required, additionalProperties
//   (default true), patternProperties (one pattern, with additionalProperties false),
//   minProperties / maxProperties (when every named property is required, or the "one
//   of these" forms), items, prefixItems (and the draft-4 array form of items with
//   additionalItems), minItems, maxItems, uniqueItems (only with maxItems <= 1),
//   minLength, maxLength, pattern, format (date-time, date, time, uuid, email, ipv4,
//   ipv6, uri, hostname, duration; other formats are errors), minimum, maximum,
//   exclusiveMinimum, exclusiveMaximum (numbers and draft-4 booleans), multipleOf (only
//   what makes an integer). There is no regex intersection: a pattern or format with
//   length bounds only where the pattern's own lengths satisfy them, two patterns or
//   formats on one string only for const/enum values (each is checked). Drafts 4 to 7
//   ignore the siblings of $ref, as those drafts say.
//
// Semantics follow llguidance's documented choices where JSON Schema leaves the output's
// shape open: properties come out in the order of `properties` (then `required` names not
// in it), additional properties after them; whitespace is compact unless
// JsonSchemaOptions::whitespace_flexible, in which case any JSON whitespace may appear
// between tokens (never before the first or after the last).
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "constraint/grammar.h"

namespace llmserve::constraint {

struct JsonSchemaOptions {
  bool whitespace_flexible = false;
  uint32_t max_schema_bytes = 4 << 20;  // refuse larger schema texts
  uint32_t max_depth = 100;             // nesting of subschemas while compiling
  GrammarLimits grammar;
};

// `schema_text` is the schema as JSON text. INVALID_ARGUMENT for malformed JSON, an
// unsupported keyword or format (naming it and its path), a schema that admits no value;
// RESOURCE_EXHAUSTED naming the bound that was hit.
absl::StatusOr<Grammar> CompileJsonSchema(std::string_view schema_text, const JsonSchemaOptions& opts);

// Any JSON value (OpenAI's json_object asks for an object: `object_only`).
absl::StatusOr<Grammar> AnyJsonGrammar(bool object_only, const JsonSchemaOptions& opts);

}  // namespace llmserve::constraint
