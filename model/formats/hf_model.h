// HuggingFace model directories: config.json + model.safetensors, or a sharded
// model.safetensors.index.json.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/model_config.h"
#include "model/model_weights.h"

namespace llmserve {

// Loads `dir` (config.json + safetensors weights) with tensors renamed to the
// canonical names of model_weights.h. Tensors are views into the mapped files, except
// GPT-2 Conv1D weights, which are transposed from [in, out] into owned [out, in] copies.
// NOT_FOUND for missing files (naming them), INVALID_ARGUMENT for malformed ones,
// UNIMPLEMENTED for unsupported architectures or dtypes of needed tensors.
absl::StatusOr<std::unique_ptr<ModelWeights>> LoadHfModel(const std::string& dir);

// How one HuggingFace tensor name maps onto a canonical one.
struct HfTensorName {
  std::string canonical;   // e.g. "blk.3.attn_q.weight"
  bool transpose = false;  // GPT-2 Conv1D weight stored [in, out]
  // A fused Llama-family tensor (Phi-3's qkv_proj, gate_up_proj): the canonical names of
  // its row ranges in order (q | k | v, gate | up), which the loader views one by one;
  // `canonical` is then the fused name ("blk.3.attn_qkv.weight", "blk.3.ffn_gate_up.weight").
  std::vector<std::string> parts = {};
};

// The canonical name for HuggingFace tensor `hf_name` of architecture `arch`, or
// nullopt when the tensor is not one the transformer reads (e.g. GPT-2 "attn.bias").
std::optional<HfTensorName> MapHfTensorName(Architecture arch, const std::string& hf_name);

}  // namespace llmserve
