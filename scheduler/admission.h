// Admission: the scheduler's door. The one place its admission limits are checked, and
// the one count of requests waiting for their first step (the max_waiting limit).
//
//   Submit (caller's thread) ── Check + Reserve ──▶ slot held ──▶ first scheduled or
//   Scheduler::Add (tests)   ── Admit ───────────▶             ended before: Release
//
// Thread-safe: the engine admits on the caller's thread so that a refusal is the RPC's
// immediate status, while the scheduler gives slots back on the engine thread. A slot is
// taken before the request reaches the engine's inbox, so the count covers requests in
// the inbox as well as the never-scheduled ones in the waiting queue (preempted ones
// have been scheduled: they hold no slot).
#pragma once

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"

namespace llmserve {

struct SchedulerConfig;

class Admission {
 public:
  // `config` must be valid; it is copied.
  explicit Admission(const SchedulerConfig& config);

  // INVALID_ARGUMENT: an empty prompt, max_tokens < 1, prompt + max_tokens beyond
  // max_context, or more KV blocks than the whole pool. Takes no slot.
  absl::Status Check(int64_t prompt_tokens, int32_t max_tokens) const;
  // Takes a waiting slot; RESOURCE_EXHAUSTED when max_waiting requests already hold one.
  absl::Status Reserve();
  // Check, then Reserve.
  absl::Status Admit(int64_t prompt_tokens, int32_t max_tokens);
  // Gives back a slot taken by Reserve.
  void Release();
  // Slots held now.
  int32_t waiting() const { return waiting_.load(std::memory_order_relaxed); }

 private:
  int32_t block_size_;
  int32_t num_blocks_;
  int32_t max_context_;
  int32_t max_waiting_;
  std::atomic<int32_t> waiting_{0};
};

}  // namespace llmserve
