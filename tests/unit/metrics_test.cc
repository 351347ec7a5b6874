// Metrics (server/metrics.h) fed by a real Engine over the fake model with a scripted
// clock: time moves only when the test advances it or a Forward runs (kForward each), so
// every timestamp, and every histogram sum, is known exactly.
#include "server/metrics.h"

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "server/server_config.h"
#include "tests/util/clocked_model.h"
#include "tests/util/fake_engine_model.h"
#include "tests/util/prom_text.h"

namespace llmserve {
namespace {

using ::llmserve::testing::ClockedModel;
using ::llmserve::testing::FakeEngineModel;
using ::llmserve::testing::FakeModelOptions;
using ::llmserve::testing::FakeModelState;
using ::llmserve::testing::FindSample;
using ::llmserve::testing::ManualClock;
using ::llmserve::testing::ParsePromText;
using ::llmserve::testing::PromSample;

const absl::Duration kWait = absl::Seconds(60);  // a hang, not a timing assertion
const absl::Duration kForward = absl::Milliseconds(100);
const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

MetricsConfigInfo Info() {
  MetricsConfigInfo i;
  i.block_size = 4;
  i.weight_dtype = "f32";
  i.kv_dtype = "f32";
  i.threads = 2;
  i.max_running = 1;
  i.max_batched_tokens = 32;
  i.step_policy = "mixed";
  i.version = "test";
  return i;
}

EngineRequest Greedy(int prompt_len, int32_t max_tokens, int salt) {
  EngineRequest r;
  for (int i = 0; i < prompt_len; ++i) r.prompt.push_back(3 + (i * 7 + salt * 13) % 61);
  r.sampling.temperature = 0.0f;
  r.stop.max_tokens = max_tokens;
  return r;
}

// An engine over the clocked fake model with Metrics as its observer.
struct Rig {
  ManualClock clock{kT0};
  std::shared_ptr<FakeModelState> state = std::make_shared<FakeModelState>();
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::unique_ptr<Metrics> metrics;
  std::unique_ptr<Engine> engine;

  explicit Rig(int32_t max_running, const FakeModelOptions& opts = {}, const std::string& prefix = "llmserve_") {
    auto m = Metrics::Create(*registry, prefix, "tiny-model", Info());
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) return;
    metrics = *std::move(m);
    EngineConfig c;
    c.scheduler.block_size = opts.block_size;
    c.scheduler.max_running = max_running;
    c.scheduler.max_batched_tokens = 32;
    c.scheduler.max_prefill_chunk = 16;
    c.scheduler.max_waiting = 64;
    c.scheduler.eos_ids = {};
    c.clock = [this] { return clock.Now(); };
    auto e = Engine::Create(c, std::make_unique<ClockedModel>(std::make_unique<FakeEngineModel>(opts, state), &clock,
                                                           [](const ForwardBatch&) { return kForward; }),
                            nullptr, metrics.get());
    EXPECT_TRUE(e.ok()) << e.status();
    if (e.ok()) engine = *std::move(e);
  }
  ~Rig() {
    if (engine != nullptr) engine->Stop();
  }

  // Runs `requests` (all submitted at once, then the clock moves by `queued` before the
  // engine starts) to their ends; stops the engine so no hook runs while reading.
  std::vector<CollectedGeneration> Run(std::vector<EngineRequest> requests, absl::Duration queued,
                                       const std::vector<bool>& abort_first = {}) {
    std::vector<RequestHandle> handles;
    for (size_t i = 0; i < requests.size(); ++i) {
      auto h = engine->Submit(std::move(requests[i]));
      EXPECT_TRUE(h.ok()) << h.status();
      if (!h.ok()) return {};
      if (i < abort_first.size() && abort_first[i]) engine->Abort(h->id, SequenceState::kFinishedCancelled);
      handles.push_back(*std::move(h));
    }
    clock.Advance(queued);
    engine->Start();
    std::vector<CollectedGeneration> out;
    for (RequestHandle& h : handles) {
      auto g = CollectGeneration(*h.channel, kWait);
      EXPECT_TRUE(g.ok()) << g.status();
      if (g.ok()) out.push_back(*std::move(g));
    }
    engine->Stop();
    return out;
  }

  std::string Text() const { return prometheus::TextSerializer().Serialize(registry->Collect()); }
};

double Value(const std::vector<PromSample>& s, const std::string& name,
             const std::map<std::string, std::string>& labels = {}) {
  std::optional<double> v = FindSample(s, name, labels);
  EXPECT_TRUE(v.has_value()) << "no single sample " << name;
  return v.value_or(-1);
}

TEST(MetricsTest, HistogramsFollowEngineTimestamps) {
  // max_running 1: B waits for A. Both arrive at T0; the engine starts at T0+1s.
  //   A: scheduled 1.0, tokens at 1.1 1.2 1.3 (finished)   queue 1.0 ttft 1.1 e2e 1.3
  //   B: scheduled 1.3, tokens at 1.4 1.5 1.6 (finished)   queue 1.3 ttft 1.4 e2e 1.6
  // prefill 0.1 each, decode 0.2 each, four inter-token gaps of 0.1.
  Rig rig(/*max_running=*/1);
  ASSERT_NE(rig.engine, nullptr);
  auto gens = rig.Run({Greedy(4, 3, 1), Greedy(6, 3, 2)}, absl::Seconds(1));
  ASSERT_EQ(gens.size(), 2u);
  for (const auto& g : gens) {
    EXPECT_EQ(g.final_event.reason, SequenceState::kFinishedLength);
    EXPECT_EQ(g.ids.size(), 3u);
  }
  const std::string text = rig.Text();
  const auto s = ParsePromText(text);
  struct Hist {
    const char* name;
    double count, sum;
  };
  for (const Hist& h : std::vector<Hist>{{"llmserve_request_queue_time_seconds", 2, 2.3},
                                         {"llmserve_time_to_first_token_seconds", 2, 2.5},
                                         {"llmserve_e2e_request_latency_seconds", 2, 2.9},
                                         {"llmserve_request_prefill_time_seconds", 2, 0.2},
                                         {"llmserve_request_decode_time_seconds", 2, 0.4},
                                         {"llmserve_inter_token_latency_seconds", 4, 0.4},
                                         {"llmserve_request_prompt_tokens", 2, 10},
                                         {"llmserve_request_generation_tokens", 2, 6},
                                         // steps: A's prefill (4), 2 decodes, B's prefill (6), 2 decodes
                                         {"llmserve_iteration_tokens", 6, 14}}) {
    SCOPED_TRACE(h.name);
    EXPECT_EQ(Value(s, std::string(h.name) + "_count"), h.count);
    EXPECT_NEAR(Value(s, std::string(h.name) + "_sum"), h.sum, 1e-9);
  }
  // Buckets are cumulative: TTFT 1.1 and 1.4 are both above 1 and below 2.5.
  EXPECT_EQ(Value(s, "llmserve_time_to_first_token_seconds_bucket", {{"le", "1"}}), 0);
  EXPECT_EQ(Value(s, "llmserve_time_to_first_token_seconds_bucket", {{"le", "2.5"}}), 2);
  EXPECT_EQ(Value(s, "llmserve_time_to_first_token_seconds_bucket", {{"le", "+Inf"}}), 2);
  EXPECT_NEAR(Value(s, "llmserve_engine_step_duration_seconds_sum", {{"phase", "forward"}}), 0.6, 1e-9);
  EXPECT_EQ(Value(s, "llmserve_engine_step_duration_seconds_count", {{"phase", "schedule"}}), 6);
  EXPECT_EQ(Value(s, "llmserve_engine_step_duration_seconds_sum", {{"phase", "schedule"}}), 0);

  EXPECT_EQ(Value(s, "llmserve_prompt_tokens_total"), 10);
  EXPECT_EQ(Value(s, "llmserve_generation_tokens_total"), 6);
  EXPECT_EQ(Value(s, "llmserve_request_success_total", {{"finished_reason", "length"}}), 2);
  EXPECT_EQ(Value(s, "llmserve_request_success_total", {{"finished_reason", "stop"}}), 0);
  EXPECT_EQ(Value(s, "llmserve_request_success_total", {{"finished_reason", "abort"}}), 0);
  EXPECT_EQ(Value(s, "llmserve_num_preemptions_total"), 0);
  // Idle after Stop: gauges back to zero, the pool's size stays.
  EXPECT_EQ(Value(s, "llmserve_num_requests_running"), 0);
  EXPECT_EQ(Value(s, "llmserve_num_requests_waiting"), 0);
  EXPECT_EQ(Value(s, "llmserve_kv_cache_usage_perc"), 0);
  EXPECT_EQ(Value(s, "llmserve_kv_cache_blocks_used"), 0);
  EXPECT_EQ(Value(s, "llmserve_kv_cache_num_blocks"), FakeModelOptions().num_blocks);
  EXPECT_EQ(Value(s, "llmserve_engine_config_info", {{"block_size", "4"}, {"max_running", "1"}, {"version", "test"}}),
            1);
}

TEST(MetricsTest, AbortsErrorsAndRejections) {
  Rig rig(/*max_running=*/4);
  ASSERT_NE(rig.engine, nullptr);
  rig.state->FailNext(1);  // the first step fails the request in it
  // The first request fails (INTERNAL); the second is cancelled before it is scheduled.
  // (Both are in the first step's inbox: the abort finishes the second before any step.)
  auto gens = rig.Run({Greedy(4, 3, 1), Greedy(4, 3, 2)}, absl::Seconds(2), {false, true});
  ASSERT_EQ(gens.size(), 2u);
  EXPECT_EQ(gens[0].final_event.reason, SequenceState::kFinishedError);
  EXPECT_EQ(gens[1].final_event.reason, SequenceState::kFinishedCancelled);
  rig.metrics->RecordRejected(absl::StatusCode::kInvalidArgument);
  rig.metrics->RecordRejected(absl::StatusCode::kInvalidArgument);
  rig.metrics->RecordRejected(absl::StatusCode::kResourceExhausted);
  rig.metrics->RecordRejected(absl::StatusCode::kUnavailable);
  rig.metrics->RecordRejected(absl::StatusCode::kDataLoss);  // anything else: internal
  const auto s = ParsePromText(rig.Text());
  EXPECT_EQ(Value(s, "llmserve_request_failure_total", {{"code", "invalid_argument"}}), 2);
  EXPECT_EQ(Value(s, "llmserve_request_failure_total", {{"code", "resource_exhausted"}}), 1);
  EXPECT_EQ(Value(s, "llmserve_request_failure_total", {{"code", "unavailable"}}), 1);
  EXPECT_EQ(Value(s, "llmserve_request_failure_total", {{"code", "internal"}}), 2);
  EXPECT_EQ(Value(s, "llmserve_request_success_total", {{"finished_reason", "abort"}}), 1);
  // The cancelled request: e2e (arrival T0 → aborted at T0+2s), no queue time, no TTFT.
  EXPECT_EQ(Value(s, "llmserve_e2e_request_latency_seconds_count"), 1);
  EXPECT_NEAR(Value(s, "llmserve_e2e_request_latency_seconds_sum"), 2.0, 1e-9);
  EXPECT_EQ(Value(s, "llmserve_request_queue_time_seconds_count"), 0);
  EXPECT_EQ(Value(s, "llmserve_time_to_first_token_seconds_count"), 0);
  EXPECT_EQ(Value(s, "llmserve_prompt_tokens_total"), 0);  // no prefill completed
  EXPECT_EQ(Value(s, "llmserve_generation_tokens_total"), 0);
  EXPECT_EQ(Value(s, "llmserve_kv_cache_blocks_used"), 0);
}

TEST(MetricsTest, PreemptionsAreCounted) {
  // 4 blocks of 4 tokens; three requests of 4 + 8 tokens (3 blocks each) cannot all fit.
  FakeModelOptions opts;
  opts.num_blocks = 4;
  Rig rig(/*max_running=*/3, opts);
  ASSERT_NE(rig.engine, nullptr);
  auto gens = rig.Run({Greedy(4, 8, 1), Greedy(4, 8, 2), Greedy(4, 8, 3)}, absl::ZeroDuration());
  ASSERT_EQ(gens.size(), 3u);
  int64_t delivered = 0;
  for (const auto& g : gens) delivered += static_cast<int64_t>(g.ids.size());
  const int64_t preemptions = rig.engine->Stats().preemptions;
  EXPECT_GT(preemptions, 0);
  const auto s = ParsePromText(rig.Text());
  EXPECT_EQ(Value(s, "llmserve_num_preemptions_total"), static_cast<double>(preemptions));
  EXPECT_EQ(Value(s, "llmserve_generation_tokens_total"), static_cast<double>(delivered));
  EXPECT_EQ(Value(s, "llmserve_prompt_tokens_total"), 12);  // each prompt once, despite recomputes
  EXPECT_EQ(Value(s, "llmserve_inter_token_latency_seconds_count"), static_cast<double>(delivered - 3));
}

TEST(MetricsTest, TraceLevelLogsOneLinePerStep) {
  prometheus::Registry registry;
  auto m = Metrics::Create(registry, "llmserve_", "m", Info());
  ASSERT_TRUE(m.ok()) << m.status();
  StepReport r;
  r.decode_tokens = 6;
  r.prefill_tokens = 5;
  r.forward = absl::Microseconds(66015);
  r.stats.running = 7;
  r.stats.waiting = 1;

  std::ostringstream out;
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  logger->set_pattern("%l %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::info);
  (*m)->OnStep(r);
  const std::string at_info = out.str();
  spdlog::set_level(spdlog::level::trace);
  (*m)->OnStep(r);
  const std::string at_trace = out.str();
  spdlog::set_default_logger(previous);
  spdlog::set_level(spdlog::level::info);

  EXPECT_EQ(at_info, "");
  EXPECT_EQ(at_trace,
            "trace step: 6 decode + 5 prefill tokens, 7 running, 1 waiting; schedule 0.000 ms, forward 66.015 ms, "
            "sample 0.000 ms, emit 0.000 ms\n");
}

// Constraint metrics: requests by kind and cache hits/misses at compile time (the compile
// histogram only on misses), and each step's masks at their mean in the mask histogram.
TEST(MetricsTest, ConstraintCompilesAndMasks) {
  prometheus::Registry registry;
  auto m = Metrics::Create(registry, "llmserve_", "m", Info());
  ASSERT_TRUE(m.ok()) << m.status();
  using K = constraint::ConstraintKind;
  (*m)->RecordConstraintCompile(K::kJsonSchema, /*cache_hit=*/false, absl::Milliseconds(30));
  (*m)->RecordConstraintCompile(K::kJsonSchema, /*cache_hit=*/true, absl::Microseconds(2));
  (*m)->RecordConstraintCompile(K::kRegex, /*cache_hit=*/false, absl::Milliseconds(2));
  (*m)->RecordConstraintCompile(K::kGrammar, /*cache_hit=*/true, absl::Microseconds(1));
  StepReport r;
  r.decode_tokens = 4;
  r.constraint_masks = 4;
  r.constraint_mask_time = absl::Microseconds(400);  // 100 us each
  (*m)->OnStep(r);
  r.constraint_masks = 0;  // a step without constrained rows adds nothing
  r.constraint_mask_time = absl::ZeroDuration();
  (*m)->OnStep(r);
  const auto s = ParsePromText(prometheus::TextSerializer().Serialize(registry.Collect()));
  EXPECT_EQ(Value(s, "llmserve_constrained_requests_total", {{"kind", "json_schema"}}), 2);
  EXPECT_EQ(Value(s, "llmserve_constrained_requests_total", {{"kind", "regex"}}), 1);
  EXPECT_EQ(Value(s, "llmserve_constrained_requests_total", {{"kind", "grammar"}}), 1);
  EXPECT_EQ(Value(s, "llmserve_constrained_requests_total", {{"kind", "choice"}}), 0);
  EXPECT_EQ(Value(s, "llmserve_constrained_requests_total", {{"kind", "json"}}), 0);
  EXPECT_EQ(Value(s, "llmserve_constraint_cache_lookups_total", {{"result", "hit"}}), 2);
  EXPECT_EQ(Value(s, "llmserve_constraint_cache_lookups_total", {{"result", "miss"}}), 2);
  EXPECT_EQ(Value(s, "llmserve_constraint_compile_seconds_count"), 2);
  EXPECT_NEAR(Value(s, "llmserve_constraint_compile_seconds_sum"), 0.032, 1e-9);
  EXPECT_EQ(Value(s, "llmserve_constraint_mask_seconds_count"), 4);
  EXPECT_NEAR(Value(s, "llmserve_constraint_mask_seconds_sum"), 0.0004, 1e-12);
  EXPECT_EQ(Value(s, "llmserve_constraint_mask_seconds_bucket", {{"le", "5e-05"}}), 0);
  EXPECT_EQ(Value(s, "llmserve_constraint_mask_seconds_bucket", {{"le", "0.0001"}}), 4);
  EXPECT_EQ(Value(s, "llmserve_constraint_mask_seconds_bucket", {{"le", "+Inf"}}), 4);
}

TEST(MetricsTest, EverySeriesHasModelNameAndThePrefix) {
  for (const std::string prefix : {"llmserve_", "vllm:"}) {
    SCOPED_TRACE(prefix);
    Rig rig(/*max_running=*/2, {}, prefix);
    ASSERT_NE(rig.engine, nullptr);
    rig.Run({Greedy(3, 2, 1)}, absl::ZeroDuration());
    const auto s = ParsePromText(rig.Text());
    std::set<std::string> names;
    for (const PromSample& p : s) {
      ASSERT_FALSE(p.name.empty()) << "a malformed sample line";
      EXPECT_EQ(p.name.rfind(prefix, 0), 0u) << p.name;
      auto it = p.labels.find("model_name");
      EXPECT_TRUE(it != p.labels.end() && it->second == "tiny-model") << p.name;
      names.insert(p.name.substr(prefix.size()));
    }
    for (const char* n : {"num_requests_running", "num_requests_waiting", "kv_cache_usage_perc",
                          "kv_cache_num_blocks", "kv_cache_blocks_used", "engine_config_info",
                          "prompt_tokens_total", "generation_tokens_total", "request_success_total",
                          "request_failure_total", "num_preemptions_total", "time_to_first_token_seconds_count",
                          "inter_token_latency_seconds_count", "e2e_request_latency_seconds_count",
                          "request_queue_time_seconds_count", "request_prefill_time_seconds_count",
                          "request_decode_time_seconds_count", "request_prompt_tokens_count",
                          "request_generation_tokens_count", "iteration_tokens_count",
                          "engine_step_duration_seconds_count", "constrained_requests_total",
                          "constraint_cache_lookups_total", "constraint_compile_seconds_count",
                          "constraint_mask_seconds_count"}) {
      EXPECT_TRUE(names.contains(n)) << prefix << n;
    }
    EXPECT_EQ(Value(s, prefix + "generation_tokens_total"), 2);
  }
}

TEST(MetricsTest, PromtoolAcceptsTheExposition) {
  LLMSERVE_REQUIRE_PROMTOOL(promtool);
  Rig rig(/*max_running=*/2);
  ASSERT_NE(rig.engine, nullptr);
  rig.Run({Greedy(3, 2, 1), Greedy(5, 4, 2)}, absl::Milliseconds(5));
  rig.metrics->RecordRejected(absl::StatusCode::kResourceExhausted);
  const std::string text = rig.Text();
  const auto r = ::llmserve::testing::PromtoolCheckMetrics(promtool, text);
  EXPECT_EQ(::llmserve::testing::UnexpectedPromtoolFindings(r, "llmserve_"), std::vector<std::string>())
      << "exit code " << r.exit_code << ": " << r.out << r.err << "\n" << text;
  // The check can fail: a counter without _total is a finding.
  const auto bad = ::llmserve::testing::PromtoolCheckMetrics(
      promtool, "# HELP llmserve_x x\n# TYPE llmserve_x counter\nllmserve_x 1\n");
  EXPECT_FALSE(::llmserve::testing::UnexpectedPromtoolFindings(bad, "llmserve_").empty());
}

TEST(MetricsTest, BadPrefixOrDuplicateRegistrationIsAnError) {
  prometheus::Registry registry;
  for (const std::string bad : {"", "9x_", "llm-serve_", "a b", "é_"}) {
    EXPECT_FALSE(ValidMetricsPrefix(bad)) << bad;
    auto m = Metrics::Create(registry, bad, "m", Info());
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  for (const std::string good : {"llmserve_", "vllm:", "_x", ":a:b_9"}) EXPECT_TRUE(ValidMetricsPrefix(good)) << good;
  ASSERT_TRUE(Metrics::Create(registry, "dup_", "m", Info()).ok());
  auto again = Metrics::Create(registry, "dup_", "other", Info());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MetricsTest, ServerConfigValidatesTheMetricsFlags) {
  struct Case {
    const char* name;
    int32_t port;
    std::string prefix;
    const char* error;  // "" = valid
  };
  for (const Case& c : std::vector<Case>{{"defaults", 9400, "llmserve_", ""},
                                         {"off", 0, "vllm:", ""},
                                         {"negative", -1, "llmserve_", "--metrics-port=-1"},
                                         {"too large", 70000, "llmserve_", "--metrics-port=70000"},
                                         {"same as --port", 50051, "llmserve_", "same as --port"},
                                         {"bad prefix", 9090, "llm-serve", "--metrics-prefix=llm-serve"},
                                         {"empty prefix", 9090, "", "--metrics-prefix="}}) {
    SCOPED_TRACE(c.name);
    ServerConfig config;
    config.metrics_port = c.port;
    config.metrics_prefix = c.prefix;
    const absl::Status s = config.Validate();
    if (std::string(c.error).empty()) {
      EXPECT_TRUE(s.ok()) << s;
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(s.message().find(c.error), absl::string_view::npos) << s;
    }
  }
  EXPECT_EQ(ServerConfig().metrics_port, 9400);
  EXPECT_EQ(ServerConfig().metrics_prefix, "llmserve_");
}

}  // namespace
}  // namespace llmserve
