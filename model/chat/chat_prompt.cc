#include "model/chat/chat_prompt.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace llmserve {

absl::StatusOr<std::unique_ptr<ChatPrompter>> ChatPrompter::Create(const std::string& template_text,
                                                                   std::string source, const Tokenizer& tokenizer,
                                                                   const chat::TemplateLimits& limits) {
  absl::StatusOr<chat::ChatTemplate> tmpl = chat::ChatTemplate::Parse(source, template_text, limits);
  if (!tmpl.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("chat template (", source, "): ", tmpl.status().message()));
  }
  return std::unique_ptr<ChatPrompter>(new ChatPrompter(*std::move(tmpl), std::move(source), tokenizer));
}

absl::StatusOr<std::string> ChatPrompter::Render(const ChatConversation& c) const {
  nlohmann::ordered_json vars;
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  for (const ChatTurn& t : c.messages) messages.push_back({{"role", t.role}, {"content", t.content}});
  vars["messages"] = std::move(messages);
  vars["add_generation_prompt"] = c.add_generation_prompt;
  vars["bos_token"] = std::string(tokenizer_.Piece(tokenizer_.bos_id()));
  vars["eos_token"] = std::string(tokenizer_.Piece(tokenizer_.eos_id()));
  if (!c.tools_json.empty()) {
    nlohmann::ordered_json tools = nlohmann::ordered_json::parse(c.tools_json, nullptr, /*allow_exceptions=*/false);
    if (tools.is_discarded() || !tools.is_array()) {
      return absl::InvalidArgumentError("tools_json must be a JSON array of tool definitions");
    }
    vars["tools"] = std::move(tools);
  }
  absl::StatusOr<std::string> text = template_.Render(vars);
  if (!text.ok()) {
    return absl::Status(text.status().code(), absl::StrCat("chat template: ", text.status().message()));
  }
  return text;
}

absl::StatusOr<std::vector<int32_t>> ChatPrompter::Encode(const std::string& rendered) const {
  EncodeOptions opts;
  opts.parse_special = true;
  absl::StatusOr<std::vector<int32_t>> ids = tokenizer_.Encode(rendered, opts);
  if (!ids.ok()) return ids.status();
  const int32_t bos = tokenizer_.bos_id();
  if (tokenizer_.add_bos_default() && bos >= 0 && (ids->empty() || ids->front() != bos)) ids->insert(ids->begin(), bos);
  return ids;
}

}  // namespace llmserve
