#include "tests/fuzz/fuzz_service.h"

#include <cstdlib>
#include <iostream>
#include <utility>

#include "model/tokenizer/tokenizer_loader.h"
#include "scheduler/constraint_vocabulary.h"

namespace llmserve::fuzz {
namespace {

constexpr int32_t kContext = 512;  // stories260K's
constexpr char kChatMl[] =
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

}  // namespace

const FuzzService& TheFuzzService(const char* tokenizer_path) {
  static const FuzzService* service = [tokenizer_path] {
    auto* s = new FuzzService;
    auto tok = LoadTokenizer(tokenizer_path);
    if (!tok.ok()) {
      std::cerr << "fuzz service: " << tok.status() << "\n";
      std::abort();
    }
    s->tokenizer = *std::move(tok);
    auto chat = ChatPrompter::Create(kChatMl, "fuzz ChatML", *s->tokenizer);
    if (!chat.ok()) {
      std::cerr << "fuzz service: " << chat.status() << "\n";
      std::abort();
    }
    s->chat = *std::move(chat);
    s->limits.vocab_size = s->tokenizer->vocab_size();
    s->limits.max_context = kContext;
    s->limits.chat = s->chat.get();
    s->limits.max_prompt_bytes = DefaultMaxPromptBytes(kContext);
    auto vocab = ConstraintVocabulary(*s->tokenizer, {s->tokenizer->eos_id()});
    if (!vocab.ok()) {
      std::cerr << "fuzz service: " << vocab.status() << "\n";
      std::abort();
    }
    s->constraints = std::make_unique<constraint::ConstraintCache>(*std::move(vocab), constraint::CompileLimits(), 64);
    s->limits.constraints = s->constraints.get();
    return s;
  }();
  return *service;
}

}  // namespace llmserve::fuzz
