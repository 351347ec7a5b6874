// Metrics: llmserve's Prometheus metrics (vLLM's names and semantics under a prefix; the
// list is a contract with deploy/prometheus and deploy/grafana), fed by the engine as its
// observer and by the Generate reactor for requests refused at the door.
//
//   engine thread ── OnStats ──▶ gauges: num_requests_running/_waiting, kv_cache_*;
//                                prefix_cache_queries_total, prefix_cache_hits_total,
//                                prefix_cache_evictions_total (the engine's running counts)
//                 ── OnStep  ──▶ iteration_tokens, engine_step_duration_seconds{phase},
//                                num_preemptions_total, constraint_mask_seconds
//                 ── OnToken ──▶ generation_tokens_total, inter_token_latency_seconds,
//                                prompt_tokens_total (at a request's first token)
//                 ── OnFinished ▶ request_success_total{finished_reason} or
//                                request_failure_total{code="internal"}; per-request
//                                histograms from the sequence's timestamps
//   gRPC threads ── RecordRejected ▶ request_failure_total{code}
//                ── RecordAbortedBeforeRequest ▶ request_success_total{finished_reason="abort"}
//                ── RecordUnauthenticated ▶ unauthenticated_requests_total (any RPC, no or a wrong API key)
//   gRPC and HTTP threads ── RecordConstraintCompile ▶ constrained_requests_total{kind},
//                                constraint_cache_lookups_total{result}, constraint_compile_seconds
//
// Every series carries model_name (a constant label of each family). All label
// combinations are created up front, so recording is lock-free atomics for counters and
// gauges; Histogram::Observe (prometheus-cpp 1.0) holds that histogram's own mutex for a
// few bucket increments, contended only by a scrape of that histogram. Never blocks on I/O,
// except that at log level trace OnStep also logs one line per step (docs/OPERATIONS.md).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "constraint/constraint_spec.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "scheduler/engine.h"

namespace llmserve {

// The labels of <prefix>engine_config_info (value 1), besides model_name.
struct MetricsConfigInfo {
  int32_t block_size = 0;
  std::string weight_dtype;
  std::string kv_dtype;
  int32_t threads = 0;
  int32_t max_running = 0;
  int32_t max_batched_tokens = 0;
  std::string step_policy;
  std::string version;
};

// Thread-safe: the engine thread calls the observer hooks, gRPC threads RecordRejected.
class Metrics final : public EngineObserver {
 public:
  // Registers every family in `registry` (which must outlive this object) as
  // `prefix` + name. INVALID_ARGUMENT for a prefix not matching [a-zA-Z_:][a-zA-Z0-9_:]*
  // or a name the registry refuses (e.g. registered twice).
  static absl::StatusOr<std::unique_ptr<Metrics>> Create(prometheus::Registry& registry, const std::string& prefix,
                                                         const std::string& model_name, const MetricsConfigInfo& info);

  // Gauges: running, waiting, KV blocks and usage.
  void OnStats(const EngineStats& stats) override;
  // Tokens per step, phase durations, preemptions.
  void OnStep(const StepReport& report) override;
  // Generated tokens, inter-token latency, prompt tokens (at the first token).
  void OnToken(const Sequence& seq, absl::Time prev, absl::Time now) override;
  // Success / failure counters and the per-request histograms.
  void OnFinished(const Sequence& seq, const GenerationFinal& final_event) override;

  // A Generate call refused before it reached the engine: INVALID_ARGUMENT,
  // RESOURCE_EXHAUSTED, UNAVAILABLE; any other code counts as internal.
  void RecordRejected(absl::StatusCode code);
  // A Generate call that ended (client cancel, deadline) before its request message
  // arrived: an abort like a cancel after admission, not a failure nobody saw.
  void RecordAbortedBeforeRequest();
  // An RPC (any llmserve.v1 method) refused for a missing or wrong API key. Counted apart
  // from request_failure_total: a scanner knocking on the port is not an error rate.
  void RecordUnauthenticated();
  // A request's constraint looked up in (and on a miss compiled into) the engine's
  // constraint cache, successfully or not; `time` is the lookup and compile.
  void RecordConstraintCompile(constraint::ConstraintKind kind, bool cache_hit, absl::Duration time);

  // The failure label for `code`: invalid_argument, resource_exhausted, unavailable, internal.
  static const char* FailureCodeLabel(absl::StatusCode code);
  // The finished_reason label for a successful state (stop, length, abort); null for others.
  static const char* FinishedReasonLabel(SequenceState state);

 private:
  Metrics() = default;

  enum Reason { kStop, kLength, kAbort, kNumReasons };
  enum Code { kInvalidArgument, kResourceExhausted, kUnavailable, kInternal, kNumCodes };
  enum Phase { kSchedule, kForward, kSample, kEmit, kNumPhases };

  prometheus::Gauge* running_ = nullptr;
  prometheus::Gauge* waiting_ = nullptr;
  prometheus::Gauge* kv_usage_ = nullptr;
  prometheus::Gauge* kv_blocks_total_ = nullptr;
  prometheus::Gauge* kv_blocks_used_ = nullptr;
  prometheus::Gauge* kv_blocks_cached_ = nullptr;
  prometheus::Counter* prefix_queries_ = nullptr;
  prometheus::Counter* prefix_hits_ = nullptr;
  prometheus::Counter* prefix_evictions_ = nullptr;
  int64_t last_prefix_queries_ = 0, last_prefix_hits_ = 0, last_prefix_evictions_ = 0;  // engine thread
  prometheus::Counter* prompt_tokens_ = nullptr;
  prometheus::Counter* generation_tokens_ = nullptr;
  prometheus::Counter* preemptions_ = nullptr;
  prometheus::Counter* unauthenticated_ = nullptr;
  std::array<prometheus::Counter*, kNumReasons> success_{};
  std::array<prometheus::Counter*, kNumCodes> failure_{};
  prometheus::Histogram* ttft_ = nullptr;
  prometheus::Histogram* itl_ = nullptr;
  prometheus::Histogram* e2e_ = nullptr;
  prometheus::Histogram* queue_ = nullptr;
  prometheus::Histogram* prefill_ = nullptr;
  prometheus::Histogram* decode_ = nullptr;
  prometheus::Histogram* prompt_len_ = nullptr;
  prometheus::Histogram* generation_len_ = nullptr;
  prometheus::Histogram* iteration_tokens_ = nullptr;
  std::array<prometheus::Histogram*, kNumPhases> step_{};
  static constexpr int kNumConstraintKinds = 5;  // constraint::ConstraintKind's values
  std::array<prometheus::Counter*, kNumConstraintKinds> constrained_{};
  prometheus::Counter* constraint_hits_ = nullptr;
  prometheus::Counter* constraint_misses_ = nullptr;
  prometheus::Histogram* constraint_compile_ = nullptr;
  prometheus::Histogram* constraint_mask_ = nullptr;
  std::vector<double> mask_increments_;  // engine thread: OnStep's bucket increments
};

// Bucket boundaries (server/metrics_buckets.cc).
// Request latencies (TTFT, e2e, queue, prefill, decode): 1 ms to ~10 minutes.
const prometheus::Histogram::BucketBoundaries& RequestLatencyBuckets();
// Inter-token latency: 1 ms to 20 s.
const prometheus::Histogram::BucketBoundaries& InterTokenLatencyBuckets();
// Engine step phases: 50 us to 10 s.
const prometheus::Histogram::BucketBoundaries& StepDurationBuckets();
// Prompt / generation tokens per request: 1, 2, 5, 10, 20, 50, ... 10000.
const prometheus::Histogram::BucketBoundaries& RequestTokenBuckets();
// Tokens per engine step: 1, 2, 4, ... 8192.
const prometheus::Histogram::BucketBoundaries& IterationTokenBuckets();
// Compiling a request's constraint: 100 us to 60 s.
const prometheus::Histogram::BucketBoundaries& ConstraintCompileBuckets();
// One constraint mask (the allowed tokens at one step of one request): 1 us to 10 s.
const prometheus::Histogram::BucketBoundaries& ConstraintMaskBuckets();

}  // namespace llmserve
