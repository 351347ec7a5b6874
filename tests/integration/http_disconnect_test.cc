// Issue 44, item 1: a client that goes away frees its request's KV blocks within a step,
// streaming or not (the request ends cancelled, far short of max_tokens); a client that
// reads none of its streamed response is dropped after --http-write-timeout and its request
// aborted. The built-in demo model: context 2048, slower than stories260K, so a
// generation of ~2000 tokens is still running when the client leaves.
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/integration/http_hardening_util.h"
#include "tests/util/prom_text.h"

namespace llmserve::testing {
namespace {

namespace v1 = llmserve::v1;
using json = nlohmann::json;

constexpr int kMaxTokens = 2000;  // the demo model's context is 2048

// The engine's one line for request `id`: its state ("finished_cancelled") and completion
// tokens, once logged (polled up to 10 s).
struct Finished {
  std::string state;
  int completion_tokens = -1;
};
std::optional<Finished> FinishedLine(ServerProcess& server, const std::string& id) {
  const std::regex line("\\(" + id + "\\) finished: (\\w+), \\d+ prompt \\+ (\\d+) completion tokens");
  for (const absl::Time end = absl::Now() + absl::Seconds(10); absl::Now() < end; absl::SleepFor(absl::Milliseconds(50))) {
    std::smatch m;
    const std::string log = server.Log();
    if (std::regex_search(log, m, line)) return Finished{m[1].str(), std::stoi(m[2].str())};
  }
  return std::nullopt;
}

// A metrics sample (0 when absent).
double Metric(int port, const std::string& name, const std::map<std::string, std::string>& labels = {}) {
  RawConnection c(ConnectTo(port));
  RawResponse r;
  if (!c.valid() || !c.Send(HttpRequest("GET", "/metrics")) || c.ReadResponse(&r, absl::Seconds(5)) != ReadEnd::kOk) {
    ADD_FAILURE() << "cannot scrape /metrics";
    return -1;
  }
  return FindSample(ParsePromText(r.body), name, labels).value_or(0);
}

std::string LongCompletion(const std::string& id, bool stream, int logprobs = -1) {
  json body = {{"prompt", "Cancel me"}, {"max_tokens", kMaxTokens}, {"ignore_eos", true}, {"stream", stream}};
  if (logprobs >= 0) body["logprobs"] = logprobs;
  return HttpRequest("POST", "/v1/completions", body.dump(), {"X-Request-Id: " + id});
}

TEST_F(HttpHardeningTest, AClosedConnectionFreesItsKvWithinAStep) {
  Start({}, /*demo=*/true);
  if (HasFatalFailure() || IsSkipped()) return;
  int aborted = 0;
  for (const bool stream : {true, false}) {
    const std::string id = stream ? "gone-streaming" : "gone-whole";
    SCOPED_TRACE(id);
    const double tokens_before = Metric(metrics_port_, "llmserve_generation_tokens_total");
    RawConnection c = Connect();
    ASSERT_TRUE(c.Send(LongCompletion(id, stream)));
    if (stream) {
      ASSERT_TRUE(c.ReadUntil("data: ", absl::Seconds(30))) << "no first event";
    }
    bool running = false;
    for (const absl::Time end = absl::Now() + absl::Seconds(30); !running && absl::Now() < end;) {
      const v1::ServerInfo info = ServerInfo(*stub_);
      running = info.running_requests() == 1 && info.kv_blocks_used() > 0;
    }
    ASSERT_TRUE(running) << "the request never showed as running with KV blocks";
    c.Close();  // mid-generation
    const absl::Time closed = absl::Now();
    const bool freed = WaitBlocksFree(*stub_, absl::Seconds(30));
    const absl::Duration took = absl::Now() - closed;
    std::cerr << id << ": KV freed " << Ms(took) << " ms after the close\n";
    EXPECT_TRUE(freed) << "blocks still in use after " << took << ": " << ServerInfo(*stub_).kv_blocks_used();
    const std::optional<Finished> f = FinishedLine(*server_, id);
    ASSERT_TRUE(f.has_value()) << "no finished line for " << id;
    std::cerr << id << ": " << f->state << " after " << f->completion_tokens << " of " << kMaxTokens << " tokens\n";
    EXPECT_EQ(f->state, "finished_cancelled");
    EXPECT_LT(f->completion_tokens, kMaxTokens / 2);
    ++aborted;
    // The metrics agree: one more abort, far fewer than max_tokens generated.
    double aborts = -1;
    for (const absl::Time end = absl::Now() + absl::Seconds(5); aborts < aborted && absl::Now() < end;) {
      aborts = Metric(metrics_port_, "llmserve_request_success_total", {{"finished_reason", "abort"}});
    }
    EXPECT_EQ(aborts, aborted);
    EXPECT_LT(Metric(metrics_port_, "llmserve_generation_tokens_total") - tokens_before, kMaxTokens / 2);
  }
}

TEST_F(HttpHardeningTest, AClientThatReadsNothingIsDroppedAfterTheWriteTimeout) {
  constexpr int kWriteTimeoutSeconds = 1;
  Start({absl::StrCat("--http-write-timeout=", kWriteTimeoutSeconds)}, /*demo=*/true);
  if (HasFatalFailure() || IsSkipped()) return;
  // A small receive buffer and MSS keep what the kernels buffer (both sides) far below the
  // response: ~700 bytes a token with 20 logprobs, ~1.4 MB in all.
  RawConnection c = Connect({.rcvbuf = 4096, .maxseg = 536});
  const absl::Time sent = absl::Now();
  ASSERT_TRUE(c.Send(LongCompletion("never-reads", /*stream=*/true, /*logprobs=*/20)));
  const bool freed = WaitBlocksFree(*stub_, absl::Seconds(30));
  const absl::Duration took = absl::Now() - sent;
  std::cerr << "KV freed " << Ms(took) << " ms after the request (write timeout " << kWriteTimeoutSeconds << " s)\n";
  EXPECT_TRUE(freed) << "blocks still in use: " << ServerInfo(*stub_).kv_blocks_used();
  const std::optional<Finished> f = FinishedLine(*server_, "never-reads");
  ASSERT_TRUE(f.has_value());
  std::cerr << "never-reads: " << f->state << " after " << f->completion_tokens << " of " << kMaxTokens << " tokens\n";
  // However the generation ended, the server must drop the connection within the write
  // timeout of its last successful write: wait 3x more, then read what it had buffered.
  absl::SleepFor(absl::Seconds(3 * kWriteTimeoutSeconds + 1));
  size_t bytes = 0;
  std::string tail;
  const ReadEnd end = c.WaitPeerClosed(absl::Seconds(10), &bytes, &tail);
  std::cerr << "then read " << bytes << " bytes and " << ReadEndName(end) << "\n";
  EXPECT_NE(end, ReadEnd::kTimeout) << "the server did not close the connection";
  EXPECT_EQ(tail.find("data: [DONE]"), std::string::npos) << "the whole response was delivered: not dropped";
  if (f->state == "finished_length") {
    // The engine finished before the response stalled for the write timeout (a fast
    // machine): the abort itself is not exercised; the drop is.
    std::cerr << "NOTE: the generation finished before the drop; the abort was not exercised\n";
  } else {
    EXPECT_EQ(f->state, "finished_cancelled");
    EXPECT_LT(f->completion_tokens, kMaxTokens);
  }
}

}  // namespace
}  // namespace llmserve::testing
