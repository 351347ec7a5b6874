// Internals of PagedAttention shared by its scalar and AVX-512 kernels and its tests.
#pragma once

#include <cstdint>
#include <span>

#include "model/kv_cache.h"
#include "model/ops/paged_attention.h"

namespace llmserve::attention {

// The whole call's arguments (see PagedAttention).
struct Args {
  const KvCache* cache = nullptr;
  int64_t layer = 0;
  const AttentionSeq* seqs = nullptr;
  const float* q = nullptr;
  int64_t q_stride = 0;
  int64_t num_heads = 0;
  int64_t group = 0;  // query heads per KV head
  float scale = 0;
  float* out = nullptr;
  int64_t out_stride = 0;
};

// One unit of parallel work: rows [row_begin, row_end) of sequence `seq` (indices into
// the sequence's own rows), all query heads of KV head `kv_head`, one pass over the
// sequence's K/V up to the last row's position.
struct Task {
  int32_t seq = 0;
  int32_t kv_head = 0;
  int32_t row_begin = 0;
  int32_t row_end = 0;
};

// Rows per task so that a task holds about this many (row, query head) pairs: long
// prefill chunks are split (bounded scratch, more parallelism), decode rows never are.
constexpr int64_t kQueriesPerTask = 64;

// Runs one task with plain C++ (any CPU). `successor` (the task this thread runs next, or
// null) is a hint the scalar kernel ignores.
void RunTaskScalar(const Args& args, const Task& task, const Task* successor);
// Runs one task with AVX-512 F/BW/VL; call only when CpuHasAvx512(). While its last tile
// computes it prefetches the first tile of `successor` (the task this thread runs next, or
// null), so that a task's first keys and values do not arrive as demand misses.
void RunTaskAvx512(const Args& args, const Task& task, const Task* successor);

enum class Impl { kAuto, kScalar, kAvx512 };

// PagedAttention with a chosen kernel (kAuto: AVX-512 where the CPU has it). For tests.
void PagedAttentionWith(Impl impl, const KvCache& cache, int64_t layer, std::span<const AttentionSeq> seqs,
                        const float* q, int64_t q_stride, int64_t num_heads, float scale, float* out,
                        int64_t out_stride);

}  // namespace llmserve::attention
