// HuggingFace chat templates rendered as transformers' apply_chat_template renders them
// (Python jinja2 3.1, ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
// loopcontrols, tojson keeping non-ASCII, raise_exception, strftime_now), by our own
// Jinja engine (model/chat/jinja_*). Templates are untrusted: TemplateLimits caps every
// resource a render can use.
//
//   auto tpl = ChatTemplate::Parse("qwen2", source, TemplateLimits{});
//   auto prompt = tpl->Render(nlohmann::ordered_json{{"messages", msgs},
//                                                    {"add_generation_prompt", true}});
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "model/chat/chat_template_options.h"
#include "nlohmann/json_fwd.hpp"

namespace llmserve::chat {

namespace jinja {
struct TemplateAst;
}  // namespace jinja

// A parsed chat template. Immutable; Render is const and thread-safe.
class ChatTemplate {
 public:
  // Parses `source`; syntax errors read "template 'NAME' line L col C: ...".
  static absl::StatusOr<ChatTemplate> Parse(std::string name, std::string source,
                                            const TemplateLimits& limits = TemplateLimits());

  // Renders with `variables` (an object: messages, add_generation_prompt, bos_token,
  // eos_token, tools, ...). ordered_json keeps key order, which tojson output shows.
  // Runtime errors name the template, line and column; raise_exception(msg) yields
  // INVALID_ARGUMENT containing msg; exceeded caps yield RESOURCE_EXHAUSTED. Thread-safe.
  absl::StatusOr<std::string> Render(const nlohmann::ordered_json& variables,
                                     const RenderOptions& options = RenderOptions()) const;
  // Same, from nlohmann::json (whose objects are key-sorted).
  absl::StatusOr<std::string> Render(const nlohmann::json& variables,
                                     const RenderOptions& options = RenderOptions()) const;
  // Same, from JSON text (parsed keeping key order).
  absl::StatusOr<std::string> RenderJsonText(std::string_view variables_json,
                                             const RenderOptions& options = RenderOptions()) const;

  // The name given to Parse.
  const std::string& name() const { return name_; }
  // The limits given to Parse.
  const TemplateLimits& limits() const { return limits_; }

 private:
  ChatTemplate() = default;
  template <typename Json>
  absl::StatusOr<std::string> RenderAny(const Json& variables, const RenderOptions& options) const;

  std::string name_;
  TemplateLimits limits_;
  std::shared_ptr<const jinja::TemplateAst> ast_;
};

}  // namespace llmserve::chat
