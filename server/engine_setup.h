// BuildEngine: from an EngineSpec (server/engine_spec.h) and loaded model files to a
// ready (not yet started) Engine. The one engine assembly the server (SetUpModel),
// llmrun and engine_bench share, so the same flags give the same engine:
//
//   LoadModelFiles(spec)            --model "" → the built-in demo model; else LoadModel +
//                                   LoadTokenizer(--tokenizer, else the model path)
//   BuildEngine(spec, weights, tok) → Transformer::Create(RuntimeConfigFor(spec))
//                                   → KvCache(ChooseKvBlocks) → EngineConfigFor(spec, ...)
//                                   → prefill policy resolved (prefill_policy_choice.h)
//                                   → Engine::Create
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/runtime_config.h"
#include "model/tokenizer/tokenizer.h"
#include "scheduler/engine.h"
#include "server/engine_spec.h"

namespace llmserve {

struct LoadedModel {
  std::unique_ptr<ModelWeights> weights;
  std::unique_ptr<Tokenizer> tokenizer;
};

// The model and tokenizer files `spec` names (the demo model for an empty model path).
// Errors carry the loader's message (which names the file), prefixed with what failed:
// NOT_FOUND for a missing path, INVALID_ARGUMENT for a corrupt or unsupported file or a
// tokenizer that does not belong to the model.
absl::StatusOr<LoadedModel> LoadModelFiles(const EngineSpec& spec);

// The transformer's runtime settings for `spec` (dtypes resolved, threads).
RuntimeConfig RuntimeConfigFor(const EngineSpec& spec);

// The engine's settings for `spec` on a model of `model` geometry with `num_blocks` KV
// blocks and end-of-generation `eos_ids`, before the prefill policy is resolved
// (BuildEngine sets the scheduler's policy from --step-policy and --piggyback).
EngineConfig EngineConfigFor(const EngineSpec& spec, const ModelConfig& model, int32_t num_blocks,
                             std::vector<int32_t> eos_ids);

// Every setting of `config` a flag can change, "name=value" separated by spaces (for
// tests comparing the server's engine with llmrun's, and logs).
std::string DescribeEngineConfig(const EngineConfig& config);

struct BuiltEngine {
  std::unique_ptr<Engine> engine;  // created, not started
  int32_t num_blocks = 0;          // KV blocks in the cache
  size_t kv_bytes_per_block = 0;
  std::string weight_format;       // Transformer::weight_format()
  std::string linear_layers;       // Transformer::weights_summary()
  std::string kernels;             // the kernel plan, described
  std::string prefill_policy;      // the resolved prefill policy and why, for the startup log line
};

// Builds the engine for `spec` over `weights` (which may be released afterwards: the
// transformer packs its own copies). `tokenizer` (which gives the end-of-generation ids
// and the text) and `observer` (may be null) must outlive the engine. `spec` must be valid.
absl::StatusOr<BuiltEngine> BuildEngine(const EngineSpec& spec, const ModelWeights& weights,
                                        const Tokenizer& tokenizer, EngineObserver* observer = nullptr);

}  // namespace llmserve
