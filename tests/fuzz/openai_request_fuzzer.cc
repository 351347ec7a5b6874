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
#include <string_view>

#include "server/http_status.h"
#include "server/openai_request.h"
#include "server/request_convert.h"
#include "tests/fuzz/fuzz_service.h"

#ifndef LLMSERVE_FUZZ_TOKENIZER
#error "LLMSERVE_FUZZ_TOKENIZER must name a llama2.c tokenizer.bin"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const llmserve::fuzz::FuzzService& service = llmserve::fuzz::TheFuzzService(LLMSERVE_FUZZ_TOKENIZER);
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
