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

// Decides the format of `path`: a directory holding config.json is HuggingFace; a file
// starting with the GGUF magic is GGUF; any other regular file is taken as llama2.c.
absl::StatusOr<ModelFormat> DetectModelFormat(const std::string& path);

// Loads config and tensors (memory-mapped where the format allows); the config is
// validated and every tensor the transformer needs is present with the right shape.
absl::StatusOr<std::unique_ptr<ModelWeights>> LoadModel(const std::string& path);

}  // namespace llmserve
