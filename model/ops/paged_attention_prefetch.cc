// KvPrefetchStream: planning (the per-line work is Step(), inline in the header).
#include "model/ops/paged_attention_prefetch.h"

#include <algorithm>

namespace llmserve {
namespace attention {

namespace {

// The first block a task reads (0 unless a window skips some).
int64_t TaskFirstBlock(const Args& a, const Task& t) { return TaskFirstToken(a, t) / a.cache->config().block_size; }

// Blocks a task reads: those holding the tokens its last row sees, from its first block.
int64_t TaskBlocks(const Args& a, const Task& t) {
  const AttentionSeq& s = a.seqs[t.seq];
  const int64_t n_tok = int64_t{s.context} - s.rows + t.row_end;
  const int64_t bs = a.cache->config().block_size;
  return (n_tok + bs - 1) / bs - TaskFirstBlock(a, t);
}

// Run r of a task in reading order: block r / 2's K run (r even) or V run (r odd),
// counted from the task's first block.
const uint8_t* TaskRun(const Args& a, const Task& t, int64_t r) {
  const int64_t block = a.seqs[t.seq].block_table[static_cast<size_t>(TaskFirstBlock(a, t) + r / 2)];
  return r % 2 == 0 ? a.cache->K(a.layer, block, t.kv_head) : a.cache->V(a.layer, block, t.kv_head);
}

}  // namespace

void KvPrefetchStream::Plan(const Args& a, const Task& task, const Task* successor, int64_t steps) {
  runs_.clear();
  num_runs_ = run_ = offset_ = per_step_ = 0;
  if (task.row_end - task.row_begin != 1 || !a.kv_prefetch) return;
  const int64_t own = 2 * TaskBlocks(a, task);
  for (int64_t r = kAheadRuns; r < own; ++r) runs_.push_back(TaskRun(a, task, r));
  if (successor != nullptr) {
    const int64_t next = std::min(kAheadRuns, 2 * TaskBlocks(a, *successor));
    for (int64_t r = 0; r < next; ++r) runs_.push_back(TaskRun(a, *successor, r));
  }
  data_ = runs_.data();
  num_runs_ = static_cast<int64_t>(runs_.size());
  run_bytes_ = static_cast<int64_t>(a.cache->run_bytes());
  const int64_t lines = num_runs_ * ((run_bytes_ + 63) / 64);
  steps = std::max<int64_t>(steps, 1);
  per_step_ = (lines + steps - 1) / steps;
}

int64_t KvPrefetchStream::pending_lines() const {
  if (run_ >= num_runs_) return 0;
  const int64_t lines = (run_bytes_ + 63) / 64;
  return (num_runs_ - run_) * lines - offset_ / 64;
}

void KvPrefetchStream::PrefetchHead(const Args& a, const Task& task) {
  if (!a.kv_prefetch) return;
  const int64_t runs = std::min(kAheadRuns, 2 * TaskBlocks(a, task));
  const int64_t bytes = static_cast<int64_t>(a.cache->run_bytes());
  for (int64_t r = 0; r < runs; ++r) {
    const char* run = reinterpret_cast<const char*>(TaskRun(a, task, r));
    for (int64_t off = 0; off < bytes; off += 64) _mm_prefetch(run + off, _MM_HINT_T1);
  }
}

}  // namespace attention
}  // namespace llmserve
