// PrefillPolicy: how much prompt work a step takes beside its decode rows. The Scheduler
// asks its policy twice a step and is otherwise the same for every policy:
//
//   shape  = policy.Shape({decode ready?, prompt work?, prefill-only steps in a row})
//   kDecodeThenPrefill:  plan the decode rows (may preempt), then
//                        budget = policy.Budget({decode rows, pending prompt tokens, room})
//                        and plan prompt chunks / admissions within it
//   kPrefillOnly:        budget = policy.Budget({0, pending, room}); prompt work only, and a
//                        decode step instead when no prompt work could be planned
//   kDecodeOnly:         the decode rows only
//
// Policies (PrefillPolicyConfig::kind):
//   bulk       every step: decode rows, then prompt tokens up to max_batched_tokens.
//   separate   a step is prefill-only while prompt work exists, unless sequences ready to
//              decode have waited max_decode_stall prefill-only steps; else decode-only.
//   piggyback  (rows R, horizon H) fill decode steps with prompt tokens up to R rows:
//     - F = R − D free rows beside the step's D decode rows. Up to about R rows a CPU
//       decode step costs one read of the weights whatever its rows (the small-batch
//       kernel's two register tiles; model/ops/small_gemm.h), so prompt tokens can fill
//       it almost for free. They do when F >= kMinPiggybackRows and the P pending prompt
//       tokens (running and waiting) fit in H such steps (P <= F·H); otherwise the step
//       is a bulk one: a step that is compute-bound already gains nothing from thin
//       prompt slices, and no prompt is spread over more than H steps.
//     - Piggybacking with D > 0: the budget is F.
//     - Piggybacking with D = 0: the bulk budget, but for the first prefill item only. A
//       lone prompt prefills at full speed; a burst is started one sequence per step, so
//       that its sequences do not prefill, decode and finish in lockstep (which would
//       leave no decode step to carry the next burst's prompts). A burst too big to
//       piggyback (P > R·H) starts in bulk.
//
// A policy is immutable and holds no state of its own (the separate policy's count of
// prefill-only steps is the Scheduler's, passed in StepStart): the plan is a pure function
// of the scheduler's config and inputs.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "absl/status/status.h"

namespace llmserve {

// The piggyback policy gives a decode step fewer free rows than this no prompt tokens:
// slices that thin would stretch a prompt over too many steps.
inline constexpr int32_t kMinPiggybackRows = 4;

enum class PrefillPolicyKind : uint8_t { kBulk, kSeparate, kPiggyback };

// "bulk" / "separate" / "piggyback".
const char* PrefillPolicyKindName(PrefillPolicyKind k);

// A policy, described plainly (what SchedulerConfig's policy fields stand for).
struct PrefillPolicyConfig {
  PrefillPolicyKind kind = PrefillPolicyKind::kBulk;
  int32_t max_decode_stall = 4;  // separate: prefill-only steps in a row while decodes wait, >= 1
  int32_t rows = 12;             // piggyback: fill decode steps up to this many rows, >= 1
  int32_t horizon = 128;         // piggyback: only while pending prompt tokens fit in this many
                                 // filled steps, >= 1

  // INVALID_ARGUMENT naming the bad field.
  absl::Status Validate() const;
  bool operator==(const PrefillPolicyConfig&) const = default;
};

// What a step is made of (see the top of this file).
enum class StepShape : uint8_t { kDecodeThenPrefill, kPrefillOnly, kDecodeOnly };

// What the scheduler knows before it plans a step.
struct StepStart {
  bool decode_ready = false;    // some running sequence is ready to decode
  bool prompt_work = false;     // some sequence has prompt tokens to compute
  int32_t prefill_steps = 0;    // prefill-only steps in a row while sequences waited to decode
};

// What the scheduler knows once the step's decode rows are planned.
struct StepState {
  int32_t decode_rows = 0;            // decode tokens planned in this step
  int64_t pending_prompt_tokens = 0;  // prompt tokens still to compute, running and waiting
  int32_t room = 0;                   // max_batched_tokens − decode_rows
};

// The step's prompt work: at most `tokens` tokens in at most `max_items` items.
struct PrefillBudget {
  static constexpr int32_t kUnlimited = std::numeric_limits<int32_t>::max();
  int32_t tokens = 0;
  int32_t max_items = kUnlimited;
  bool operator==(const PrefillBudget&) const = default;
};

// Immutable; thread-compatible.
class PrefillPolicy {
 public:
  virtual ~PrefillPolicy() = default;
  // Which kinds of work the step takes.
  virtual StepShape Shape(const StepStart& start) const = 0;
  // The step's prompt budget after its decode rows.
  virtual PrefillBudget Budget(const StepState& state) const = 0;
  // One line for the log: the policy and its parameters.
  virtual std::string Describe() const = 0;
};

// The policy `config` describes; `config` must be valid.
std::unique_ptr<const PrefillPolicy> MakePrefillPolicy(const PrefillPolicyConfig& config);

}  // namespace llmserve
