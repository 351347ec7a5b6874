// End to end with a real Prometheus (issue 6): llmserve (built-in demo model, a small KV
// cache) is scraped every second by /usr/bin/prometheus loaded with the real
// deploy/prometheus/rules.yml, while four client threads stream completions (greedy,
// sampled, with stop strings, long prompts) and one invalid request fails
// (request_failure_total{code="invalid_argument"}; nothing is cancelled, so every token
// the server counts reached a client). Then, through Prometheus' query API:
//   - llmserve_generation_tokens_total == the ids the clients received (prompt tokens and
//     request counts likewise), the KV usage was > 0 under load and is 0 when idle;
//   - every expression of deploy/grafana/llmserve.json (Grafana variables substituted)
//     and every recording rule (its expression and its recorded series) returns at least
//     one series, so a misspelled metric in a panel or a rule fails this test.
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/grafana_exprs.h"
#include "tests/integration/prometheus_server.h"
#include "tests/integration/server_process.h"
#include "tests/util/test_assets.h"

namespace llmserve::testing {
namespace {

namespace v1 = ::llmserve::v1;

constexpr char kModel[] = "e2e";
// The window substituted for Grafana's $__rate_interval: the whole run fits in it.
constexpr char kWindow[] = "1m";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t CountOccurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Prometheus configuration: one llmserve target scraped every second, the real rules.
std::string PrometheusConfig(int metrics_port, const std::string& rules_path) {
  return absl::StrCat(
      "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
      "rule_files:\n  - ",
      rules_path,
      "\nscrape_configs:\n  - job_name: llmserve\n    static_configs:\n      - targets: ['127.0.0.1:", metrics_port,
      "']\n");
}

// A one-character stop string: the first printable ASCII character of `text` after its
// first four bytes ("" if there is none).
std::string StopStringIn(const std::string& text) {
  for (size_t i = 4; i < text.size(); ++i) {
    if (text[i] > ' ' && text[i] < 0x7f) return std::string(1, text[i]);
  }
  return "";
}

// Number of series `expr` returns now (-1 and *error when the query fails).
int SeriesCount(const PrometheusServer& prom, const std::string& expr, std::string* error = nullptr) {
  absl::StatusOr<std::vector<PromSeries>> r = prom.Query(expr);
  if (!r.ok()) {
    if (error != nullptr) *error = r.status().ToString();
    return -1;
  }
  return static_cast<int>(r->size());
}

// The value of a single-series query (NaN if there is not exactly one series).
double Scalar(const PrometheusServer& prom, const std::string& expr) {
  absl::StatusOr<std::vector<PromSeries>> r = prom.Query(expr);
  return r.ok() && r->size() == 1 ? (*r)[0].value : std::nan("");
}

// Polls `done` every 200 ms until it holds or `timeout` passes; true if it held.
template <typename Pred>
bool PollUntil(absl::Duration timeout, Pred done) {
  const absl::Time end = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() >= end) return false;
    absl::SleepFor(absl::Milliseconds(200));
  }
  return true;
}

// What the client threads saw.
struct LoadTotals {
  std::atomic<int64_t> tokens{0};         // ids received in chunks
  std::atomic<int64_t> prompt_tokens{0};  // Final.usage.prompt_tokens
  std::atomic<int64_t> requests{0};       // successful streams
  std::atomic<int64_t> stopped{0};        // ... of which a stop string ended
};

constexpr char kPrompt[] = "Once upon a time";
constexpr int kGreedyTokens = 24;

// Request `i` of client `client`: a mix of greedy, sampled and stop-string requests, some
// with long prompts (more KV blocks). `stop` occurs in kPrompt's greedy output.
v1::GenerateRequest LoadRequest(int client, int i, const std::string& stop) {
  const std::string long_prompt(120 + 10 * client, 'x');
  v1::GenerateRequest r = GreedyRequest(kPrompt, kGreedyTokens);
  switch ((client + i) % 4) {
    case 0:
      break;
    case 1:
      r.set_temperature(0.8f);
      r.set_seed(static_cast<uint64_t>(1000 * client + i));
      r.set_max_tokens(48);
      r.add_stop("ab");  // may or may not match
      break;
    case 2:  // the greedy prompt again, cut by a stop string from its own output
      r.add_stop(stop);
      break;
    default:
      r.set_text(long_prompt);
      r.set_max_tokens(8);
      break;
  }
  return r;
}

// One client thread: requests until `stop` is set (after at least `min_requests`), or
// `max_requests`, or `limit` passes.
void RunClient(ServerProcess& server, int client, const std::string& stop_string, const std::atomic<bool>& stop,
               LoadTotals* totals) {
  constexpr int kMinRequests = 3, kMaxRequests = 1000;
  const absl::Time limit = absl::Now() + absl::Seconds(30);
  auto stub = server.stub();
  for (int i = 0; i < kMaxRequests && absl::Now() < limit && !(i >= kMinRequests && stop.load()); ++i) {
    const StreamResult r = Generate(*stub, LoadRequest(client, i, stop_string), absl::Seconds(30));
    EXPECT_TRUE(r.status.ok()) << "client " << client << " request " << i << ": " << r.status.error_message();
    EXPECT_TRUE(r.has_final);
    EXPECT_EQ(static_cast<int64_t>(r.ids.size()), r.final_msg.usage().completion_tokens());
    if (!r.status.ok()) continue;
    totals->tokens += static_cast<int64_t>(r.ids.size());
    totals->prompt_tokens += r.final_msg.usage().prompt_tokens();
    totals->requests += 1;
    if (r.final_msg.finish_reason() == v1::FINISH_REASON_STOP_SEQUENCE) totals->stopped += 1;
  }
}

TEST(PrometheusE2eTest, DashboardAndRulesAnswerAndCountersMatchTheClients) {
  if (PrometheusBinary().empty()) {
    if (InCi()) FAIL() << "/usr/bin/prometheus not found (required under CI: scripts/install-deps.sh)";
    GTEST_SKIP() << "/usr/bin/prometheus not found: apt-get install prometheus (scripts/install-deps.sh)";
  }
  const absl::Time start = absl::Now();
  const std::string rules_path = std::string(LLMSERVE_SOURCE_DIR) + "/deploy/prometheus/rules.yml";
  const std::string dashboard_path = std::string(LLMSERVE_SOURCE_DIR) + "/deploy/grafana/llmserve.json";
  const int metrics_port = PickFreePort();
  std::string error;
  // 24 blocks of 16 tokens: four concurrent streams use a visible share of the cache.
  auto server = ServerProcess::Start({"--threads=2", "--metrics-port=" + std::to_string(metrics_port),
                                      std::string("--model-name=") + kModel, "--kv-blocks=24", "--block-size=16"},
                                     &error);
  ASSERT_NE(server, nullptr) << error;
  auto prom = PrometheusServer::Start(PrometheusConfig(metrics_port, rules_path), &error);
  ASSERT_NE(prom, nullptr) << error;

  // The target is up and has been scraped before any load (the counters' baseline).
  const std::string sel = absl::StrCat("{model_name=\"", kModel, "\"}");
  ASSERT_TRUE(PollUntil(absl::Seconds(20), [&] {
    return SeriesCount(*prom, "up{job=\"llmserve\"} == 1") == 1 &&
           SeriesCount(*prom, "llmserve_generation_tokens_total" + sel) == 1;
  })) << "Prometheus never scraped llmserve on 127.0.0.1:" << metrics_port;

  auto stub = server->stub();
  LoadTotals totals;
  v1::GenerateRequest invalid;  // no input: INVALID_ARGUMENT, counted as a failure
  ASSERT_EQ(Generate(*stub, invalid).status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // A stop string that kPrompt's greedy output contains after a few tokens: the greedy
  // requests that carry it end on it, with text held back and cut (ids still count).
  const StreamResult first = Generate(*stub, GreedyRequest(kPrompt, kGreedyTokens));
  ASSERT_TRUE(first.status.ok()) << first.status.error_message();
  const std::string stop_string = StopStringIn(first.text);
  ASSERT_FALSE(stop_string.empty()) << "no ASCII character in the demo model's output: " << first.text;
  totals.tokens += static_cast<int64_t>(first.ids.size());
  totals.prompt_tokens += first.final_msg.usage().prompt_tokens();
  totals.requests += 1;

  // Load until Prometheus has seen the KV cache in use (bounded by the clients' limits).
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) clients.emplace_back([&, c] { RunClient(*server, c, stop_string, stop, &totals); });
  const std::string kv_seen = "max_over_time(llmserve_kv_cache_usage_perc" + sel + "[2m]) > 0";
  const bool seen_busy = PollUntil(absl::Seconds(30), [&] { return SeriesCount(*prom, kv_seen) == 1; });
  stop = true;
  for (std::thread& t : clients) t.join();
  EXPECT_TRUE(seen_busy) << "Prometheus never saw llmserve_kv_cache_usage_perc > 0 during the load";
  ASSERT_GT(totals.tokens.load(), 0);
  const int64_t received = totals.tokens.load();

  // Idle: Prometheus converges to what the clients saw.
  const std::string tokens_expr = "sum(llmserve_generation_tokens_total" + sel + ")";
  const std::string kv_expr = "llmserve_kv_cache_usage_perc" + sel;
  const std::string running_expr = "llmserve_num_requests_running" + sel;
  PollUntil(absl::Seconds(20), [&] {
    return Scalar(*prom, tokens_expr) == static_cast<double>(received) && Scalar(*prom, kv_expr) == 0.0 &&
           Scalar(*prom, running_expr) == 0.0;
  });
  EXPECT_EQ(Scalar(*prom, tokens_expr), static_cast<double>(received));
  EXPECT_EQ(Scalar(*prom, kv_expr), 0.0);
  EXPECT_EQ(Scalar(*prom, running_expr), 0.0);
  EXPECT_EQ(Scalar(*prom, "llmserve_num_requests_waiting" + sel), 0.0);
  EXPECT_EQ(Scalar(*prom, "sum(llmserve_prompt_tokens_total" + sel + ")"),
            static_cast<double>(totals.prompt_tokens.load()));
  EXPECT_EQ(Scalar(*prom, "sum(llmserve_request_success_total" + sel + ")"),
            static_cast<double>(totals.requests.load()));
  EXPECT_GT(totals.stopped.load(), 0);
  const std::string stopped_expr =
      absl::StrCat("llmserve_request_success_total{model_name=\"", kModel, "\",finished_reason=\"stop\"}");
  const std::string invalid_expr =
      absl::StrCat("llmserve_request_failure_total{model_name=\"", kModel, "\",code=\"invalid_argument\"}");
  EXPECT_GE(Scalar(*prom, stopped_expr),
            static_cast<double>(totals.stopped.load()));
  EXPECT_EQ(Scalar(*prom, invalid_expr), 1.0);

  // Every dashboard expression and recording rule answers with at least one series.
  // Rules are evaluated every second, rates need two samples: poll until all answer.
  const nlohmann::json dashboard = nlohmann::json::parse(ReadFile(dashboard_path), nullptr, false);
  ASSERT_FALSE(dashboard.is_discarded()) << dashboard_path << " is not JSON";
  absl::StatusOr<std::vector<DashboardExpr>> exprs = CollectDashboardExprs(dashboard);
  ASSERT_TRUE(exprs.ok()) << exprs.status();
  // Every "expr" in the file was found (the walk misses no nesting).
  EXPECT_GE(exprs->size(), CountOccurrences(ReadFile(dashboard_path), "\"expr\""));
  std::vector<DashboardExpr> checks;
  for (const DashboardExpr& e : *exprs) {
    absl::StatusOr<std::string> q = SubstituteGrafanaVariables(e.expr, {{"model_name", kModel}}, kWindow);
    EXPECT_TRUE(q.ok()) << e.where << ": " << q.status();
    if (q.ok()) checks.push_back({e.where, *q});
  }
  absl::StatusOr<std::vector<PromRule>> rules = prom->Rules();
  ASSERT_TRUE(rules.ok()) << rules.status();
  size_t recording = 0;
  for (const PromRule& r : *rules) {
    if (!r.recording) continue;  // alerts: their health is checked below
    ++recording;
    checks.push_back({"rule " + r.name + " (expr)", r.query});
    checks.push_back({"rule " + r.name + " (recorded series)", r.name});
  }
  EXPECT_EQ(recording, CountOccurrences(ReadFile(rules_path), "- record:")) << "Prometheus loaded other rules";
  EXPECT_EQ(rules->size() - recording, CountOccurrences(ReadFile(rules_path), "- alert:"));
  ASSERT_GT(checks.size(), 10u);
  std::vector<std::string> failing;
  PollUntil(absl::Seconds(20), [&] {
    failing.clear();
    for (const DashboardExpr& c : checks) {
      std::string why;
      const int n = SeriesCount(*prom, c.expr, &why);
      if (n < 1) failing.push_back(absl::StrCat(c.where, ": ", n < 0 ? why : "no series", "\n    ", c.expr));
    }
    return failing.empty();
  });
  EXPECT_TRUE(failing.empty()) << failing.size() << " of " << checks.size()
                               << " expressions return no series:\n  " << absl::StrJoin(failing, "\n  ");
  // No rule (recording or alerting) reports an evaluation error.
  rules = prom->Rules();
  ASSERT_TRUE(rules.ok()) << rules.status();
  for (const PromRule& r : *rules) EXPECT_NE(r.health, "err") << r.name << ": " << r.last_error;
  std::cout << "[prometheus e2e] " << totals.requests.load() << " requests, " << received << " tokens, "
            << Scalar(*prom, "max_over_time(llmserve_kv_cache_usage_perc" + sel + "[2m])") << " peak KV usage, "
            << Scalar(*prom, "sum(llmserve_num_preemptions_total" + sel + ")") << " preemptions, "
            << totals.stopped.load() << " ended by stop string '" << stop_string << "', " << checks.size()
            << " expressions checked, " << absl::ToDoubleSeconds(absl::Now() - start) << " s\n";
}

}  // namespace
}  // namespace llmserve::testing
