// LoadModel: opens a model in any supported format.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model/model_weights.h"

namespace llmserve {

enum class ModelFormat {
  kLlama2c,      // karpathy/llama2.c .bin checkpoint
  kGguf,         // GGUF v2/v3 file
  kHuggingFace,  // directory with config.json and *.safetensors
};

// Decides the format of `path`: a directory holding config.json is HuggingFace; a regular
// file starting with the GGUF magic is GGUF; one with a valid llama2.c header and the size
// it implies is llama2.c. Anything else: INVALID_ARGUMENT saying what the path is not.
absl::StatusOr<ModelFormat> DetectModelFormat(const std::string& path);

// Loads config and tensors (memory-mapped where the format allows); the config is
// validated and every tensor the transformer needs is present with the right shape.
absl::StatusOr<std::unique_ptr<ModelWeights>> LoadModel(const std::string& path);

}  // namespace llmserve
