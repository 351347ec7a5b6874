// Engine internals shared by engine.cc (threads, inbox), engine_step.cc (schedule,
// forward, sample) and engine_emit.cc (detokenize, stop strings, deltas, finals).
//
//   Submit ──(caller thread: validate, build Sequence + Active)──▶ Inbox.adds ─┐
//   Abort  ───────────────────────────────────────────────────▶ Inbox.aborts ─┤ one mutex
//   Stats / WaitIdle ◀── Inbox.stats, Inbox.in_flight ◀── Publish() per step ─┘
//   engine thread: waits on Inbox.wake only when it holds no sequence.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "model/sampler.h"
#include "model/stop_matcher.h"
#include "model/tokenizer/incremental_decoder.h"
#include "scheduler/engine.h"

namespace llmserve {

// One request's engine-side state. Built by Submit on the caller's thread, owned by the
// engine thread from the moment it is drained from the inbox.
struct Engine::Active {
  Active(const SamplingParams& params, uint64_t seed_in, const Tokenizer* tokenizer,
         const std::vector<std::string>& stops, std::shared_ptr<RequestChannel> ch, absl::Time deadline_in)
      : channel(std::move(ch)), sampler(params, seed_in), seed(seed_in), deadline(deadline_in),
        want_logprobs(params.want_logprobs) {
    if (tokenizer != nullptr) decoder.emplace(*tokenizer);
    if (!stops.empty()) matcher.emplace(stops);
  }

  std::shared_ptr<RequestChannel> channel;
  RequestSampler sampler;
  std::optional<IncrementalDecoder> decoder;   // with a tokenizer
  std::optional<StopStringMatcher> matcher;    // with stop strings
  uint64_t seed;
  absl::Time deadline;
  bool want_logprobs;
  size_t emitted = 0;               // generated ids already put into deltas
  absl::Time last_emitted = absl::InfinitePast();  // when the latest of them was sampled
  size_t stop_index = 0;            // the matched stop string (matcher->matched())
  GenerationDelta pending;          // built during emit, pushed before the final
};

// A submitted request on its way to the engine thread.
struct Engine::Pending {
  std::unique_ptr<Sequence> seq;
  std::unique_ptr<Active> active;
};

// Messages from other threads, and what the engine publishes back. One mutex.
struct Engine::Inbox {
  std::mutex mu;
  std::condition_variable wake;  // the engine thread: new messages or stop
  std::condition_variable idle;  // WaitIdle: in_flight reached 0
  std::vector<Pending> adds ABSL_GUARDED_BY(mu);
  std::vector<std::pair<int64_t, SequenceState>> aborts ABSL_GUARDED_BY(mu);
  bool stop ABSL_GUARDED_BY(mu) = false;       // Stop() called: no more submits
  bool draining ABSL_GUARDED_BY(mu) = false;   // BeginDrain() called
  int64_t next_id ABSL_GUARDED_BY(mu) = 1;
  int64_t in_flight ABSL_GUARDED_BY(mu) = 0;   // submitted, final not yet published
  EngineStats stats ABSL_GUARDED_BY(mu);        // as of the last Publish()
};

}  // namespace llmserve
