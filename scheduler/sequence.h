// Sequence: one request's state as the scheduler sees it. No tensors, no I/O.
//
//   tokens():  [ prompt ........................ | generated ........ ]
//              0                                 prompt.size()       num_tokens()
//   cache:     [ computed (K/V in the blocks) ..........|            ]
//              0                                        num_computed
//   block_table[i] holds positions i*block_size .. (i+1)*block_size-1.
//
// A running sequence in decode has num_computed == num_tokens() - 1: the last sampled
// token is fed in the next step. After preemption num_computed is 0 and the whole of
// prompt + generated is prefilled again ("recompute"), less what the prefix cache still
// holds. With prefix caching, admission may start num_computed at a multiple of
// block_size: the leading blocks are shared cached ones, never written again.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "model/sampling_params.h"

namespace llmserve {

// Lifecycle, in chronological order; every kFinished* state is terminal.
enum class SequenceState : uint8_t {
  kWaiting,            // queued, never scheduled
  kRunning,            // admitted: holds blocks, gets work every step
  kPreempted,          // blocks taken back; queued again at the head, will recompute
  kFinishedEos,        // sampled EOS
  kFinishedStopToken,  // sampled one of stop_token_ids
  kFinishedStopString, // output text contained a stop string
  kFinishedConstraint, // the output completed its constraint (nothing else could follow)
  kFinishedLength,     // max_tokens reached (or the context filled up)
  kFinishedCancelled,  // aborted: client cancelled or went away
  kFinishedDeadline,   // aborted: the request's deadline passed
  kFinishedError,      // a step failed for it (see Engine)
};

// True for the kFinished* states.
bool IsFinished(SequenceState s);
// "waiting", "running", ..., "finished_eos", ... (for logs and tests).
const char* SequenceStateName(SequenceState s);

// Wall-clock milestones (absl::InfinitePast() until reached).
struct SequenceTimes {
  absl::Time arrival = absl::InfinitePast();          // submitted
  absl::Time first_scheduled = absl::InfinitePast();  // first got work in a step
  absl::Time first_token = absl::InfinitePast();      // first generated token sampled
  absl::Time last_token = absl::InfinitePast();       // latest generated token sampled
  absl::Time finished = absl::InfinitePast();         // reached a kFinished* state
};

struct Sequence {
  int64_t id = 0;                 // engine-unique, assigned at submission
  std::string request_id;         // the client's id (logs only)
  std::vector<int32_t> prompt;    // non-empty
  std::vector<int32_t> generated; // sampled ids, stop ids excluded
  int32_t num_computed = 0;       // leading tokens whose K/V are in the cache
  std::vector<int32_t> block_table;
  SamplingParams sampling;
  StopConditions stop;
  SequenceState state = SequenceState::kWaiting;
  SequenceTimes times;
  int32_t num_preemptions = 0;    // times this sequence was preempted
  uint64_t admit_order = 0;       // increases with each (re-)admission; newest preempted first

  // Prefix caching (block_pool.h). Sequences share cached blocks only with equal salts.
  std::string cache_salt;
  std::vector<uint64_t> block_keys;    // keys of the leading full blocks of tokens() known so far
  int32_t num_registered_blocks = 0;   // leading block_table entries that are registered
                                       // (taken from the cache or registered once computed)
  int32_t num_cached_tokens = 0;       // prompt tokens taken from the cache at first admission

  int32_t num_tokens() const { return static_cast<int32_t>(prompt.size() + generated.size()); }
  // Token at position i of prompt ++ generated.
  int32_t token(int32_t i) const {
    const auto p = static_cast<int32_t>(prompt.size());
    return i < p ? prompt[static_cast<size_t>(i)] : generated[static_cast<size_t>(i - p)];
  }
  // Positions not yet in the cache.
  int32_t num_uncomputed() const { return num_tokens() - num_computed; }
  // Tokens the sequence can ever hold in the cache: prompt + max_tokens.
  int32_t max_total_tokens() const { return static_cast<int32_t>(prompt.size()) + stop.max_tokens; }
};

}  // namespace llmserve
