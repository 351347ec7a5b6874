// CompileJsonSchema / AnyJsonGrammar: parse the schema text (the only place JSON parse
// exceptions are caught), build the intermediate form (json_schema_build.cc, $refs in
// json_schema_refs.cc, merges in json_schema_merge.cc) and generate the grammar
// (json_schema_gen.cc, json_schema_objects.cc, json_schema_strings.cc).
#include "constraint/json_schema.h"

#include "absl/strings/str_cat.h"
#include "constraint/json_schema_gen.h"
#include "constraint/json_schema_ir.h"

namespace llmserve::constraint {

absl::StatusOr<Grammar> CompileJsonSchema(std::string_view schema_text, const JsonSchemaOptions& opts) {
  using json_schema::Json;
  if (schema_text.size() > opts.max_schema_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("the JSON Schema is ", schema_text.size(),
                                                     " bytes, above the limit of ", opts.max_schema_bytes));
  }
  Json root;
  try {
    root = Json::parse(schema_text.begin(), schema_text.end());
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("the JSON Schema is not valid JSON: ", e.what()));
  }
  json_schema::Context ctx(&root, opts.max_depth);
  // The root is compiled as the definition "#", so that "$ref": "#" finds it.
  auto top = ctx.Resolve("#", 0);
  if (!top.ok()) return top.status();
  if (auto s = ctx.CompilePending(); !s.ok()) return s;
  json_schema::Generator gen(ctx, opts);
  auto start = gen.Gen(*top, /*first=*/true);
  if (!start.ok()) return start.status();
  return gen.Finish(*start);
}

absl::StatusOr<Grammar> AnyJsonGrammar(bool object_only, const JsonSchemaOptions& opts) {
  return CompileJsonSchema(object_only ? R"({"type": "object"})" : "true", opts);
}

}  // namespace llmserve::constraint
