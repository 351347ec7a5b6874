// Engine: the one thread that owns the model, the KV cache and the scheduler.
//
//   any thread:  Submit(request) ──▶ inbox ◀── Abort(id, reason)
//   engine thread, forever:
//     drain inbox (new sequences into the scheduler, aborts)   # and expire deadlines
//     plan    = scheduler.Schedule()
//     logits  = model.Forward(batch built from plan)           # one ragged batch
//     ids     = per-request RequestSampler on each sampling row
//     done    = scheduler.Update(plan, ids)
//     emit    : OutputProcessor (output_processor.h): detokenize, match stop strings,
//               push deltas / finals to the channels; stop-string ends go back through
//               scheduler.Finish (the scheduler alone writes finish states)
//
// Every submitted request gets exactly one final event. A failed Forward fails that step's
// requests (kFinishedError, INTERNAL with the reason), frees their blocks, and the engine
// goes on. Aborts take effect at the next step boundary.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "constraint/constraint_spec.h"
#include "model/sampler.h"
#include "model/sampling_params.h"
#include "model/tokenizer/tokenizer.h"
#include "scheduler/engine_model.h"
#include "scheduler/mask_worker.h"
#include "scheduler/request_channel.h"
#include "scheduler/scheduler.h"

namespace llmserve {

struct EngineConfig {
  SchedulerConfig scheduler;    // block_size must equal the model's cache; num_blocks at most
                                // the cache's (0: all of it); max_context 0: the model's
  size_t channel_capacity = 32; // deltas queued per request before they coalesce
  std::function<absl::Time()> clock = absl::Now;  // every engine timestamp (tests inject one);
                                                  // request deadlines are on this clock
  constraint::CompileLimits constraint_limits;  // bounds on compiling a request's constraint
  size_t constraint_cache_entries = 64;         // compiled constraints kept for reuse

  absl::Status Validate() const;
};

// One request, already tokenized and validated by the caller's edge.
struct EngineRequest {
  std::string request_id;       // the client's id (logs), may be empty
  std::vector<int32_t> prompt;  // non-empty, ids in [0, vocab)
  SamplingParams sampling;
  StopConditions stop;
  absl::Time deadline = absl::InfiniteFuture();  // aborted with kFinishedDeadline after it
  std::string cache_salt;       // prefix caching: shares cached blocks only with equal salts
  // The output must match this (constraints()->Get compiles it); null: unconstrained.
  std::shared_ptr<constraint::CompiledConstraint> constraint;
};

// What Submit returns: the engine's id for Abort, and the channel to read.
struct RequestHandle {
  int64_t id = 0;
  std::shared_ptr<RequestChannel> channel;
};

// A snapshot for GetServerInfo, health and metrics.
struct EngineStats {
  int32_t running = 0;
  int32_t waiting = 0;          // in the inbox or the waiting queue (incl. preempted)
  int32_t blocks_total = 0;
  int32_t blocks_used = 0;
  int32_t block_size = 0;
  int64_t preemptions = 0;      // since start
  bool prefix_caching = false;
  int32_t blocks_cached = 0;    // free blocks still holding a cached prefix (evictable)
  int64_t prefix_query_tokens = 0;  // since start: tokens looked up in the prefix cache
  int64_t prefix_hit_tokens = 0;    // since start: of those, taken from the cache
  int64_t prefix_evictions = 0;     // since start: cached blocks evicted for new ones
  int64_t steps = 0;            // since start
  bool draining = false;
};

// What one step did (for metrics; durations are wall time).
struct StepReport {
  int32_t decode_tokens = 0;
  int32_t prefill_tokens = 0;
  int32_t preemptions = 0;
  absl::Duration schedule, forward, sample, emit;
  int32_t constraint_masks = 0;         // masks computed for constrained rows
  absl::Duration constraint_mask_time;  // their total time (overlapping the forward pass)
  EngineStats stats;            // after the step
};

// Receives engine events on the engine thread; must not block. Default: ignore.
class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  // After every non-empty step.
  virtual void OnStep(const StepReport& /*report*/) {}
  // When a request ends (any reason), with its final sequence state.
  virtual void OnFinished(const Sequence& /*seq*/, const GenerationFinal& /*final_event*/) {}
  // For each generated token put into a delta (delivered to the client), sampled at `now`;
  // `prev` is the request's previous delivered token's time (InfinitePast for its first).
  virtual void OnToken(const Sequence& /*seq*/, absl::Time /*prev*/, absl::Time /*now*/) {}
  // Whenever the engine publishes its stats (every step, also after aborts and at shutdown).
  virtual void OnStats(const EngineStats& /*stats*/) {}
};

class OutputProcessor;

class Engine {
 public:
  // `tokenizer` (may be null: deltas then carry no text and stop strings are refused)
  // and `observer` (may be null) must outlive the engine. Does not start the thread.
  static absl::StatusOr<std::unique_ptr<Engine>> Create(const EngineConfig& config,
                                                        std::unique_ptr<EngineModel> model,
                                                        const Tokenizer* tokenizer,
                                                        EngineObserver* observer = nullptr);
  // Stop()s.
  ~Engine();

  // Starts the engine thread.
  void Start();

  // Thread-safe. Queues a request. INVALID_ARGUMENT: bad parameters, ids outside the
  // vocabulary, prompt + max_tokens beyond the context, or a request that could never fit
  // the whole KV cache; RESOURCE_EXHAUSTED: max_waiting requests already wait;
  // UNAVAILABLE: draining or stopped.
  absl::StatusOr<RequestHandle> Submit(EngineRequest request);

  // Thread-safe. Ends request `id` with `reason` (kFinishedCancelled or
  // kFinishedDeadline) at the next step boundary; no-op if it already ended.
  void Abort(int64_t id, SequenceState reason);

  // Thread-safe. Stops accepting (Submit → UNAVAILABLE); requests in flight go on.
  void BeginDrain();
  // Thread-safe. Waits until no request is in flight, up to `timeout`; true if idle.
  bool WaitIdle(absl::Duration timeout);
  // Thread-safe. Ends every request still in flight (kFinishedCancelled), joins the thread.
  void Stop();

  // Thread-safe.
  EngineStats Stats() const;
  const EngineConfig& config() const { return config_; }
  const EngineModel& model() const { return *model_; }
  // Thread-safe. Compiles and caches request constraints against this engine's
  // vocabulary; null when the engine has no tokenizer (constraints are then refused).
  constraint::ConstraintCache* constraints() const { return constraints_.get(); }

 private:
  struct Active;   // per-request step state (sampler, deadline)
  struct Inbox;    // messages from other threads
  struct Pending;  // a submitted request on its way to the engine thread

  Engine(const EngineConfig& config, std::unique_ptr<EngineModel> model, const Tokenizer* tokenizer,
         EngineObserver* observer);
  void Loop();

  // Thread-safe. Submit's checks that need no lock: what only the engine knows (sampling
  // and stop parameters, the vocabulary, the tokenizer) and the scheduler's own
  // admission().Check; max_waiting is admission().Reserve under the inbox lock.
  absl::Status ValidateRequest(const EngineRequest& request) const;
  // Thread-safe. A fresh seed for a request without one.
  uint64_t DrawSeed();

  // Engine thread only (or Stop()'s thread when the engine never started).
  // Sleeps while nothing is held and the inbox is empty; moves the inbox's messages into
  // drained_adds_ / drained_aborts_. False when the engine must stop.
  bool WaitAndDrain();
  // Adds drained requests to the scheduler, applies drained aborts.
  void ApplyDrained(absl::Time now);
  // Ends every held request whose deadline has passed.
  void ExpireDeadlines(absl::Time now);
  // One step: schedule, forward, sample, update, emit (engine_step.cc).
  void RunStep();
  // Fills the batch members from `plan` and runs the model into logits_.
  absl::Status Forward(const SchedulePlan& plan);
  // Samples every sampling item of `plan` from logits_ into sampled_ / sampled_ids_.
  void Sample(const SchedulePlan& plan);
  // Hands the step's constrained rows to the MaskWorker (returns at once).
  void StartMasks(const SchedulePlan& plan);
  // Applies the request's mask (computed during the forward pass) to its logits row:
  // disallowed tokens get -inf. An error (a bound the constraint hit, or no token
  // allowed) is recorded for the request.
  void ApplyConstraint(const Sequence& seq, Active& active, std::span<float> logits);
  // After Update: the output processor's deltas; ends stop-string matches through the
  // scheduler, then every finished request.
  void Emit(const SchedulePlan& plan, std::vector<std::unique_ptr<Sequence>> finished, absl::Time now);
  // A failed Forward: the step's requests end with kFinishedError and `error`.
  void FailStep(const SchedulePlan& plan, const absl::Status& error, absl::Time now);
  // Forgets a request the scheduler finished and queues it for its final (see Publish).
  void FinishRequest(std::unique_ptr<Sequence> seq, const absl::Status& status);
  // Publishes Stats() to other threads, then has the output processor push the finals of
  // the queued finished requests, then counts them out of in-flight. In that order, a
  // client that starts its next call on seeing a final never finds the ended call still
  // counted as running, and Drain never sees idle before every final is pushed.
  void Publish();
  // The configured clock.
  absl::Time Now() const { return config_.clock(); }
  // Ends everything (inbox and scheduler) with kFinishedCancelled.
  void Shutdown();

  EngineConfig config_;
  std::unique_ptr<EngineModel> model_;
  const Tokenizer* tokenizer_;
  EngineObserver* observer_;
  const int32_t vocab_size_;   // the model's, cached for Submit
  std::unique_ptr<Inbox> inbox_;
  std::unique_ptr<constraint::ConstraintCache> constraints_;  // thread-safe

  std::mutex seed_mu_;
  uint64_t seed_state_ ABSL_GUARDED_BY(seed_mu_);  // splitmix64 state, seeded from random_device

  std::mutex stop_mu_;  // serializes Start and Stop
  bool started_ ABSL_GUARDED_BY(stop_mu_) = false;
  bool shut_down_ ABSL_GUARDED_BY(stop_mu_) = false;

  // Engine thread only. Buffers are cleared, not freed, between steps (no per-step
  // allocation in steady state).
  std::unique_ptr<Scheduler> scheduler_;         // its admission() is read by Submit too
  std::unique_ptr<OutputProcessor> outputs_;     // NewRequest is called from Submit too
  absl::flat_hash_map<int64_t, std::unique_ptr<Active>> active_;
  std::vector<Pending> drained_adds_;
  std::vector<std::pair<int64_t, SequenceState>> drained_aborts_;
  std::vector<int32_t> tokens_;                  // batch rows
  std::vector<ForwardBatch::Seq> batch_seqs_;
  std::vector<int32_t> logit_rows_;
  std::vector<float> logits_;                    // [samples, vocab]
  std::vector<int32_t> sampled_ids_;             // per sampling item
  std::vector<SampledToken> sampled_;            // per sampling item
  std::vector<int64_t> scratch_ids_;             // expired / stop-matched ids
  std::vector<std::pair<int64_t, absl::Status>> constraint_errors_;  // this step's
  std::unique_ptr<MaskWorker> mask_worker_;      // made with the first constrained step
  std::vector<MaskWorker::Job> mask_jobs_;       // this step's
  std::vector<std::pair<std::unique_ptr<Sequence>, absl::Status>> finishing_;  // finals Publish pushes
  absl::Time next_deadline_ = absl::InfiniteFuture();  // lower bound of held deadlines
  bool stalled_ = false;           // held sequences but the last plan was empty
  int64_t steps_ = 0;
  std::thread thread_;
};

}  // namespace llmserve
