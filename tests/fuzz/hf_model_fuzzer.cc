// libFuzzer target: a HuggingFace checkpoint directory. The input is config.json's text,
// a NUL byte, then model.safetensors' bytes (corpus/hf_model/ shows the shape). Both are
// written to a scratch directory and loaded as `--model DIR` loads them; each tensor is
// then scanned for non-finite values. An error status is the expected answer to a
// malformed pair; a crash, sanitizer report or leak is a finding.
#include <cstddef>
#include <cstdint>

#include "model/finite_check.h"
#include "model/formats/hf_model.h"
#include "model/formats/safetensors_file.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const llmserve::fuzz::ScratchDir dir;
  const auto [config, tensors] = llmserve::fuzz::SplitAtNul(data, size);
  dir.Write("config.json", config);
  dir.Write("model.safetensors", tensors);

  // The tensor file alone (every entry viewed), then the directory as a model.
  if (auto st = llmserve::SafetensorsFile::Open(dir.path() + "/model.safetensors"); st.ok()) {
    for (const auto& [name, e] : (*st)->entries()) (void)(*st)->View(e, name);
  }
  auto weights = llmserve::LoadHfModel(dir.path());
  if (!weights.ok()) return 0;
  for (const auto& [name, view] : (*weights)->tensors()) (void)llmserve::CheckFinite(view);
  return 0;
}
