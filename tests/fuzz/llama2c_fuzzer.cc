// libFuzzer target: a model file as `--model FILE` reads one when it is not a directory:
// format detection (GGUF magic or a llama2.c header), then the llama2.c checkpoint loader
// (header fields, shared classifier flag, tensor sizes against the file length) and the
// non-finite weight scan. An error status is the expected answer to a malformed file.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/finite_check.h"
#include "model/model_loader.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const llmserve::fuzz::MemFile file(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!llmserve::DetectModelFormat(file.path()).ok()) return 0;
  auto weights = llmserve::LoadModel(file.path());
  if (!weights.ok()) return 0;
  for (const auto& [name, view] : (*weights)->tensors()) (void)llmserve::CheckFinite(view);
  return 0;
}
