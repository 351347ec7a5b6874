// libFuzzer target: a HuggingFace tokenizer.json (BPE or SentencePiece-style models,
// added tokens, normalizer and pre-tokenizer sections). A description that loads is
// built into a tokenizer, which then encodes and decodes a short mixed text. An error
// status is the expected answer to a malformed file.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/tokenizer/hf_tokenizer_json.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const llmserve::fuzz::MemFile file(std::string_view(reinterpret_cast<const char*>(data), size));
  auto spec = llmserve::TokenizerSpecFromHfJson(file.path());
  if (!spec.ok()) return 0;
  auto tok = llmserve::CreateTokenizer(*std::move(spec));
  if (!tok.ok()) return 0;
  for (std::string_view text : {"Hello world! 123 <s></s> héllo\n\n  x", "", " "}) {
    auto ids = (*tok)->Encode(text, {});
    if (ids.ok()) (void)(*tok)->Decode(*ids);
  }
  return 0;
}
