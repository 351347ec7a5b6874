// RunGreedy: greedy (argmax) generation for a set of prompts through Transformer::Forward,
// one after another or all together in one batched loop. Blocks are allocated trivially
// (a fixed contiguous range per sequence); the engine's block pool and scheduler replace
// this in the server. Used by llmrun, the transformer tests and the forward benchmark.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "model/dtype.h"
#include "model/transformer.h"

namespace llmserve {

struct GreedyOptions {
  int64_t max_tokens = 256;      // generated tokens per prompt at most
  int64_t prefill_chunk = 0;     // prompt tokens per step while prefilling; 0 = whole prompt
  int64_t block_size = 16;       // KV cache block size (tokens)
  DType kv_dtype = DType::kF32;  // KV cache element type
  int top_logits = 0;            // K largest logits at the last prompt position (0: none)
  std::vector<int32_t> stop_ids; // sampling one of these ends the sequence (it is not kept)
  bool batch = false;            // true: all prompts in one batched loop; false: one by one
};

struct GreedyResult {
  std::vector<int32_t> generated;                    // sampled ids after the prompt
  std::vector<std::pair<int32_t, float>> top_logits; // (id, logit), descending; ties by id
};

// Generates for each prompt (non-empty, at most the context length) until max_tokens,
// a stop id, or the context is full (the last position is fed, its successor is kept).
// Each step runs every unfinished sequence: a prefill chunk of up to prefill_chunk prompt
// tokens, or one decode token. Results are in prompt order.
absl::StatusOr<std::vector<GreedyResult>> RunGreedy(Transformer& model,
                                                    const std::vector<std::vector<int32_t>>& prompts,
                                                    const GreedyOptions& options);

// Index of the largest of `n` logits; the lowest index wins ties.
int32_t ArgMax(const float* logits, int64_t n);

// The k largest logits as (id, logit), descending, ties broken by lower id.
std::vector<std::pair<int32_t, float>> TopLogits(const float* logits, int64_t n, int k);

}  // namespace llmserve
