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
  int64_t window = 0;  // > 0: sliding window (see PagedAttention)
  bool bf16_dot = false;     // the AVX-512 kernel computes a bf16 cache with vdpbf16ps
  bool kv_prefetch = false;  // the AVX-512 kernel runs its K/V prefetch stream
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

// The AVX-512 kernel's tiling: vectors of up to 16 tokens that never cross a block,
// tiles of 4 vectors.
constexpr int64_t kVectorTokens = 16;
constexpr int64_t kTileVectors = 4;

// The first token task `t` reads: 0 for full attention; with a window, the start of the
// tile (in the tiling from token 0) that holds the first token its first row sees (its
// other rows see later ones). On that grid the tile boundaries, and with them the order
// of the online softmax's updates, do not depend on how the rows are split into tasks or
// chunks: results stay bit-identical however a prompt is chunked.
inline int64_t TaskFirstToken(const Args& a, const Task& t) {
  if (a.window <= 0) return 0;
  const AttentionSeq& s = a.seqs[t.seq];
  const int64_t first = int64_t{s.context} - s.rows + t.row_begin - a.window + 1;
  if (first <= 0) return 0;
  const int64_t bs = a.cache->config().block_size;
  const int64_t vectors_per_block = (bs + kVectorTokens - 1) / kVectorTokens;
  int64_t blocks_per_group = kTileVectors;  // blocks whose vectors fill whole tiles
  while (blocks_per_group > 1 && (blocks_per_group / 2) * vectors_per_block % kTileVectors == 0) {
    blocks_per_group /= 2;
  }
  return first / (bs * blocks_per_group) * (bs * blocks_per_group);
}

// Rows per task so that a task holds about this many (row, query head) pairs: long
// prefill chunks are split (bounded scratch, more parallelism), decode rows never are.
constexpr int64_t kQueriesPerTask = 64;

// Runs one task with plain C++ (any CPU). `successor` (the task this thread runs next, or
// null) is a hint the scalar kernel ignores.
void RunTaskScalar(const Args& args, const Task& task, const Task* successor);
// Runs one task with AVX-512 F/BW/VL (and AVX512_BF16 when args.bf16_dot); call only where
// the Isa allows it. While its last tile
// computes it prefetches the first tile of `successor` (the task this thread runs next, or
// null), so that a task's first keys and values do not arrive as demand misses.
void RunTaskAvx512(const Args& args, const Task& task, const Task* successor);

}  // namespace llmserve::attention
