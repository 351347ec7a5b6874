#include "server/metrics.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "server/server_config.h"

namespace llmserve {
namespace {

static_assert(static_cast<int>(constraint::ConstraintKind::kGrammar) + 1 == 5,
              "Metrics::kNumConstraintKinds must count every ConstraintKind");

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

bool Reached(absl::Time t) { return t != absl::InfinitePast(); }

// Registers families under one prefix, each with the model_name constant label.
class Families {
 public:
  Families(prometheus::Registry& r, std::string prefix, std::string model_name)
      : r_(r), prefix_(std::move(prefix)), model_(std::move(model_name)) {}

  prometheus::Family<prometheus::Gauge>& Gauges(const std::string& name, const std::string& help) {
    return prometheus::BuildGauge().Name(prefix_ + name).Help(help).Labels(Constant()).Register(r_);
  }
  prometheus::Family<prometheus::Counter>& Counters(const std::string& name, const std::string& help) {
    return prometheus::BuildCounter().Name(prefix_ + name).Help(help).Labels(Constant()).Register(r_);
  }
  prometheus::Family<prometheus::Histogram>& Histograms(const std::string& name, const std::string& help) {
    return prometheus::BuildHistogram().Name(prefix_ + name).Help(help).Labels(Constant()).Register(r_);
  }
  // One unlabelled series of a new family.
  prometheus::Gauge* Gauge(const std::string& name, const std::string& help) { return &Gauges(name, help).Add({}); }
  prometheus::Counter* Counter(const std::string& name, const std::string& help) {
    return &Counters(name, help).Add({});
  }
  prometheus::Histogram* Histogram(const std::string& name, const std::string& help,
                                   const prometheus::Histogram::BucketBoundaries& buckets) {
    return &Histograms(name, help).Add({}, buckets);
  }

 private:
  prometheus::Labels Constant() const { return {{"model_name", model_}}; }

  prometheus::Registry& r_;
  const std::string prefix_;
  const std::string model_;
};

}  // namespace

const char* Metrics::FailureCodeLabel(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument: return "invalid_argument";
    case absl::StatusCode::kResourceExhausted: return "resource_exhausted";
    case absl::StatusCode::kUnavailable: return "unavailable";
    default: return "internal";
  }
}

const char* Metrics::FinishedReasonLabel(SequenceState state) {
  switch (state) {
    case SequenceState::kFinishedEos:
    case SequenceState::kFinishedStopString:
    case SequenceState::kFinishedConstraint:
    case SequenceState::kFinishedStopToken: return "stop";
    case SequenceState::kFinishedLength: return "length";
    case SequenceState::kFinishedCancelled:
    case SequenceState::kFinishedDeadline: return "abort";
    default: return nullptr;
  }
}

absl::StatusOr<std::unique_ptr<Metrics>> Metrics::Create(prometheus::Registry& registry, const std::string& prefix,
                                                         const std::string& model_name,
                                                         const MetricsConfigInfo& info) {
  if (!ValidMetricsPrefix(prefix)) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics prefix '", prefix, "' must match [a-zA-Z_:][a-zA-Z0-9_:]*"));
  }
  std::unique_ptr<Metrics> m(new Metrics());
  try {  // prometheus-cpp reports bad or duplicate names by throwing
    Families f(registry, prefix, model_name);
    m->running_ = f.Gauge("num_requests_running", "Requests in the running batch.");
    m->waiting_ = f.Gauge("num_requests_waiting", "Requests waiting to run (incl. preempted ones).");
    m->kv_usage_ = f.Gauge("kv_cache_usage_perc", "KV cache usage: used blocks / total blocks (0-1).");
    m->kv_blocks_total_ = f.Gauge("kv_cache_num_blocks", "KV cache blocks in the pool.");
    m->kv_blocks_used_ = f.Gauge("kv_cache_blocks_used", "KV cache blocks held by requests.");
    m->kv_blocks_cached_ =
        f.Gauge("kv_cache_blocks_cached", "Free KV cache blocks that still hold a cached prefix (evictable).");
    m->prefix_queries_ = f.Counter("prefix_cache_queries_total", "Tokens looked up in the prefix cache at admission.");
    m->prefix_hits_ = f.Counter("prefix_cache_hits_total", "Tokens found in the prefix cache (not computed).");
    m->prefix_evictions_ =
        f.Counter("prefix_cache_evictions_total", "Cached KV blocks evicted to make room for new ones.");
    f.Gauges("engine_config_info", "Engine configuration (value 1; the settings are labels).")
        .Add({{"block_size", absl::StrCat(info.block_size)},
              {"weight_dtype", info.weight_dtype},
              {"kv_dtype", info.kv_dtype},
              {"threads", absl::StrCat(info.threads)},
              {"max_running", absl::StrCat(info.max_running)},
              {"max_batched_tokens", absl::StrCat(info.max_batched_tokens)},
              {"step_policy", info.step_policy},
              {"version", info.version}})
        .Set(1);

    m->prompt_tokens_ = f.Counter("prompt_tokens_total", "Prompt tokens of requests whose prefill completed.");
    m->generation_tokens_ = f.Counter("generation_tokens_total", "Generated tokens delivered to clients.");
    m->preemptions_ = f.Counter("num_preemptions_total", "Sequences preempted (KV blocks ran out; recomputed later).");
    m->unauthenticated_ = f.Counter("unauthenticated_requests_total",
                                    "RPCs refused (UNAUTHENTICATED) for a missing or wrong API key.");
    auto& success = f.Counters("request_success_total",
                               "Requests finished: stop (EOS, stop string or token), length, abort "
                               "(cancelled or deadline).");
    m->success_[kStop] = &success.Add({{"finished_reason", "stop"}});
    m->success_[kLength] = &success.Add({{"finished_reason", "length"}});
    m->success_[kAbort] = &success.Add({{"finished_reason", "abort"}});
    auto& failure = f.Counters("request_failure_total",
                               "Requests refused at the door or failed by an engine error, by status code.");
    m->failure_[kInvalidArgument] = &failure.Add({{"code", "invalid_argument"}});
    m->failure_[kResourceExhausted] = &failure.Add({{"code", "resource_exhausted"}});
    m->failure_[kUnavailable] = &failure.Add({{"code", "unavailable"}});
    m->failure_[kInternal] = &failure.Add({{"code", "internal"}});

    const auto& lat = RequestLatencyBuckets();
    m->ttft_ = f.Histogram("time_to_first_token_seconds", "Arrival to first generated token.", lat);
    m->itl_ = f.Histogram("inter_token_latency_seconds", "Between consecutive delivered tokens of a request.",
                          InterTokenLatencyBuckets());
    m->e2e_ = f.Histogram("e2e_request_latency_seconds", "Arrival to finish.", lat);
    m->queue_ = f.Histogram("request_queue_time_seconds", "Arrival to first scheduled.", lat);
    m->prefill_ = f.Histogram("request_prefill_time_seconds", "First scheduled to first token.", lat);
    m->decode_ = f.Histogram("request_decode_time_seconds", "First token to finish.", lat);
    m->prompt_len_ = f.Histogram("request_prompt_tokens", "Prompt tokens per finished request.", RequestTokenBuckets());
    m->generation_len_ = f.Histogram("request_generation_tokens", "Generated tokens delivered per finished request.",
                                     RequestTokenBuckets());
    m->iteration_tokens_ = f.Histogram("iteration_tokens", "Tokens (decode + prefill) per engine step.",
                                       IterationTokenBuckets());
    auto& step = f.Histograms("engine_step_duration_seconds",
                              "Engine step wall time by phase: schedule, forward, sample, emit.");
    m->step_[kSchedule] = &step.Add({{"phase", "schedule"}}, StepDurationBuckets());
    m->step_[kForward] = &step.Add({{"phase", "forward"}}, StepDurationBuckets());
    m->step_[kSample] = &step.Add({{"phase", "sample"}}, StepDurationBuckets());
    m->step_[kEmit] = &step.Add({{"phase", "emit"}}, StepDurationBuckets());

    auto& constrained = f.Counters("constrained_requests_total",
                                   "Requests that carried an output constraint, by kind (counted when compiled or "
                                   "looked up, before admission).");
    for (int k = 0; k < kNumConstraintKinds; ++k) {
      m->constrained_[static_cast<size_t>(k)] =
          &constrained.Add({{"kind", constraint::ConstraintKindName(static_cast<constraint::ConstraintKind>(k))}});
    }
    auto& lookups = f.Counters("constraint_cache_lookups_total",
                               "Request constraints looked up in the compiled-constraint cache: hit or miss "
                               "(compiled).");
    m->constraint_hits_ = &lookups.Add({{"result", "hit"}});
    m->constraint_misses_ = &lookups.Add({{"result", "miss"}});
    m->constraint_compile_ = f.Histogram("constraint_compile_seconds",
                                         "Compiling a request's constraint (cache misses only, failures included).",
                                         ConstraintCompileBuckets());
    m->constraint_mask_ = f.Histogram("constraint_mask_seconds",
                                      "Computing and applying one constraint mask (one request, one step; each "
                                      "step's masks observed at their mean).",
                                      ConstraintMaskBuckets());
    m->mask_increments_.assign(ConstraintMaskBuckets().size() + 1, 0.0);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("cannot register the metrics: ", e.what()));
  }
  return m;
}

void Metrics::OnStats(const EngineStats& s) {
  running_->Set(s.running);
  waiting_->Set(s.waiting);
  kv_blocks_total_->Set(s.blocks_total);
  kv_blocks_used_->Set(s.blocks_used);
  kv_usage_->Set(s.blocks_total > 0 ? static_cast<double>(s.blocks_used) / s.blocks_total : 0.0);
  kv_blocks_cached_->Set(s.blocks_cached);
  // The engine's counts are cumulative; the counters take what is new since the last call.
  auto advance = [](prometheus::Counter* c, int64_t now, int64_t& last) {
    if (now > last) c->Increment(static_cast<double>(now - last));
    last = now;
  };
  advance(prefix_queries_, s.prefix_query_tokens, last_prefix_queries_);
  advance(prefix_hits_, s.prefix_hit_tokens, last_prefix_hits_);
  advance(prefix_evictions_, s.prefix_evictions, last_prefix_evictions_);
}

void Metrics::OnStep(const StepReport& r) {
  iteration_tokens_->Observe(r.decode_tokens + r.prefill_tokens);
  step_[kSchedule]->Observe(Seconds(r.schedule));
  step_[kForward]->Observe(Seconds(r.forward));
  step_[kSample]->Observe(Seconds(r.sample));
  step_[kEmit]->Observe(Seconds(r.emit));
  if (r.preemptions > 0) preemptions_->Increment(r.preemptions);
  if (r.constraint_masks > 0) {
    // The step's masks at their mean: one bucket, `constraint_masks` observations.
    const double total = Seconds(r.constraint_mask_time);
    const double mean = total / r.constraint_masks;
    const auto& bounds = ConstraintMaskBuckets();
    const size_t bucket = static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), mean) - bounds.begin());
    std::fill(mask_increments_.begin(), mask_increments_.end(), 0.0);
    mask_increments_[bucket] = r.constraint_masks;
    constraint_mask_->ObserveMultiple(mask_increments_, total);
  }
  if (spdlog::should_log(spdlog::level::trace)) {
    spdlog::trace("step: {} decode + {} prefill tokens, {} running, {} waiting; schedule {:.3f} ms, forward {:.3f} ms, "
                  "sample {:.3f} ms, emit {:.3f} ms",
                  r.decode_tokens, r.prefill_tokens, r.stats.running, r.stats.waiting, Seconds(r.schedule) * 1e3,
                  Seconds(r.forward) * 1e3, Seconds(r.sample) * 1e3, Seconds(r.emit) * 1e3);
  }
}

void Metrics::OnToken(const Sequence& seq, absl::Time prev, absl::Time now) {
  generation_tokens_->Increment();
  if (Reached(prev)) {
    itl_->Observe(Seconds(now - prev));
  } else {
    prompt_tokens_->Increment(static_cast<double>(seq.prompt.size()));  // the prefill is done
  }
}

void Metrics::OnFinished(const Sequence& seq, const GenerationFinal& f) {
  const SequenceTimes& t = seq.times;
  // A request whose first sampled token ended it (EOS, stop token) delivered none:
  // its prefill completed all the same.
  if (f.completion_tokens == 0 && Reached(t.first_token)) prompt_tokens_->Increment(f.prompt_tokens);
  const char* reason = FinishedReasonLabel(seq.state);
  if (reason == nullptr) {  // kFinishedError: an engine failure
    failure_[kInternal]->Increment();
    return;
  }
  const std::string r = reason;
  success_[r == "stop" ? kStop : r == "length" ? kLength : kAbort]->Increment();
  prompt_len_->Observe(f.prompt_tokens);
  generation_len_->Observe(f.completion_tokens);
  if (Reached(t.arrival) && Reached(t.finished)) e2e_->Observe(Seconds(t.finished - t.arrival));
  if (Reached(t.arrival) && Reached(t.first_scheduled)) queue_->Observe(Seconds(t.first_scheduled - t.arrival));
  if (Reached(t.first_token)) {
    if (Reached(t.arrival)) ttft_->Observe(Seconds(t.first_token - t.arrival));
    if (Reached(t.first_scheduled)) prefill_->Observe(Seconds(t.first_token - t.first_scheduled));
    if (Reached(t.finished)) decode_->Observe(Seconds(t.finished - t.first_token));
  }
}

void Metrics::RecordAbortedBeforeRequest() { success_[kAbort]->Increment(); }

void Metrics::RecordUnauthenticated() { unauthenticated_->Increment(); }

void Metrics::RecordConstraintCompile(constraint::ConstraintKind kind, bool cache_hit, absl::Duration time) {
  const auto k = static_cast<size_t>(kind);
  if (k < constrained_.size()) constrained_[k]->Increment();
  if (cache_hit) {
    constraint_hits_->Increment();
  } else {
    constraint_misses_->Increment();
    constraint_compile_->Observe(Seconds(time));
  }
}

void Metrics::RecordRejected(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument: failure_[kInvalidArgument]->Increment(); break;
    case absl::StatusCode::kResourceExhausted: failure_[kResourceExhausted]->Increment(); break;
    case absl::StatusCode::kUnavailable: failure_[kUnavailable]->Increment(); break;
    default: failure_[kInternal]->Increment(); break;
  }
}

}  // namespace llmserve
