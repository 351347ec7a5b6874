// OutputProcessor: the engine's output side. After the step core's Update it turns each
// sampled sequence's new ids into a delta (incremental detokenization; stop strings held
// back and matched across tokens), pushes deltas and each request's one final to its
// channel, and reports tokens, finals and per-request stats to the observer and the log.
//
//   step core:  schedule → forward → sample → update ─▶ Emit(plan, sampled, stop_matched)
//               scheduler.Finish(stop_matched ids)  ─▶ Finish(seq, status) per finished one
//
// It decides no sequence's state: a stop string matched by a running sequence is handed
// back to the step core, which ends it through the scheduler; one found only after the
// scheduler ended the sequence by length is Scheduler::StopStringFound's to record.
// A sequence's generated ids are emitted exactly once: Request::emitted counts those
// already in deltas, so a preempted sequence (whose ids stay, and which is recomputed)
// never repeats one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "model/sampler.h"
#include "model/stop_matcher.h"
#include "model/tokenizer/incremental_decoder.h"
#include "model/tokenizer/tokenizer.h"
#include "scheduler/engine.h"
#include "scheduler/request_channel.h"
#include "scheduler/scheduler.h"
#include "scheduler/sequence.h"

namespace llmserve {

// Engine thread only, except NewRequest.
class OutputProcessor {
 public:
  // One request's output state.
  struct Request {
    std::shared_ptr<RequestChannel> channel;
    std::optional<IncrementalDecoder> decoder;   // with a tokenizer
    std::optional<StopStringMatcher> matcher;    // with stop strings
    uint64_t seed = 0;                           // reported in the final
    bool want_logprobs = false;
    size_t emitted = 0;                          // generated ids already put into deltas
    absl::Time last_emitted = absl::InfinitePast();  // when the latest of them was sampled
    size_t stop_index = 0;                       // the matched stop string (matcher->matched())
    GenerationDelta pending;                     // built during Emit, pushed before the final
  };

  // `scheduler` (records late stop strings), `tokenizer` (may be null: no text) and
  // `observer` (may be null) must outlive the processor.
  OutputProcessor(const Scheduler& scheduler, const Tokenizer* tokenizer, EngineObserver* observer);

  // Thread-safe (reads only the tokenizer). The output state of new sequence `seq`
  // (sampling seed set), writing to `channel`; its decoder is primed with the prompt.
  std::unique_ptr<Request> NewRequest(const Sequence& seq, std::shared_ptr<RequestChannel> channel) const;
  // Takes over request `id`'s output state.
  void Add(int64_t id, std::unique_ptr<Request> request);

  // After Update, for the plan's sampling items (`sampled`: one per item, in plan order;
  // their logprob data is moved out): new ids into each request's delta; pushes the
  // deltas of sequences still running; appends to `stop_matched` the ids of running
  // sequences whose text reached a stop string (the caller ends them via the scheduler).
  void Emit(const SchedulePlan& plan, std::span<SampledToken> sampled, std::vector<int64_t>& stop_matched);
  // Ends a request the scheduler has finished: flushes the text, pushes the last delta and
  // the final (with `status` for kFinishedError), tells the observer, logs one line, and
  // forgets the request.
  void Finish(std::unique_ptr<Sequence> seq, const absl::Status& status);

 private:
  // Appends seq's not yet emitted ids (and their text) to r.pending.
  void TakeNewIds(const Sequence& seq, Request& r, SampledToken* sampled);
  // Request `id`'s state; the engine never schedules a sequence it has not added.
  Request& Get(int64_t id);

  const Scheduler& scheduler_;
  const Tokenizer* tokenizer_;
  EngineObserver* observer_;
  absl::flat_hash_map<int64_t, std::unique_ptr<Request>> requests_;
};

}  // namespace llmserve
