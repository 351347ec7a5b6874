// KvPrefetchStream: software prefetch of the K/V runs the attention kernel reads next.
//
// In a decode step a layer's K/V come from DRAM (the matmuls in between evict them),
// in runs of one block and KV head (2 KiB for 16 bf16 tokens of head_dim 64) scattered
// over the cache. Left to demand misses and the next-tile prefetch, the kernel took
// hot time + transfer time: nothing overlapped. The stream keeps a fixed distance
// (kAheadRuns runs) ahead of the kernel and issues its lines a few at a time from the
// kernel's inner loops, paced to finish when the task does, so the transfer hides
// under the arithmetic: with the K/V evicted between layers, as the matmuls do, a layer's
// attention takes 0.57-0.73 of the plain kernel's time (attention_bench's "swept" A/B
// compares the two), with bit-identical results.
//
// Lines go to L2 (_MM_HINT_T1): L1 prefetches of the same stream were 0.93 against
// 0.69 for L2 ones (the L1 miss buffers fill and stall the kernel's own loads).
#pragma once

#include <xmmintrin.h>

#include <cstdint>
#include <span>
#include <vector>

#include "model/ops/paged_attention_internal.h"

namespace llmserve::attention {

class KvPrefetchStream {
 public:
  // Runs between the kernel and the stream: 32 KiB of bf16 runs at block 16, head_dim 64.
  // (16 and 32 measured alike; the distance must stay within a task for long contexts,
  // where a whole task ahead overflows L2.)
  static constexpr int64_t kAheadRuns = 16;

  // Plans the stream of `task`: its runs from kAheadRuns on, in the order the kernel reads
  // them (tile by tile, a block's K run then its V run), then the first kAheadRuns runs of
  // `successor` (the task this thread runs next, or null), spread evenly over `steps`
  // calls of Step(). Allocates only when a task has more runs than any before.
  //
  // Only a decode task (one row) gets a plan, and only when a.kv_prefetch; for a prefill
  // chunk the plan is empty.
  // Its rows share each K/V load, so it computes far longer per byte than the transfer
  // takes (and its K/V were mostly just written): there the stream's steps cost more
  // than they hide.
  void Plan(const Args& a, const Task& task, const Task* successor, int64_t steps);

  // Prefetches the first kAheadRuns runs of `task` at once (when a.kv_prefetch): a
  // thread's first task of a call, which no predecessor's stream covered.
  static void PrefetchHead(const Args& a, const Task& task);

  // The planned runs, and the lines not yet issued (for tests).
  std::span<const uint8_t* const> plan() const { return {data_, static_cast<size_t>(num_runs_)}; }
  int64_t pending_lines() const;

  // Issues the plan's next lines (nothing once it is done). Cheap: called once per
  // iteration of the kernel's inner loops.
  void Step() {
    for (int64_t k = 0; k < per_step_ && run_ < num_runs_; ++k) {
      _mm_prefetch(reinterpret_cast<const char*>(data_[run_] + offset_), _MM_HINT_T1);
      offset_ += 64;
      if (offset_ >= run_bytes_) {
        offset_ = 0;
        ++run_;
      }
    }
  }

 private:
  std::vector<const uint8_t*> runs_;  // the plan (capacity kept between tasks)
  const uint8_t* const* data_ = nullptr;  // runs_.data(): Step() instantiates no template,
                                          // so AVX-512 callers emit no shared code
  int64_t num_runs_ = 0, run_ = 0, offset_ = 0, run_bytes_ = 0, per_step_ = 0;
};

// The calling thread's stream, as the AVX-512 kernel left it after its last task (for
// tests: a decode task's stream must have issued its whole plan by the task's end).
const KvPrefetchStream& ThreadPrefetchStream();

}  // namespace llmserve::attention
