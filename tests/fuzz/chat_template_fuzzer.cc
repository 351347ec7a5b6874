// libFuzzer target: a chat template and its variables, as a server renders a model's
// template for a chat request. The input is the template source, a NUL byte, then the
// variables as JSON (corpus/chat_template/ shows the shape); without the NUL, or when the
// JSON does not parse, the template is rendered with a fixed two-message conversation.
// Parse and render errors (syntax, raise_exception, exceeded caps) are the expected
// answers; a crash, hang, sanitizer report or leak is a finding. The caps are the server's
// except the step and allocation budgets, lowered so that one input runs in milliseconds.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/chat/chat_template.h"
#include "nlohmann/json.hpp"
#include "tests/fuzz/fuzz_input.h"

namespace {

const nlohmann::ordered_json& DefaultVariables() {
  static const nlohmann::ordered_json vars = nlohmann::ordered_json::parse(R"({
    "messages": [{"role": "system", "content": "Be brief."},
                 {"role": "user", "content": "Hello, <b>world</b> \u00e9"}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
  return vars;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [source, variables] = llmserve::fuzz::SplitAtNul(data, size);
  llmserve::chat::TemplateLimits limits;
  limits.max_steps = 200'000;
  limits.max_alloc_bytes = 16u << 20;
  limits.max_output_bytes = 1 << 20;
  auto tmpl = llmserve::chat::ChatTemplate::Parse("fuzz", std::string(source), limits);
  if (!tmpl.ok()) return 0;
  llmserve::chat::RenderOptions options;
  options.now = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000));
  auto vars = nlohmann::ordered_json::parse(variables, nullptr, /*allow_exceptions=*/false);
  if (vars.is_discarded() || !vars.is_object()) {
    (void)tmpl->Render(DefaultVariables(), options);
  } else {
    (void)tmpl->Render(vars, options);
  }
  return 0;
}
