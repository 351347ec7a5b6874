// Admission: the scheduler's limits on a new request and its waiting count.
#include "scheduler/admission.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "scheduler/scheduler.h"

namespace llmserve {

Admission::Admission(const SchedulerConfig& config)
    : block_size_(config.block_size),
      num_blocks_(config.num_blocks),
      max_context_(config.max_context),
      max_waiting_(config.max_waiting) {}

absl::Status Admission::Check(int64_t prompt_tokens, int32_t max_tokens) const {
  if (prompt_tokens < 1) return absl::InvalidArgumentError("the prompt is empty");
  if (max_tokens < 1) return absl::InvalidArgumentError(absl::StrCat("max_tokens must be >= 1, got ", max_tokens));
  const int64_t total = prompt_tokens + max_tokens;
  if (total > max_context_) {
    return absl::InvalidArgumentError(absl::StrCat("prompt (", prompt_tokens, " tokens) + max_tokens (", max_tokens,
                                                   ") exceeds the model context (", max_context_, ")"));
  }
  const int64_t blocks = (total + block_size_ - 1) / block_size_;
  if (blocks > num_blocks_) {
    return absl::InvalidArgumentError(absl::StrCat("prompt + max_tokens (", total, " tokens) needs ", blocks,
                                                   " KV blocks; the whole cache has ", num_blocks_));
  }
  return absl::OkStatus();
}

absl::Status Admission::Reserve() {
  int32_t n = waiting_.load(std::memory_order_relaxed);
  while (n < max_waiting_) {
    if (waiting_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(absl::StrCat("too many requests waiting (", n, "); try again later"));
}

absl::Status Admission::Admit(int64_t prompt_tokens, int32_t max_tokens) {
  if (absl::Status s = Check(prompt_tokens, max_tokens); !s.ok()) return s;
  return Reserve();
}

void Admission::Release() {
  if (waiting_.fetch_sub(1, std::memory_order_relaxed) < 1) {
    std::fprintf(stderr, "llmserve scheduler bug: Admission::Release without a slot\n");
    std::abort();
  }
}

}  // namespace llmserve
