// libFuzzer target: the service edge's request handling, as the raw gRPC methods see it.
// The first byte picks the method (Generate, Tokenize, Detokenize); the rest is the
// request's wire bytes, parsed by ParseRequest (UTF-8 of every string field, then
// protobuf) and converted as the service converts it: FromGenerateRequest, then
// ToEngineRequest (sampling and stop checks, tokenizing, chat rendering with a ChatML
// template, context bounds), FillTokenize or FillDetokenize, over the committed stories260K tokenizer
// (models/tok512.bin). An INVALID_ARGUMENT (or other error status) is the expected answer
// to a malformed request; a crash, sanitizer report or leak is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "llmserve/v1/llmserve.pb.h"
#include "server/proto_wire.h"
#include "server/request_convert.h"
#include "tests/fuzz/fuzz_service.h"

#ifndef LLMSERVE_FUZZ_TOKENIZER
#error "LLMSERVE_FUZZ_TOKENIZER must name a llama2.c tokenizer.bin"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const llmserve::fuzz::FuzzService& service = llmserve::fuzz::TheFuzzService(LLMSERVE_FUZZ_TOKENIZER);
  const std::string_view wire(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      llmserve::v1::GenerateRequest request;
      if (!llmserve::ParseRequest(wire, &request).ok()) return 0;
      (void)llmserve::ToEngineRequest(llmserve::FromGenerateRequest(request), *service.tokenizer, service.limits,
                                      "fuzz-1");
      return 0;
    }
    case 1: {
      llmserve::v1::TokenizeRequest request;
      if (!llmserve::ParseRequest(wire, &request).ok()) return 0;
      llmserve::v1::TokenizeResponse response;
      (void)llmserve::FillTokenize(request, *service.tokenizer, service.limits.max_prompt_bytes, &response);
      return 0;
    }
    default: {
      llmserve::v1::DetokenizeRequest request;
      if (!llmserve::ParseRequest(wire, &request).ok()) return 0;
      llmserve::v1::DetokenizeResponse response;
      (void)llmserve::FillDetokenize(request, *service.tokenizer, &response);
      return 0;
    }
  }
}
