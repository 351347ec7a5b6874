// What the request fuzzers (request_fuzzer: gRPC's wire bytes; openai_request_fuzzer:
// OpenAI JSON) check requests against, as the service does: a llama2.c tokenizer, a ChatML
// template, stories260K's context and a constraint cache over the tokenizer's vocabulary
// (structured outputs compile as in the service). Built once per process.
#pragma once

#include <memory>

#include "model/chat/chat_prompt.h"
#include "model/tokenizer/tokenizer.h"
#include "server/request_convert.h"

namespace llmserve::fuzz {

struct FuzzService {
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<ChatPrompter> chat;
  std::unique_ptr<constraint::ConstraintCache> constraints;  // as an engine's (limits.constraints)
  RequestLimits limits;
};

// The service over the tokenizer file at `tokenizer_path` (the first call's path is kept);
// aborts when it cannot be built (the harness cannot run: not a finding in the code under test).
const FuzzService& TheFuzzService(const char* tokenizer_path);

}  // namespace llmserve::fuzz
