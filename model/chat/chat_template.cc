#include "model/chat/chat_template.h"

#include <exception>

#include "absl/strings/str_cat.h"
#include "model/chat/jinja_filters.h"
#include "model/chat/jinja_interp.h"
#include "model/chat/jinja_json.h"
#include "model/chat/jinja_parser.h"
#include "model/chat/jinja_pystr.h"
#include "nlohmann/json.hpp"

namespace llmserve::chat {
namespace {

absl::Status Named(const std::string& name, const absl::Status& st) {
  const bool located = st.message().rfind("line ", 0) == 0;
  return absl::Status(st.code(), absl::StrCat("template '", name, "'", located ? " " : ": ", st.message()));
}

}  // namespace

absl::Status TemplateLimits::Validate() const {
  if (max_source_bytes == 0 || max_output_bytes == 0 || max_steps == 0 || max_collection_size == 0 ||
      max_string_bytes == 0 || max_alloc_bytes == 0) {
    return absl::InvalidArgumentError("TemplateLimits: every cap must be positive");
  }
  if (max_nesting_depth < 1 || max_nesting_depth > 10000) {
    return absl::InvalidArgumentError("TemplateLimits: max_nesting_depth must be in [1, 10000]");
  }
  if (max_call_depth < 1 || max_eval_depth < 8 || max_eval_depth > 100000) {
    return absl::InvalidArgumentError("TemplateLimits: max_call_depth >= 1, max_eval_depth in [8, 100000]");
  }
  if (max_value_depth < 2 || max_value_depth > 1000) {
    return absl::InvalidArgumentError("TemplateLimits: max_value_depth must be in [2, 1000]");
  }
  return absl::OkStatus();
}

absl::StatusOr<ChatTemplate> ChatTemplate::Parse(std::string name, std::string source,
                                                 const TemplateLimits& limits) {
  if (auto st = limits.Validate(); !st.ok()) return st;
  if (source.size() > limits.max_source_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("template '", name, "': source of ", source.size(),
                                                     " bytes exceeds max_source_bytes (", limits.max_source_bytes, ")"));
  }
  if (!jinja::ValidUtf8(source)) {
    return absl::InvalidArgumentError(absl::StrCat("template '", name, "': source is not valid UTF-8"));
  }
  auto ast = jinja::ParseTemplate(source, limits.max_nesting_depth);
  if (!ast.ok()) return Named(name, ast.status());
  ChatTemplate t;
  t.name_ = std::move(name);
  t.limits_ = limits;
  t.ast_ = std::move(*ast);
  return t;
}

template <typename Json>
absl::StatusOr<std::string> ChatTemplate::RenderAny(const Json& variables, const RenderOptions& options) const {
  if (!variables.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("template '", name_, "': variables must be a JSON object"));
  }
  auto builtins = std::make_shared<jinja::Frame>();
  jinja::AddGlobals(builtins.get());
  auto vars = std::make_shared<jinja::Frame>();
  vars->parent = builtins;
  try {
    for (auto it = variables.begin(); it != variables.end(); ++it) {
      auto v = jinja::FromJson(it.value(), limits_.max_value_depth - 1, limits_.max_collection_size);
      if (!v.ok()) return Named(name_, v.status());
      vars->vars[it.key()] = std::move(*v);
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("template '", name_, "': bad variables: ", e.what()));
  }
  std::string out;
  absl::Status st;
  try {  // the engine does not throw; this keeps a bug (or bad_alloc) from crossing the edge
    jinja::Interp interp(limits_, options);
    st = interp.Run(*ast_, std::move(vars), &out);
  } catch (const std::exception& e) {
    st = absl::InternalError(absl::StrCat("chat template engine failure: ", e.what()));
  }
  if (!st.ok()) return Named(name_, st);
  return out;
}

absl::StatusOr<std::string> ChatTemplate::Render(const nlohmann::ordered_json& variables,
                                                 const RenderOptions& options) const {
  return RenderAny(variables, options);
}

absl::StatusOr<std::string> ChatTemplate::Render(const nlohmann::json& variables,
                                                 const RenderOptions& options) const {
  return RenderAny(variables, options);
}

absl::StatusOr<std::string> ChatTemplate::RenderJsonText(std::string_view variables_json,
                                                         const RenderOptions& options) const {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(variables_json);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("template '", name_, "': variables are not JSON: ", e.what()));
  }
  return RenderAny(j, options);
}

}  // namespace llmserve::chat
