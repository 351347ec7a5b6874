// llmbench: its statistics and workload pieces, then the real binary against the real
// llmserve on the demo model (closed and open loop), against a stand-in for llama-server's
// OpenAI endpoint, and against a dead port.
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "bench/llmbench/options.h"
#include "bench/llmbench/stats.h"
#include "bench/llmbench/workload.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/integration/server_process.h"
#include "tests/util/subprocess.h"

namespace llmserve::testing {
namespace {

using nlohmann::json;

TEST(LlmbenchStatsTest, PercentilesInterpolateLikeNumpy) {
  std::vector<double> v = {5, 1, 4, 2, 3};  // sorted: 1..5
  const llmbench::Summary s = llmbench::Summarize(&v);
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.p50, 3);
  EXPECT_DOUBLE_EQ(s.p90, 4.6);   // numpy.percentile([1..5], 90)
  EXPECT_DOUBLE_EQ(s.p99, 4.96);
  std::vector<double> one = {7};
  EXPECT_DOUBLE_EQ(llmbench::Summarize(&one).p99, 7);
  std::vector<double> none;
  EXPECT_EQ(llmbench::Summarize(&none).count, 0u);
}

TEST(LlmbenchWorkloadTest, LengthsFollowTheirDistribution) {
  std::mt19937_64 rng(1);
  for (int x : llmbench::SampleLengths(100, 64, llmbench::LengthDist::kFixed, 0.5, &rng)) ASSERT_EQ(x, 64);
  const auto u = llmbench::SampleLengths(2000, 100, llmbench::LengthDist::kUniform, 0.5, &rng);
  int lo = 1000, hi = 0;
  for (int x : u) lo = std::min(lo, x), hi = std::max(hi, x);
  EXPECT_EQ(lo, 50);
  EXPECT_EQ(hi, 150);
  const auto e = llmbench::SampleLengths(4000, 100, llmbench::LengthDist::kExponential, 0.5, &rng);
  double sum = 0;
  for (int x : e) {
    ASSERT_GE(x, 1);
    ASSERT_LE(x, 1000);
    sum += x;
  }
  EXPECT_NEAR(sum / e.size(), 100, 10);  // fixed seed: deterministic
}

TEST(LlmbenchWorkloadTest, RandomPromptsAvoidSpecialIdsAndStayInRange) {
  std::mt19937_64 rng(2);
  llmbench::ModelLimits limits{/*vocab=*/10, /*context_length=*/64, /*bos_id=*/5, /*eos_id=*/6};
  const auto ids = llmbench::RandomPrompt(500, 3, limits, &rng);
  ASSERT_EQ(ids.size(), 500u);
  for (int32_t id : ids) {
    ASSERT_GE(id, 3);
    ASSERT_LT(id, 10);
    ASSERT_NE(id, 5);
    ASSERT_NE(id, 6);
  }
}

TEST(LlmbenchWorkloadTest, ArrivalsAreIncreasingAtTheRate) {
  std::mt19937_64 rng(3);
  const auto closed = llmbench::PoissonArrivals(5, 0, &rng);
  for (double t : closed) EXPECT_EQ(t, 0);
  const auto open = llmbench::PoissonArrivals(4001, 50, &rng);
  for (size_t i = 1; i < open.size(); ++i) ASSERT_GE(open[i], open[i - 1]);
  EXPECT_NEAR(open.back() / 4000, 1.0 / 50, 0.002);
}

TEST(LlmbenchWorkloadTest, RequestsFitTheContextAndCarryTheOptions) {
  llmbench::BenchOptions o;
  o.requests = 3;
  o.input_len = 100;
  o.output_len = 50;
  o.ignore_eos = true;
  o.seed = 7;
  std::mt19937_64 rng(o.seed);
  auto reqs = llmbench::BuildRequests(o, {/*vocab=*/300, /*context_length=*/120, 256, 257}, {}, &rng);
  ASSERT_TRUE(reqs.ok()) << reqs.status();
  ASSERT_EQ(reqs->size(), 3u);
  for (size_t i = 0; i < reqs->size(); ++i) {
    const auto& r = (*reqs)[i];
    EXPECT_EQ(r.tokens().ids_size(), 100);
    EXPECT_EQ(r.max_tokens(), 20);  // clamped: 100 + 20 = context
    EXPECT_TRUE(r.ignore_eos());
    EXPECT_EQ(r.seed(), 7 + i);
    EXPECT_EQ(r.request_id(), absl::StrCat("llmbench-", i));
  }
  EXPECT_NE((*reqs)[0].tokens().ids(0), (*reqs)[1].tokens().ids(0)) << "each request gets its own prompt";
  auto text = llmbench::BuildRequests(o, {}, {"a", "b"}, &rng);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ((*text)[2].text(), "a");
  EXPECT_EQ((*text)[2].max_tokens(), 50);
  EXPECT_FALSE(llmbench::BuildRequests(o, {/*vocab=*/4}, {}, &rng).ok()) << "vocab not above --token-offset";
}

TEST(LlmbenchWorkloadTest, SharedPrefixOpensEveryPromptThenOwnIds) {
  llmbench::BenchOptions o;
  o.requests = 5;
  o.shared_prefix_len = 16;
  o.input_len = 10;
  o.output_len = 4;
  std::mt19937_64 rng(11);
  const llmbench::ModelLimits limits{/*vocab=*/300, /*context_length=*/120, 256, 257};
  auto reqs = llmbench::BuildRequests(o, limits, {}, &rng);
  ASSERT_TRUE(reqs.ok()) << reqs.status();
  ASSERT_EQ(reqs->size(), 5u);
  const auto& first = (*reqs)[0].tokens().ids();
  for (const auto& r : *reqs) {
    ASSERT_EQ(r.tokens().ids_size(), 26) << "prefix + input";
    for (int k = 0; k < 16; ++k) ASSERT_EQ(r.tokens().ids(k), first[k]) << "id " << k;
    EXPECT_EQ(r.max_tokens(), 4);
    EXPECT_TRUE(r.cache_salt().empty()) << "no --cache-salt";
  }
  bool own_differ = false;
  for (int k = 16; k < 26; ++k) own_differ = own_differ || (*reqs)[0].tokens().ids(k) != (*reqs)[1].tokens().ids(k);
  EXPECT_TRUE(own_differ) << "each request's own part is its own";
  // Clamped into the context: 100 prefix + at most 19 own ids + at least 1 output.
  o.shared_prefix_len = 100;
  o.input_len = 30;
  o.cache_salt = "tenant-a";
  auto clamped = llmbench::BuildRequests(o, limits, {}, &rng);
  ASSERT_TRUE(clamped.ok()) << clamped.status();
  EXPECT_EQ((*clamped)[0].tokens().ids_size(), 119);
  EXPECT_EQ((*clamped)[0].max_tokens(), 1);
  EXPECT_EQ((*clamped)[0].cache_salt(), "tenant-a");
  o.shared_prefix_len = 119;  // no room for an own id and an output
  EXPECT_FALSE(llmbench::CheckContext(o, limits).ok());
  EXPECT_FALSE(llmbench::BuildRequests(o, limits, {}, &rng).ok());
}

TEST(LlmbenchWorkloadTest, TurnsChainPromptOutputAndNewIds) {
  llmbench::BenchOptions o;
  o.requests = 2;
  o.turns = 3;
  o.shared_prefix_len = 8;
  o.input_len = 5;
  o.output_len = 4;
  o.seed = 3;
  std::mt19937_64 rng(o.seed);
  const llmbench::ModelLimits limits{/*vocab=*/300, /*context_length=*/8 + 3 * (5 + 4), 256, 257};
  ASSERT_TRUE(llmbench::CheckContext(o, limits).ok()) << "exactly the context";
  auto reqs = llmbench::BuildRequests(o, limits, {}, &rng);
  ASSERT_TRUE(reqs.ok()) << reqs.status();
  ASSERT_EQ(reqs->size(), 6u) << "conversations x turns";
  EXPECT_EQ((*reqs)[5].request_id(), "llmbench-1-2");
  EXPECT_EQ((*reqs)[5].seed(), 3u + 5);
  for (size_t c = 0; c < 2; ++c) {
    std::vector<llmserve::v1::GenerateRequest> conv((*reqs).begin() + 3 * c, (*reqs).begin() + 3 * c + 3);
    EXPECT_EQ(conv[0].tokens().ids_size(), 8 + 5) << "turn 1: prefix + own";
    for (int k = 0; k < 8; ++k) EXPECT_EQ(conv[0].tokens().ids(k), (*reqs)[0].tokens().ids(k)) << "shared prefix";
    for (int t = 1; t < 3; ++t) {
      SCOPED_TRACE(t);
      const llmserve::v1::GenerateRequest own = conv[t];
      ASSERT_EQ(own.tokens().ids_size(), 5) << "a later turn holds its new ids until chained";
      const std::vector<int32_t> generated = {7, 8, 9, static_cast<int32_t>(10 + t)};
      llmbench::ChainTurn(conv[t - 1], generated, &conv[t]);
      const auto& prev = conv[t - 1].tokens().ids();
      const auto& ids = conv[t].tokens().ids();
      ASSERT_EQ(ids.size(), prev.size() + 4 + 5);
      for (int k = 0; k < prev.size(); ++k) ASSERT_EQ(ids[k], prev[k]) << "extends the previous prompt";
      for (int k = 0; k < 4; ++k) ASSERT_EQ(ids[prev.size() + k], generated[static_cast<size_t>(k)]) << "then its output";
      for (int k = 0; k < 5; ++k) ASSERT_EQ(ids[prev.size() + 4 + k], own.tokens().ids(k)) << "then the new ids";
    }
    EXPECT_EQ(conv[2].tokens().ids_size() + conv[2].max_tokens(), limits.context_length);
  }
  o.turns = 4;  // 8 + 4 x 9 > 35
  const absl::Status too_long = llmbench::CheckContext(o, limits);
  EXPECT_FALSE(too_long.ok());
  EXPECT_NE(too_long.message().find("lower --turns"), std::string::npos) << too_long;
  EXPECT_FALSE(llmbench::BuildRequests(o, limits, {}, &rng).ok());
}

TEST(LlmbenchOptionsTest, PrefixAndTurnsRefuseWhatTheyCannotDo) {
  llmbench::BenchOptions o;
  o.turns = 2;
  EXPECT_TRUE(o.Validate().ok()) << o.Validate();
  o.rate = 5;
  EXPECT_FALSE(o.Validate().ok()) << "turns are closed loop only";
  o.rate = 0;
  o.len_dist = llmbench::LengthDist::kUniform;
  EXPECT_FALSE(o.Validate().ok()) << "turns use fixed lengths";
  o.len_dist = llmbench::LengthDist::kFixed;
  o.prompts_file = "p.jsonl";
  EXPECT_FALSE(o.Validate().ok()) << "turns need token prompts";
  o.turns = 1;
  o.shared_prefix_len = 4;
  EXPECT_FALSE(o.Validate().ok()) << "a shared prefix needs token prompts";
  o.prompts_file.clear();
  EXPECT_TRUE(o.Validate().ok()) << o.Validate();
  o.llamacpp_cache_prompt = true;
  EXPECT_FALSE(o.Validate().ok()) << "--llamacpp-cache-prompt over gRPC";
  o.backend = "openai";
  EXPECT_TRUE(o.Validate().ok()) << o.Validate();
  o.turns = 0;
  EXPECT_FALSE(o.Validate().ok());
}

// Runs the llmbench binary with `args` plus --json FILE; the parsed report (null if none).
json RunLlmbench(const std::vector<std::string>& args, ProcessResult* result) {
  static int n = 0;
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/llmbench_test_", getpid(), "_", n++, ".json");
  std::remove(path.c_str());
  std::vector<std::string> argv = {LLMBENCH_BINARY, "--json", path, "--progress", "lines"};
  argv.insert(argv.end(), args.begin(), args.end());
  *result = RunProcess(argv);
  std::ifstream in(path);
  if (!in) return json();
  std::stringstream ss;
  ss << in.rdbuf();
  std::remove(path.c_str());
  return json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
}

// Percentile summaries are present and ordered.
void ExpectOrdered(const json& report, const char* key) {
  SCOPED_TRACE(key);
  ASSERT_TRUE(report.contains(key));
  const json& s = report[key];
  ASSERT_TRUE(s.is_object());
  EXPECT_GT(s["count"].get<int>(), 0);
  EXPECT_GE(s["p50"].get<double>(), s["min"].get<double>());
  EXPECT_LE(s["p50"].get<double>(), s["p90"].get<double>());
  EXPECT_LE(s["p90"].get<double>(), s["p99"].get<double>());
  EXPECT_LE(s["p99"].get<double>(), s["max"].get<double>());
  EXPECT_GE(s["min"].get<double>(), 0);
}

class LlmbenchDemoTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    http_port_ = PickFreePort();
    server_ = ServerProcess::Start({"--threads", "2", absl::StrCat("--http-port=", http_port_)}, &error).release();
    if (server_ == nullptr) FAIL() << "llmserve did not start: " << error;
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (server_ == nullptr) GTEST_SKIP() << "llmserve did not start (see the suite's failure)";
  }
  static ServerProcess* server_;
  static int http_port_;  // the server's OpenAI-compatible HTTP API
};
ServerProcess* LlmbenchDemoTest::server_ = nullptr;
int LlmbenchDemoTest::http_port_ = 0;

TEST_F(LlmbenchDemoTest, ClosedLoopReportsEveryRequestAndToken) {
  ProcessResult p;
  const json r = RunLlmbench({"--addr", server_->address(), "--requests", "12", "--concurrency", "4", "--input-len",
                              "8", "--output-len", "8", "--ignore-eos"},
                             &p);
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  ASSERT_TRUE(r.is_object()) << p.out;
  EXPECT_EQ(r["requests"]["total"], 12);
  EXPECT_EQ(r["requests"]["ok"], 12);
  EXPECT_EQ(r["requests"]["failed"], 0);
  EXPECT_EQ(r["requests"]["mismatches"], 0);
  EXPECT_EQ(r["requests"]["finish_reasons"]["LENGTH"], 12);
  EXPECT_EQ(r["generated_tokens"], 96);
  EXPECT_EQ(r["prompt_tokens"], 96);
  EXPECT_GT(r["gen_tok_s"].get<double>(), 0);
  EXPECT_EQ(r["model"]["name"], "demo");
  EXPECT_FALSE(r["model"]["weight_dtype"].get<std::string>().empty());
  EXPECT_EQ(r["server"]["step_policy"], "mixed");
  EXPECT_LE(r["server"]["peak_running"].get<int>(), 4) << "closed loop of 4";
  for (const char* key : {"ttft_s", "itl_s", "tpot_s", "e2e_s", "server_ttft_s"}) ExpectOrdered(r, key);
  EXPECT_EQ(r["ttft_s"]["count"], 12);
  // One sample per token after each stream's first chunk (a first chunk may carry more than one).
  EXPECT_GT(r["itl_s"]["count"].get<int>(), 0);
  EXPECT_LE(r["itl_s"]["count"].get<int>(), 96 - 12);
  EXPECT_LE(r["ttft_s"]["p50"].get<double>(), r["e2e_s"]["p50"].get<double>());
  EXPECT_NE(p.out.find("Requests ok / failed:"), std::string::npos) << p.out;
}

// --backend openai against the same server's HTTP API: the same counts as over gRPC, and
// multi-turn chains built from the ids the chunks carry (return_token_ids).
TEST_F(LlmbenchDemoTest, OpenAiBackendOverHttpReportsEveryRequestAndToken) {
  ProcessResult p;
  const std::string addr = absl::StrCat("127.0.0.1:", http_port_);
  const json r = RunLlmbench({"--backend", "openai", "--addr", addr, "--vocab", "258", "--requests", "12",
                              "--concurrency", "4", "--input-len", "8", "--output-len", "8", "--ignore-eos"},
                             &p);
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  ASSERT_TRUE(r.is_object()) << p.out;
  EXPECT_EQ(r["requests"]["ok"], 12);
  EXPECT_EQ(r["requests"]["mismatches"], 0);
  EXPECT_EQ(r["requests"]["finish_reasons"]["LENGTH"], 12);
  EXPECT_EQ(r["generated_tokens"], 96);
  EXPECT_EQ(r["prompt_tokens"], 96);
  EXPECT_EQ(r["ttft_s"]["count"], 12);
  ExpectOrdered(r, "ttft_s");
  ExpectOrdered(r, "itl_s");
  const json turns = RunLlmbench({"--backend", "openai", "--addr", addr, "--vocab", "258", "--requests", "4",
                                  "--concurrency", "2", "--shared-prefix-len", "32", "--input-len", "8",
                                  "--output-len", "8", "--turns", "3", "--ignore-eos", "--cache-salt", "http"},
                                 &p);
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  EXPECT_EQ(turns["requests"]["ok"], 12);
  EXPECT_EQ(turns["turns"][2]["prompt_tokens"], 4 * 72) << "turn 3 = 32 + 8, + 8 generated + 8 new, twice";
  EXPECT_GT(turns["cached_tokens"].get<int>(), 0);
}

// --warmup-requests: sent first and left out of the report; with a shared prefix every
// measured request then finds the prefix cached (its own salt: no other test's blocks).
TEST_F(LlmbenchDemoTest, WarmupRequestsAreSentFirstAndNotReported) {
  ProcessResult p;
  const json r = RunLlmbench({"--addr", server_->address(), "--warmup-requests", "2", "--requests", "4",
                              "--concurrency", "2", "--shared-prefix-len", "64", "--input-len", "8",
                              "--output-len", "4", "--ignore-eos", "--cache-salt", "warmup"},
                             &p);
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  ASSERT_TRUE(r.is_object()) << p.out;
  EXPECT_EQ(r["config"]["warmup_requests"], 2);
  EXPECT_EQ(r["requests"]["total"], 4);
  EXPECT_EQ(r["requests"]["ok"], 4);
  EXPECT_EQ(r["generated_tokens"], 16);
  EXPECT_EQ(r["prompt_tokens"], 4 * 72);
  EXPECT_GE(r["cached_tokens"].get<int>(), 4 * 64) << "the warm-up left the 64-token prefix cached";
  EXPECT_NE(p.err.find("warm-up: 2 requests, 0 failed"), std::string::npos) << p.err;
  EXPECT_NE(p.out.find("Warm-up:"), std::string::npos) << p.out;
}

TEST_F(LlmbenchDemoTest, TurnsWithASharedPrefixReportPerTurnAndCacheFigures) {
  ProcessResult p;
  const json r = RunLlmbench({"--addr", server_->address(), "--requests", "4", "--concurrency", "2",
                              "--shared-prefix-len", "32", "--input-len", "8", "--output-len", "8", "--turns", "3",
                              "--ignore-eos", "--cache-salt", "t1"},
                             &p);
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  ASSERT_TRUE(r.is_object()) << p.out;
  EXPECT_EQ(r["config"]["turns"], 3);
  EXPECT_EQ(r["requests"]["total"], 12) << "4 conversations x 3 turns";
  EXPECT_EQ(r["requests"]["ok"], 12);
  EXPECT_EQ(r["requests"]["mismatches"], 0);
  EXPECT_EQ(r["generated_tokens"], 96);
  // Turn t's prompt: 32 + 8 on turn 1, then + 8 generated + 8 new per turn.
  ASSERT_EQ(r["turns"].size(), 3u);
  EXPECT_EQ(r["turns"][0]["prompt_tokens"], 4 * 40);
  EXPECT_EQ(r["turns"][1]["prompt_tokens"], 4 * 56);
  EXPECT_EQ(r["turns"][2]["prompt_tokens"], 4 * 72);
  EXPECT_EQ(r["prompt_tokens"], 4 * (40 + 56 + 72));
  EXPECT_EQ(r["turns"][2]["ttft_s"]["count"], 4);
  EXPECT_GE(r["cached_tokens"].get<int>(), 0);
  EXPECT_LE(r["cached_tokens"].get<int>(), r["prompt_tokens"].get<int>());
  EXPECT_TRUE(r["server"].contains("kv_blocks_cached"));
  EXPECT_NE(p.out.find("Per turn"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("hit rate"), std::string::npos) << p.out;
}

TEST_F(LlmbenchDemoTest, OpenLoopWithTextPromptsAndDashedOrUnderscoredFlags) {
  const std::string prompts = absl::StrCat(::testing::TempDir(), "/llmbench_prompts_", getpid(), ".jsonl");
  {
    std::ofstream out(prompts);
    out << "\"Hello there\"\n\n\"caf\\u00e9 au lait\"\n";
  }
  ProcessResult p;
  const json r = RunLlmbench({"--addr=" + server_->address(), "--rate", "40", "--requests", "10", "--output_len", "6",
                              "--ignore-eos", "--prompts-file", prompts, "--temperature", "0.8", "--top-k", "20",
                              "--top_p", "0.9", "--seed", "5", "--len-dist", "uniform"},
                             &p);
  std::remove(prompts.c_str());
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  ASSERT_TRUE(r.is_object()) << p.out;
  EXPECT_EQ(r["config"]["mode"], "open");
  EXPECT_EQ(r["requests"]["ok"], 10);
  EXPECT_EQ(r["requests"]["mismatches"], 0);
  EXPECT_GT(r["generated_tokens"].get<int>(), 0);
  EXPECT_LE(r["generated_tokens"].get<int>(), 10 * 9) << "uniform output lengths in [3, 9]";
  EXPECT_GT(r["prompt_tokens"].get<int>(), 0);
  ExpectOrdered(r, "e2e_s");
}

// llama-server's streaming /v1/completions as b10573 writes it: no token_ids; one token per
// chunk, whose id is in "__verbose".tokens when the request asked "verbose": true; the last
// chunk has the finish reason, the usage and "timings". Multi-turn conversations are built
// from those ids: each turn's prompt is the last prompt, the ids it generated, then new ids.
TEST(LlmbenchLlamaCppTest, OpenAiBackendTakesTheIdsFromVerboseChunks) {
  httplib::Server fake;
  std::mutex mu;
  std::vector<json> bodies;
  fake.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"object":"list","data":[{"id":"fake.gguf","object":"model"}]})", "application/json");
  });
  fake.Post("/v1/completions", [&](const httplib::Request& req, httplib::Response& res) {
    const json body = json::parse(req.body);
    {
      std::lock_guard<std::mutex> lock(mu);
      bodies.push_back(body);
    }
    const int prompt = static_cast<int>(body["prompt"].size());
    const int n = body["max_tokens"].get<int>();
    const bool verbose = body.value("verbose", false);
    std::string out;
    for (int i = 0; i < n; ++i) {
      json chunk = {{"choices", {{{"text", "x"}, {"index", 0}, {"finish_reason", nullptr}}}},
                    {"object", "text_completion"}};
      if (verbose) chunk["__verbose"] = {{"tokens", {1000 + prompt + i}}, {"content", "x"}};
      out += "data: " + chunk.dump() + "\n\n";
    }
    json last = {{"choices", {{{"text", ""}, {"index", 0}, {"finish_reason", "length"}}}},
                 {"usage", {{"completion_tokens", n}, {"prompt_tokens", prompt}}},
                 {"timings", {{"cache_n", prompt / 2}}}};
    if (verbose) last["__verbose"] = {{"tokens", json::array()}};
    out += "data: " + last.dump() + "\n\ndata: [DONE]\n\n";
    res.set_content(out, "text/event-stream");
  });
  const int port = fake.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serve([&] { fake.listen_after_bind(); });  // the port already listens: clients queue
  ProcessResult p;
  const json r = RunLlmbench({"--backend", "openai", "--addr", absl::StrCat("127.0.0.1:", port), "--vocab", "500",
                              "--requests", "2", "--concurrency", "1", "--shared-prefix-len", "16", "--input-len",
                              "8", "--output-len", "4", "--turns", "3", "--ignore-eos"},
                             &p);
  fake.stop();
  serve.join();
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  ASSERT_TRUE(r.is_object()) << p.out;
  EXPECT_EQ(r["requests"]["ok"], 6);
  EXPECT_EQ(r["generated_tokens"], 24);
  EXPECT_EQ(r["prompt_tokens"], 2 * (24 + 36 + 48));
  EXPECT_EQ(r["cached_tokens"], 2 * (12 + 18 + 24)) << "llama.cpp's timings.cache_n";
  ASSERT_EQ(bodies.size(), 6u);
  // Concurrency 1: conversation A's three turns, then B's.
  for (int conv = 0; conv < 2; ++conv) {
    for (int turn = 1; turn < 3; ++turn) {
      SCOPED_TRACE(absl::StrCat("conversation ", conv, " turn ", turn + 1));
      const json& before = bodies[static_cast<size_t>(conv * 3 + turn - 1)];
      const json& now = bodies[static_cast<size_t>(conv * 3 + turn)];
      EXPECT_EQ(now["verbose"], true);
      const std::vector<int> a = before["prompt"].get<std::vector<int>>();
      const std::vector<int> b = now["prompt"].get<std::vector<int>>();
      ASSERT_EQ(b.size(), a.size() + 4 + 8);
      EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin())) << "the last prompt opens the next";
      for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(b[a.size() + static_cast<size_t>(i)], 1000 + static_cast<int>(a.size()) + i)
            << "the ids the last turn generated, from __verbose";
      }
    }
  }
}

TEST(LlmbenchDeadServerTest, FailuresAreCountedByCodeAndExitNonZero) {
  const int port = PickFreePort();
  ProcessResult p;
  const json r = RunLlmbench({"--addr", absl::StrCat("127.0.0.1:", port), "--requests", "5", "--concurrency", "2",
                              "--input-len", "4", "--output-len", "4"},
                             &p);
  EXPECT_EQ(p.exit_code, 1) << p.err;
  ASSERT_TRUE(r.is_object()) << p.out << p.err;
  EXPECT_EQ(r["requests"]["ok"], 0);
  EXPECT_EQ(r["requests"]["failed"], 5);
  EXPECT_EQ(r["requests"]["failed_by_code"]["UNAVAILABLE"], 5);
  EXPECT_TRUE(r["model"].is_null());
  const ProcessResult allowed = RunProcess({LLMBENCH_BINARY, "--addr", absl::StrCat("127.0.0.1:", port), "--requests",
                                            "2", "--input-len", "4", "--output-len", "4", "--allow-failures"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
}

TEST(LlmbenchUsageTest, BadFlagsExitTwo) {
  EXPECT_EQ(RunProcess({LLMBENCH_BINARY, "--no-such-flag", "1"}).exit_code, 2);
  EXPECT_EQ(RunProcess({LLMBENCH_BINARY, "--requests", "0"}).exit_code, 2);
  EXPECT_EQ(RunProcess({LLMBENCH_BINARY, "--len-dist", "normal"}).exit_code, 2);
  EXPECT_EQ(RunProcess({LLMBENCH_BINARY, "--turns", "2", "--rate", "5"}).exit_code, 2);
  const ProcessResult help = RunProcess({LLMBENCH_BINARY, "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--input-len"), std::string::npos);
}

}  // namespace
}  // namespace llmserve::testing
