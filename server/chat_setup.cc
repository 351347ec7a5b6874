#include "server/chat_setup.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace llmserve {

absl::StatusOr<ChatSetup> SetUpChat(const std::string& template_path, const std::string& model_format,
                                    const Tokenizer& tokenizer) {
  ChatSetup out;
  if (!template_path.empty()) {
    std::ifstream in(template_path, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read --chat-template ", template_path));
    std::ostringstream text;
    text << in.rdbuf();
    out.source = absl::StrCat("file ", template_path);
    auto p = ChatPrompter::Create(text.str(), out.source, tokenizer);
    if (!p.ok()) return p.status();
    out.prompter = *std::move(p);
    out.note = out.source;
    return out;
  }
  const std::string& own = tokenizer.spec().chat_template;
  if (own.empty()) {
    out.note = "none (chat inputs need --chat-template FILE)";
    return out;
  }
  const std::string source = model_format == "gguf" ? "gguf" : "tokenizer_config.json";
  auto p = ChatPrompter::Create(own, source, tokenizer);
  if (!p.ok()) {
    out.note = absl::StrCat("none: the model's template does not parse (", p.status().message(), ")");
    return out;
  }
  out.prompter = *std::move(p);
  out.source = source;
  out.note = source;
  return out;
}

}  // namespace llmserve
