// EngineModel: the model as the engine sees it — a forward pass over a ragged batch
// against KV blocks the engine's BlockPool hands out. The real one wraps a Transformer
// and its KvCache; tests substitute a fake (deterministic logits from the tokens, no
// threads) to exercise the engine quickly and under ThreadSanitizer.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "model/kv_cache.h"
#include "model/transformer.h"

namespace llmserve {

// Engine thread only.
class EngineModel {
 public:
  virtual ~EngineModel() = default;
  virtual int32_t vocab_size() const = 0;
  // Longest sequence (prompt + generated) the model takes.
  virtual int32_t max_context() const = 0;
  // KV blocks the cache holds and their size; the scheduler's pool must match.
  virtual int32_t num_blocks() const = 0;
  virtual int32_t block_size() const = 0;
  // Runs the batch; logits [batch.logit_rows.size(), vocab_size()].
  virtual absl::Status Forward(const ForwardBatch& batch, float* logits) = 0;
};

// Wraps a transformer and a cache made for it. `threads` (RuntimeConfig::threads) is
// applied on the thread that calls Forward (OpenMP's thread count is per calling thread).
std::unique_ptr<EngineModel> MakeTransformerEngineModel(std::unique_ptr<Transformer> model,
                                                        std::unique_ptr<KvCache> cache, int threads);

}  // namespace llmserve
