// libFuzzer target: the OpenAI-compatible API's request handling, as OpenAiService sees a
// body. The first byte picks the endpoint (Completions, Chat Completions); the rest is the
// JSON body, parsed by ParseOpenAiRequest (JSON types, OpenAI-only rules) into a
// GenerationInput and validated by ToEngineRequest (the checks gRPC's Generate shares,
// in OpenAI's names: tokenizing, chat rendering with a ChatML template, context bounds),
// over the committed stories260K tokenizer (models/tok512.bin). An error status is the
// expected answer to a malformed body, and every INVALID_ARGUMENT of a field must carry
// its "param"; a crash, sanitizer report or leak is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string_view>

#include "model/chat/chat_prompt.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/tokenizer_loader.h"
#include "server/http_status.h"
#include "server/openai_request.h"
#include "server/request_convert.h"

#ifndef LLMSERVE_FUZZ_TOKENIZER
#error "LLMSERVE_FUZZ_TOKENIZER must name a llama2.c tokenizer.bin"
#endif

namespace {

constexpr int32_t kContext = 512;  // stories260K's
constexpr char kChatMl[] =
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

struct Service {
  std::unique_ptr<llmserve::Tokenizer> tokenizer;
  std::unique_ptr<llmserve::ChatPrompter> chat;
  llmserve::RequestLimits limits;
};

const Service& TheService() {
  static const Service* service = [] {
    auto* s = new Service;
    auto tok = llmserve::LoadTokenizer(LLMSERVE_FUZZ_TOKENIZER);
    if (!tok.ok()) {
      std::cerr << "openai_request_fuzzer: " << tok.status() << "\n";
      std::abort();  // the harness cannot run: not a finding in the code under test
    }
    s->tokenizer = *std::move(tok);
    auto chat = llmserve::ChatPrompter::Create(kChatMl, "fuzz ChatML", *s->tokenizer);
    if (!chat.ok()) {
      std::cerr << "openai_request_fuzzer: " << chat.status() << "\n";
      std::abort();
    }
    s->chat = *std::move(chat);
    s->limits.vocab_size = s->tokenizer->vocab_size();
    s->limits.max_context = kContext;
    s->limits.chat = s->chat.get();
    s->limits.max_prompt_bytes = llmserve::DefaultMaxPromptBytes(kContext);
    return s;
  }();
  return *service;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Service& service = TheService();
  const auto endpoint = data[0] % 2 == 0 ? llmserve::OpenAiEndpoint::kCompletions
                                         : llmserve::OpenAiEndpoint::kChatCompletions;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  absl::StatusOr<llmserve::OpenAiRequest> parsed = llmserve::ParseOpenAiRequest(endpoint, body);
  if (!parsed.ok()) return 0;
  const absl::Status s =
      llmserve::ToEngineRequest(parsed->input, *service.tokenizer, service.limits, "fuzz-1").status();
  // A field check names its field: an INVALID_ARGUMENT from the validation has a "param".
  if (s.code() == absl::StatusCode::kInvalidArgument && llmserve::ToHttpError(s).body["error"]["param"].is_null()) {
    std::cerr << "openai_request_fuzzer: no param for " << s << "\n";
    std::abort();
  }
  return 0;
}
