// Causal GQA attention straight from the paged KV cache, for a ragged batch.
#pragma once

#include <cstdint>
#include <span>

#include "model/kv_cache.h"
#include "model/ops/isa.h"

namespace llmserve {

// How PagedAttention runs, chosen once (the Transformer's kernel plan, model/kernel_plan.h)
// and passed to every call.
struct AttentionOptions {
  // kScalar: the scalar kernel. kAvx512: the AVX-512 kernel, a bf16 cache widened to f32.
  // kAvx512Bf16: the AVX-512 kernel, a bf16 cache computed as bf16_dot says.
  Isa isa = Isa::kScalar;
  // The AVX-512 kernel's K/V prefetch stream for decode tasks
  // (model/ops/paged_attention_prefetch.h). Results do not depend on it.
  bool kv_prefetch = true;
  // With kAvx512Bf16: a bf16 cache computed with vdpbf16ps (queries and softmax
  // probabilities rounded to bf16 pairs, as the bf16 matmuls round activations), or, when
  // false, widened to f32 as with kAvx512 (the rule of the bf16 matmuls' tile,
  // Bf16KernelFor: f32 FMAs on Intel). A task with many query blocks (prompt rows) widens
  // each tile of the cache once for all of them.
  bool bf16_dot = true;
};

// One sequence's part of the step.
struct AttentionSeq {
  int32_t row_start = 0;  // first row of this sequence in the batch
  int32_t rows = 0;       // its rows this step (a prefill chunk, or 1 for decode)
  int32_t context = 0;    // tokens cached after this step's K/V were written; its rows are
                          // positions context-rows .. context-1
  std::span<const int32_t> block_table;  // covers positions 0 .. context-1
};

// out[r, h, :] = softmax(q[r, h, :] · K[0..p]ᵀ * scale) · V[0..p] for each row r at
// position p, over the sequence's cached K/V of layer `layer` (which must already hold
// this step's tokens). Query head h uses KV head h / (num_heads / num_kv_heads); all
// query heads of a KV head and all rows of the sequence share one pass over its blocks
// with an online softmax (a chunk of more than ~64 (row, head) pairs is split into row
// ranges, each its own pass). q and out: f32 [rows, num_heads, head_dim] with row
// strides q_stride / out_stride (floats). Parallel (OpenMP) over (sequence, KV head,
// row range); the result does not depend on the thread count or on the rest of the
// batch (bit for bit). The kernel is options.isa's (AttentionOptions).
//
// window > 0 (sliding-window attention): a row at position p attends only to positions
// (p - window, p], its last `window` tokens including itself; a task starts reading at
// the block that holds its first row's first visible token, so whole blocks before the
// window are skipped. window <= 0: full causal attention.
void PagedAttention(const AttentionOptions& options, const KvCache& cache, int64_t layer,
                    std::span<const AttentionSeq> seqs, const float* q, int64_t q_stride, int64_t num_heads,
                    float scale, float* out, int64_t out_stride, int64_t window = 0);

}  // namespace llmserve
