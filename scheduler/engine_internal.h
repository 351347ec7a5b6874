// Engine internals shared by engine.cc (threads, inbox) and engine_step.cc (schedule,
// forward, sample, update); the output side is OutputProcessor (output_processor.h).
//
//   Submit ──(caller thread: validate, build Sequence, Active, output state)─▶ Inbox.adds ─┐
//   Abort  ───────────────────────────────────────────────────▶ Inbox.aborts ─┤ one mutex
//   Stats / WaitIdle ◀── Inbox.stats, Inbox.in_flight ◀── Publish() per step ─┘
//   engine thread: waits on Inbox.wake only when it holds no sequence.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "constraint/matcher.h"
#include "model/sampler.h"
#include "scheduler/engine.h"
#include "scheduler/output_processor.h"

namespace llmserve {

// One request's step-core state (its output side is OutputProcessor::Request). Built by
// Submit on the caller's thread, owned by the engine thread from the moment it is drained
// from the inbox.
struct Engine::Active {
  Active(const SamplingParams& params, uint64_t seed, absl::Time deadline_in)
      : sampler(params, seed), deadline(deadline_in) {}

  RequestSampler sampler;
  absl::Time deadline;
  // The request's constraint: advanced with each sampled token; its mask is applied to
  // the logits before sampling. Survives preemption (generated tokens are kept).
  std::unique_ptr<constraint::Matcher> matcher;
  constraint::TokenMask mask;     // this step's, computed by the MaskWorker
  absl::Status mask_status;
  absl::Duration mask_time;
};

// A submitted request on its way to the engine thread.
struct Engine::Pending {
  std::unique_ptr<Sequence> seq;
  std::unique_ptr<Active> active;
  std::unique_ptr<OutputProcessor::Request> output;
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
