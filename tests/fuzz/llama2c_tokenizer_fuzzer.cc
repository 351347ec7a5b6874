// libFuzzer target: a llama2.c tokenizer.bin (max token length, then per token a score,
// a length and the bytes). Read as the server reads one beside a model with an unknown
// vocabulary size, built, and used on a short text. An error status is the expected
// answer to a malformed file.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "model/tokenizer/llama2c_tokenizer.h"
#include "model/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto spec = llmserve::TokenizerSpecFromLlama2cBytes(std::span<const uint8_t>(data, size), "fuzz.bin");
  if (!spec.ok()) return 0;
  auto tok = llmserve::CreateTokenizer(*std::move(spec));
  if (!tok.ok()) return 0;
  for (std::string_view text : {"Once upon a time, héllo\n  123", ""}) {
    auto ids = (*tok)->Encode(text, {});
    if (ids.ok()) (void)(*tok)->Decode(*ids);
  }
  return 0;
}
