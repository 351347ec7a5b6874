// HuggingFace `config.json` -> ModelConfig.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "model/model_config.h"

namespace llmserve {

// Reads a HuggingFace config.json for LlamaForCausalLM, MistralForCausalLM,
// Qwen2ForCausalLM, Qwen3ForCausalLM, Phi3ForCausalLM or GPT2LMHeadModel (by
// architectures[0], else model_type). The context is max_position_embeddings; a sliding
// window (Mistral, Phi-3; Qwen2/3 with use_sliding_window) goes into sliding_window.
// UNIMPLEMENTED for other architectures or unsupported rope scaling; INVALID_ARGUMENT
// naming the file and key for malformed values; the result passes Validate().
// The config's name is the name of the directory holding the file.
absl::StatusOr<ModelConfig> ParseHfConfig(const std::string& config_json_path);

}  // namespace llmserve
