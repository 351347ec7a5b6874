// ChatPrompter: a conversation -> the prompt ids a model expects, through the model's chat
// template (chat_template.h). The rendered text is tokenized with special tokens
// recognised (the template writes them) and gets the tokenizer's BOS only when the
// template did not already write one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/chat/chat_template.h"
#include "model/tokenizer/tokenizer.h"

namespace llmserve {

// One turn of a conversation.
struct ChatTurn {
  std::string role;     // "system", "user", "assistant", "tool", ...
  std::string content;
};

// What a chat template is given.
struct ChatConversation {
  std::vector<ChatTurn> messages;
  bool add_generation_prompt = true;  // end with the assistant turn's opening
  std::string tools_json;             // a JSON array of tool definitions ("" : none)
};

// Immutable; Thread-safe.
class ChatPrompter {
 public:
  // Parses `template_text` (named by `source` in messages: "tokenizer_config.json",
  // "gguf", "file PATH"). `tokenizer` must outlive the prompter; its BOS and EOS pieces are
  // the template's bos_token and eos_token. INVALID_ARGUMENT for a template that does not parse.
  static absl::StatusOr<std::unique_ptr<ChatPrompter>> Create(const std::string& template_text, std::string source,
                                                              const Tokenizer& tokenizer,
                                                              const chat::TemplateLimits& limits = {});

  // The conversation rendered by the template. INVALID_ARGUMENT for a malformed tools_json or
  // a template that raises (e.g. "System role not supported"); RESOURCE_EXHAUSTED past a cap.
  absl::StatusOr<std::string> Render(const ChatConversation& conversation) const;
  // The prompt ids of rendered text (see the header comment).
  absl::StatusOr<std::vector<int32_t>> Encode(const std::string& rendered) const;

  // Where the template came from.
  const std::string& source() const { return source_; }

 private:
  ChatPrompter(chat::ChatTemplate tmpl, std::string source, const Tokenizer& tokenizer)
      : template_(std::move(tmpl)), source_(std::move(source)), tokenizer_(tokenizer) {}

  chat::ChatTemplate template_;
  std::string source_;
  const Tokenizer& tokenizer_;
};

}  // namespace llmserve
