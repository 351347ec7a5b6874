// Whether piggybacking prompt tokens on decode steps (the piggyback prefill policy,
// scheduler/prefill_policy.h) pays on this model and machine, measured once at start-up
// for --piggyback auto (server/prefill_policy_choice.h turns the figures into a policy).
//
// The rule compares the steady state of the two ways to serve a stream of requests whose
// prompts are about as long as their outputs. Piggybacked, a step of T = filled_rows rows
// carries about T/2 decode and T/2 prompt rows (the sequences whose prompts ride along do
// not decode meanwhile). In lockstep with bulk prefill, the same work costs T/2 ÷ U of a
// decode step of U = decode_rows rows plus T/2 bulk prompt tokens. Gain() is the second
// over the first; piggybacking pays above kPiggybackPays (1.1), the margin for the
// staggered start and end of a burst that lockstep does not have. It pays where a decode
// step's cost is the read of the weights (memory-bound: 8 and 12 rows cost about the same)
// and a bulk prompt token is dear; it loses where extra rows cost in proportion (small or
// quantized models, whose steps are short).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "model/kv_cache.h"
#include "model/transformer.h"

namespace llmserve {

inline constexpr double kPiggybackPays = 1.1;

// The decode step piggybacking is weighed against: 2/3 of the filled step's rows (8 of 12).
inline int32_t UsualDecodeRows(int32_t filled_rows) { return std::max(1, filled_rows * 2 / 3); }

struct PiggybackTimings {
  int32_t decode_rows = 8;          // rows of the usual decode step timed
  int32_t filled_rows = 12;         // rows of the filled one (mixed_step_tokens)
  double decode_s = 0;              // median time of a decode step of decode_rows
  double filled_s = 0;              // median time of one of filled_rows
  double prefill_token_s = 0;       // a bulk prefill step's time per prompt token

  // Lockstep over piggybacked cost of the same work (above); 0 without filled rows.
  double Gain() const;
  // True when Gain() >= kPiggybackPays.
  bool Pays() const;
  // One line for the log: the three figures and the verdict.
  std::string Describe() const;
};

// Times decode steps of `decode_rows` and `filled_rows` sequences (context 64 tokens,
// alternating, seven each after a warm-up) and a 64-token prefill on `model` against
// `cache`, whose blocks it uses as scratch: call before any sequence holds blocks.
// Runs on a thread of its own with `threads` OpenMP threads (ApplyThreadCount), which
// exits before this returns (see the .cc: an OpenMP team left on the caller's thread
// slows every later engine step). FAILED_PRECONDITION
// when the cache or the model's context is too small to lay out the batches.
absl::StatusOr<PiggybackTimings> MeasurePiggyback(Transformer& model, KvCache& cache, int32_t decode_rows,
                                                  int32_t filled_rows, int threads);

}  // namespace llmserve
