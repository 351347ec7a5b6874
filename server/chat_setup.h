// The served model's chat template: from --chat-template FILE, else the model's own
// (tokenizer_config.json / chat_template.jinja, or GGUF tokenizer.chat_template).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model/chat/chat_prompt.h"
#include "model/tokenizer/tokenizer.h"

namespace llmserve {

struct ChatSetup {
  std::unique_ptr<ChatPrompter> prompter;  // null: no template (chat inputs fail)
  std::string source;                      // "file PATH", "gguf", "tokenizer_config.json" or ""
  std::string note;                        // for the startup log line ("none", or why the model's was not usable)
};

// `template_path` (--chat-template; "" for the model's own) and the format of the model
// file ("gguf", "hf", ...). A given file that is missing or does not parse is an error; a
// model's own template that does not parse is served without chat and said in `note`.
absl::StatusOr<ChatSetup> SetUpChat(const std::string& template_path, const std::string& model_format,
                                    const Tokenizer& tokenizer);

}  // namespace llmserve
