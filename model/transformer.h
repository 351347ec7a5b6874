// Transformer: one batched forward pass over a ragged batch (prefill chunks and decode
// tokens of many sequences) against the paged KV cache.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "model/block_copy.h"
#include "model/kernel_plan.h"
#include "model/kv_cache.h"
#include "model/model_weights.h"
#include "model/runtime_config.h"

namespace llmserve {

// One step's work. Rows are the batch's tokens; each sequence owns a contiguous range.
struct ForwardBatch {
  struct Seq {
    int32_t row_start = 0;                 // first row of this sequence
    int32_t rows = 0;                      // rows this step (chunk length, or 1 for decode)
    int32_t cached = 0;                    // tokens already in the cache before this step;
                                           // its rows are positions cached .. cached+rows-1
    std::span<const int32_t> block_table;  // must cover positions 0 .. cached+rows-1
  };
  std::span<const int32_t> tokens;      // [N] token ids
  std::span<const Seq> seqs;            // ranges tile rows 0..N-1 in order
  std::span<const int32_t> logit_rows;  // rows whose logits are wanted, in output order
  std::span<const BlockCopy> block_copies = {};  // done first, in order (block_copy.h)
};

// Wall time per operation of the forward pass, summed over the profiled Forward calls.
struct ForwardProfile {
  int64_t steps = 0;                               // Forward calls profiled
  std::vector<std::pair<std::string, double>> ops;  // (op name, seconds), in pass order
};

// Owns the packed weights and per-step scratch. Engine thread only.
class Transformer {
 public:
  virtual ~Transformer() = default;

  // Packs `weights` for `runtime` (converts to runtime.weight_dtype, reorders for oneDNN),
  // with every kernel chosen here, once (PlanKernels on this CPU: kernel_plan()).
  // `weights` must outlive the Transformer only during Create (tensors are copied/packed).
  static absl::StatusOr<std::unique_ptr<Transformer>> Create(const ModelWeights& weights,
                                                             const RuntimeConfig& runtime);

  // Runs the batch: writes each row's K/V into `cache` at its position and fills
  // logits [logit_rows.size(), vocab_size] (row-major). INVALID_ARGUMENT for a batch
  // that is malformed (ranges not tiling the rows, token ids outside the vocabulary,
  // positions beyond the context or the block table, cache geometry not matching).
  virtual absl::Status Forward(const ForwardBatch& batch, KvCache& cache, float* logits) = 0;

  // Starts (clearing) or stops the per-op profile; off by default (costs two clock reads
  // per op when on).
  virtual void SetProfiling(bool on) = 0;
  // The profile gathered since profiling was turned on.
  virtual ForwardProfile profile() const = 0;

  virtual const ModelConfig& config() const = 0;
  // Bytes of weights one decode step reads (all linear layers + embeddings row + head).
  virtual size_t weight_bytes() const = 0;
  // What the linear layers were packed as, with their kernels and sizes, e.g.
  // "Q4_K (avx512-vnni) x66 610.2 MiB, Q4_K+Q6_K (avx512-vnni) x22 ..." (for the start-up log).
  virtual std::string weights_summary() const = 0;
  // The linear layers' weight formats, most bytes first: "bf16", "Q4_K+Q6_K", "Q8_0".
  virtual std::string weight_format() const = 0;
  // The kernels chosen at Create (for the start-up log: KernelPlan::Describe).
  virtual const KernelPlan& kernel_plan() const = 0;
};

}  // namespace llmserve
