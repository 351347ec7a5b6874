// Whether piggybacking prompt tokens on decode steps (SchedulerConfig::prefill_spread_steps)
// pays on this model and machine, measured once at start-up.
//
// It pays when a decode step filled up to mixed_step_tokens rows costs barely more than
// one of the usual size: then its extra rows are almost free, while the same prompt
// tokens in a bulk prefill step cost their full arithmetic. A 1B model on a 2-core CPU is
// like that (its decode steps wait on the weight stream: 8 and 12 rows both ~70 ms); a
// 125M one is not (8 rows 9 ms, 12 rows 10.6: 0.4 ms a row, what bulk prefill costs).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "model/kv_cache.h"
#include "model/transformer.h"

namespace llmserve {

struct PiggybackTimings {
  int32_t decode_rows = 8;          // rows of the usual decode step timed
  int32_t filled_rows = 12;         // rows of the filled one (mixed_step_tokens)
  double decode_s = 0;              // median time of a decode step of decode_rows
  double filled_s = 0;              // median time of one of filled_rows
  double prefill_token_s = 0;       // a bulk prefill step's time per prompt token

  // Extra time per row of the filled step over the usual one (0 when it took less).
  double ExtraRowSeconds() const;
  // True when an extra row costs less than half of a bulk prefill token.
  bool Pays() const;
  // One line for the log: the three figures and the verdict.
  std::string Describe() const;
};

// Times decode steps of `decode_rows` and `filled_rows` sequences (context 64 tokens,
// alternating, three each after a warm-up) and a 64-token prefill on `model` against
// `cache`, whose blocks it uses as scratch: call before any sequence holds blocks.
// Runs on a thread of its own with `threads` OpenMP threads (ApplyThreadCount), which
// exits before this returns (see the .cc: an OpenMP team left on the caller's thread
// slows every later engine step). FAILED_PRECONDITION
// when the cache or the model's context is too small to lay out the batches.
absl::StatusOr<PiggybackTimings> MeasurePiggyback(Transformer& model, KvCache& cache, int32_t decode_rows,
                                                  int32_t filled_rows, int threads);

}  // namespace llmserve
