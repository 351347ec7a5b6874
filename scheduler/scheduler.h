// Scheduler: continuous batching over a BlockPool. Decides, step by step, which
// sequences get how many tokens of work; knows nothing about tensors.
//
// One step (Schedule) asks the step's prefill policy (prefill_policy.h: bulk, separate,
// piggyback, built from the config's policy fields) which kinds of work it takes and how
// many prompt tokens in how many items, then plans:
//   1. decode: every running sequence whose prompt is fully computed gets its one token,
//      oldest admission first. If it needs a new block and none is free, the most
//      recently admitted running sequence is preempted (blocks released, state
//      kPreempted, back to the head of the waiting queue) — possibly itself — until the
//      block is found.
//   2. prefill: running sequences still part-way through their prompt get their next
//      chunk (oldest first; a chunk shrinks to the free blocks, and when not one token
//      fits, the newest running sequence is preempted as in 1 — possibly itself), then
//      sequences are admitted from the head of the waiting queue (FIFO; preempted ones
//      are at the head) — each a chunk of up to
//      max_prefill_chunk tokens — while the policy's prefill budget, max_running
//      and free blocks allow, and a further item only when it ends its prompt and is
//      shorter than the step's decode rows plus prompt_pack_rows (see the field).
//      Admission never preempts: when the next waiting
//      sequence's chunk does not get its blocks, admission stops (FIFO, no overtaking);
//      a step that preempted admits nothing. With prefix caching, an admitted sequence
//      first takes the longest cached prefix of its tokens (whole blocks, leaving at
//      least one token to compute), then the leading rows of the cached partial block
//      that continues it best (copied into its own next block: plan.copies), and is
//      planned, budgeted and fitted only for the rest.
// A prefill-only step (the separate policy) plans 2 alone, and 1 instead when 2 plans
// nothing. The plan is a pure function of the config and the calls made.
// A sequence preempted while the plan is built (listed in plan.preempted) has no work
// in it (a decode it was given earlier in the step is withdrawn); a re-admitted one
// prefills prompt + generated again. A plan is empty only when no sequence is held.
//
// Update(plan, sampled) applies the step's results: num_computed advances by each item's
// tokens; items with sample == true get their sampled id appended (or finish on a stop
// id); length/EOS/stop-token finishes release the blocks and hand the sequence back.
// With prefix caching, every block whose positions are all computed is registered in the
// pool then, so that it outlives its sequence as a cached block; a sequence that ends or
// is preempted leaves its partly computed last block cached as a partial block (not
// after a failed step).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "model/block_copy.h"
#include "scheduler/admission.h"
#include "scheduler/block_hash.h"
#include "scheduler/block_pool.h"
#include "scheduler/prefill_policy.h"
#include "scheduler/sequence.h"

namespace llmserve {

enum class StepPolicy : uint8_t { kMixed, kSeparate };

// "mixed" / "separate".
const char* StepPolicyName(StepPolicy p);
// Parses "mixed" / "separate"; INVALID_ARGUMENT otherwise.
absl::StatusOr<StepPolicy> ParseStepPolicy(std::string_view s);

struct SchedulerConfig {
  int32_t block_size = 16;           // tokens per KV block
  int32_t num_blocks = 0;            // KV blocks in the pool (from the KV byte budget), >= 1
  int32_t max_running = 64;          // sequences holding blocks at once
  int32_t max_batched_tokens = 512;  // tokens per step (decode + prefill), >= max_running
  int32_t max_prefill_chunk = max_batched_tokens;  // prompt tokens per sequence per step,
                                                   // 1..max_batched_tokens
  int32_t max_waiting = 256;         // queued, never-scheduled requests beyond which Add refuses
  int32_t max_context = 0;           // model context: prompt + max_tokens must fit, >= 1
  std::vector<int32_t> eos_ids;      // ids that end generation as EOS (the model's end of
                                     // text / turn / message ids; empty: none), each >= 0
  // The prefill policy (prefill_policy.h), as these four fields describe it:
  //   kSeparate → separate(max_decode_stall); kMixed with prefill_spread_steps 0 → bulk;
  //   kMixed with prefill_spread_steps H > 0 → piggyback(mixed_step_tokens, H).
  StepPolicy step_policy = StepPolicy::kMixed;
  int32_t max_decode_stall = 4;      // kSeparate: at most this many prefill steps in a row
                                     // while sequences wait to decode, >= 1
  int32_t prefill_spread_steps = 0;    // kMixed: piggyback pending prompt tokens on decode
                                       // steps when they fit in this many; 0 = bulk
  int32_t mixed_step_tokens = 12;      // kMixed with piggybacking: fill decode steps with
                                       // prompt tokens up to this many rows (>= 1)
  // After a step's first prompt item, a further sequence's prompt work joins the step only
  // when it ends that prompt there and has fewer rows than the step's decode rows plus this
  // many; 0: no such limit (prompts packed up to the budget). Why: a step costs about
  // F + c * rows (F: reading the weights; c: one row's arithmetic). With D decode rows in
  // every step, prompts of a and b rows computed side by side both get their first token
  // after F + c(D + a + b); one after another, a gets its token after F + c(D + a) and b a
  // step F + c(D + b) later. The second order has the smaller sum of times to first token
  // exactly when b > D + F/c, so this field is F/c: the rows a step's fixed cost is worth
  // (for 16-bit weights, a CPU's arithmetic rate over its memory bandwidth: some tens).
  // It also keeps requests that arrive together from prefilling, decoding and finishing in
  // lockstep, which would make them arrive together again on their next turn.
  int32_t prompt_pack_rows = 0;
  bool prefix_caching = true;          // keep computed full blocks and share them by prefix
  BlockHashFn block_hash = HashBlockTokens;  // block keys (block_hash.h); tests force collisions

  // INVALID_ARGUMENT naming the first bad field.
  absl::Status Validate() const;
  // The policy the four fields above describe.
  PrefillPolicyConfig prefill_policy() const;
  // Sets the four fields to describe `p` (fields `p`'s kind does not use are kept).
  void set_prefill_policy(const PrefillPolicyConfig& p);
};

// One sequence's work in a step: feed tokens [start, start + num_tokens) of it.
struct ScheduledWork {
  enum class Kind : uint8_t { kPrefill, kDecode };
  Sequence* seq = nullptr;
  Kind kind = Kind::kPrefill;
  int32_t start = 0;       // == seq->num_computed when scheduled
  int32_t num_tokens = 0;  // 1 for decode
  bool sample = false;     // true when the work reaches the end of the sequence's tokens
                           // (decode, or the last chunk of a prefill): a token is sampled
};

// One step's plan: decodes first, then prefills; rows of the forward batch follow this
// order (work i occupies the rows after work i-1).
struct SchedulePlan {
  std::vector<ScheduledWork> work;    // decode items, then prefill items
  int32_t num_decode_tokens = 0;
  int32_t num_prefill_tokens = 0;
  std::vector<int64_t> preempted;     // ids preempted while building this plan
  std::vector<BlockCopy> copies;      // KV block copies to make before the forward pass, in
                                      // order: each fills the first block an admitted
                                      // sequence computes into with a cached partial block's
                                      // rows (their content is not written before the pass)

  bool empty() const { return work.empty(); }
  int32_t num_tokens() const { return num_decode_tokens + num_prefill_tokens; }
  // Number of work items with sample == true (the number of ids Update expects).
  int32_t num_samples() const;
};

// Engine thread only.
class Scheduler {
 public:
  // `config` must be valid.
  explicit Scheduler(const SchedulerConfig& config);

  // Admits a new sequence through admission() (INVALID_ARGUMENT: empty prompt,
  // prompt + max_tokens beyond max_context, or more blocks than the whole pool;
  // RESOURCE_EXHAUSTED: max_waiting requests already wait) and appends it to the
  // waiting queue.
  absl::Status Add(std::unique_ptr<Sequence> seq, absl::Time now);
  // Appends a new sequence that already passed admission().Check and holds a slot from
  // admission().Reserve (the engine admits on the caller's thread); the slot is given
  // back when the sequence is first scheduled or ends before.
  void AddAdmitted(std::unique_ptr<Sequence> seq, absl::Time now);
  // Thread-safe. The door: admission limits and the waiting count (admission.h).
  Admission& admission() { return admission_; }

  // Plans the next step (may preempt; may be empty when nothing can run).
  SchedulePlan Schedule(absl::Time now);

  // Applies a step's results. `sampled` has plan.num_samples() ids, in plan order of the
  // sampling items. Returns the sequences that finished in this step (state set, blocks
  // released, times.finished set), in plan order.
  std::vector<std::unique_ptr<Sequence>> Update(const SchedulePlan& plan, std::span<const int32_t> sampled,
                                                absl::Time now);

  // Ends a waiting, preempted or running sequence early with terminal `state`
  // (stop string, cancel, deadline, error): releases its blocks and returns it;
  // nullptr if no such sequence is held.
  std::unique_ptr<Sequence> Finish(int64_t seq_id, SequenceState state, absl::Time now);

  // A sequence this scheduler ended by length (Update) whose output text, once
  // detokenized, holds a stop string: it ends by the stop string instead (stop strings
  // come before length, StopConditions' order). Other states are kept. The engine learns
  // of the match only after Update; the state is still the scheduler's to write.
  void StopStringFound(Sequence& seq) const;

  // Every sequence held (waiting first, then running); for deadline sweeps and shutdown.
  std::vector<const Sequence*> Sequences() const;

  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  // Waiting and preempted sequences.
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  int64_t num_preemptions() const { return num_preemptions_; }
  // Prefix cache lookups at admission, in tokens: looked up (the tokens of every
  // admitted sequence) and found (taken from the cache). vLLM's queries and hits.
  int64_t prefix_query_tokens() const { return prefix_query_tokens_; }
  int64_t prefix_hit_tokens() const { return prefix_hit_tokens_; }
  // Admissions whose lookup found a key but refused its block on verification (a hash
  // collision, or a block whose parent was evicted after it was cached).
  int64_t prefix_rejected_hits() const { return prefix_rejected_hits_; }
  // INTERNAL naming the first broken invariant of the pool and the block tables: the
  // pool's own (used + free + cached = total, ...), each used block's refcount equals the
  // tables holding it, a table's registered blocks are its leading ones and hold its
  // tokens, its others are its own. O(blocks); tests call it after every step.
  absl::Status CheckInvariants() const;
  const BlockPool& blocks() const { return pool_; }
  const SchedulerConfig& config() const { return config_; }
  // The prefill policy built from config().
  const PrefillPolicy& policy() const { return *policy_; }

 private:
  // (implementation-defined helpers, scheduler_plan.cc)
  // A decode token for every sequence ready for one (may preempt).
  void ScheduleDecodes(SchedulePlan& plan);
  // Prefill chunks and admissions within `budget`.
  void SchedulePrefills(SchedulePlan& plan, absl::Time now, const PrefillBudget& budget);
  // What the policy is told: before the step, and after its decodes in `plan`.
  StepStart Start() const;
  StepState State(const SchedulePlan& plan) const;
  // Preempts running_.back(), dropping its work from `plan`.
  void PreemptNewest(SchedulePlan& plan);
  // Prefix caching: extends s.block_keys to the full blocks of s's first `tokens` tokens.
  void ExtendKeys(Sequence& s, int32_t tokens) const;
  // The number of cached blocks a sequence without blocks can start from (whole blocks
  // of its known keys, leaving at least its last token to compute); their ids are
  // appended to `hits` unless null. 0 with prefix caching off.
  int32_t MatchPrefix(const Sequence& s, std::vector<int32_t>* hits, bool* rejected = nullptr) const;
  // Registers s's blocks that are now fully computed.
  void RegisterComputed(Sequence& s);
  // Prefix caching: the cached partial block continuing s's `hits` leading cached blocks
  // (ids in `hit_ids`) best, leaving at least s's last token to compute.
  BlockPool::PartialHit MatchPartial(const Sequence& s, int32_t hits, std::span<const int32_t> hit_ids) const;
  // Releases s's blocks; with `keep_tail` (its computed KV is sound) and prefix caching, its
  // partly computed last block is first registered as a partial block.
  void ReleaseBlocks(Sequence& s, bool keep_tail);
  SchedulerConfig config_;
  std::unique_ptr<const PrefillPolicy> policy_;
  BlockPool pool_;
  std::deque<std::unique_ptr<Sequence>> waiting_;  // head = next to admit
  std::vector<std::unique_ptr<Sequence>> running_; // admission order
  uint64_t next_admit_order_ = 1;
  int64_t num_preemptions_ = 0;
  int64_t prefix_query_tokens_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  int64_t prefix_rejected_hits_ = 0;
  std::vector<int32_t> scratch_blocks_;            // MatchPrefix results during admission
  mutable std::vector<int32_t> scratch_tokens_;    // one block's ids (ExtendKeys, Register)
  int32_t decode_stall_ = 0;                       // prefill-only steps in a row while
                                                   // sequences waited to decode
  Admission admission_;                            // one slot per kWaiting sequence
                                                   // (and per admitted one not yet added)
};

}  // namespace llmserve
