// Scale-out over the OpenAI-compatible HTTP API (issue 26): three llmserve replicas (the
// demo model, --http-port) behind nginx as an HTTP/1.1 load balancer
// (tests/scaleout/nginx_http.conf.in), 16 client threads streaming /v1/completions through it.
//
//   phase 1: SIGTERM one replica mid-run: its in-flight streams finish, new requests go to
//            the others (its HTTP port closes; nginx retries the refused connection
//            elsewhere), zero failed requests, exit code 0
//   phase 2: the drained replica restarted; SIGKILL another mid-run: only requests in
//            flight on it fail (nginx cuts a stream whose upstream broke), every request
//            started after it died succeeds
//
// A request is OK when it answers 200, streams "data: [DONE]" and its usage says kTokens.
// The replica that served it is nginx's $upstream_addr (response header x-upstream).
// nginx: $NGINX or /usr/sbin/nginx; without it the test skips (fails under CI=true).
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/openai_client.h"
#include "tests/integration/server_process.h"
#include "tests/scaleout/nginx_process.h"
#include "tests/util/test_assets.h"

namespace llmserve::testing {
namespace {

constexpr int kReplicas = 3;
constexpr int kThreads = 16;
constexpr int kTokens = 64;
constexpr int kCallsPerThread = 30;
constexpr int kCalls = kThreads * kCallsPerThread;

// One streamed completion through nginx.
struct HttpCall {
  absl::Time start, end;
  HttpResult result;
  std::string upstream;  // every replica tried, the last one served

  bool ok() const {
    return result.sent && result.status == 200 && result.done && result.finish_reason == "length" &&
           result.usage.is_object() && result.usage.value("completion_tokens", -1) == kTokens;
  }
  std::string served_by() const {
    const size_t comma = upstream.rfind(", ");
    return comma == std::string::npos ? upstream : upstream.substr(comma + 2);
  }
  std::string Describe() const {
    return absl::StrCat("sent ", result.sent, " HTTP ", result.status, " done ", result.done, " finish '",
                        result.finish_reason, "' body ", result.raw.substr(0, 200));
  }
};

HttpCall RunCall(int port, const std::string& prompt) {
  HttpCall c;
  const nlohmann::json body = {{"prompt", prompt},  {"max_tokens", kTokens}, {"temperature", 0},
                               {"ignore_eos", true}, {"stream", true},
                               {"stream_options", {{"include_usage", true}}}};
  c.start = absl::Now();
  c.result = PostJson(port, "/v1/completions", body);
  c.end = absl::Now();
  if (auto it = c.result.headers.find("x-upstream"); it != c.result.headers.end()) c.upstream = it->second;
  return c;
}

// kThreads threads run kCallsPerThread requests each, back to back; `on_progress(done)`
// runs on the caller's thread (polled every few ms) until it returns true once.
std::vector<HttpCall> RunLoad(int port, const std::function<bool(int)>& on_progress) {
  std::vector<HttpCall> calls(kCalls);
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCallsPerThread; ++i) {
        calls[static_cast<size_t>(t * kCallsPerThread + i)] = RunCall(port, absl::StrCat("Scale out ", t, " ", i));
        done.fetch_add(1);
      }
    });
  }
  bool fired = false;
  for (const absl::Time end = absl::Now() + absl::Seconds(120); !fired && done.load() < kCalls && absl::Now() < end;) {
    fired = on_progress(done.load());
    if (!fired) absl::SleepFor(absl::Milliseconds(5));
  }
  for (auto& th : threads) th.join();
  return calls;
}

void PrintSummary(const std::string& phase, const std::vector<HttpCall>& calls) {
  std::map<std::string, int> by_replica;
  int failed = 0, retried = 0;
  for (const HttpCall& c : calls) {
    ++by_replica[c.served_by().empty() ? "(none)" : c.served_by()];
    failed += c.ok() ? 0 : 1;
    retried += c.upstream.find(", ") != std::string::npos ? 1 : 0;
  }
  std::cout << "[HTTP " << phase << "] " << calls.size() << " requests, " << failed << " failed, " << retried
            << " retried by nginx\n";
  for (const auto& [replica, n] : by_replica) std::cout << "  served by " << replica << ": " << n << "\n";
}

class HttpScaleOutTest : public ::testing::Test {
 protected:
  // A replica on `http_port` (its gRPC port is its own); Launch only: the caller waits.
  static std::vector<std::string> ReplicaArgs(int http_port) {
    return {"--threads=1", "--max-running=16", "--kv-blocks=512", absl::StrCat("--http-port=", http_port)};
  }
  void SetUp() override {
    nginx_bin_ = FindNginx();
    if (nginx_bin_.empty()) {
      if (InCi()) FAIL() << "nginx not found (scripts/install-deps.sh installs it; or set NGINX)";
      GTEST_SKIP() << "nginx not found (scripts/install-deps.sh installs it; or set NGINX)";
    }
    std::string error;
    for (int i = 0; i < kReplicas; ++i) {
      http_ports_.push_back(PickFreePort());
      replicas_.push_back(ServerProcess::Start(ReplicaArgs(http_ports_.back()), &error));
      ASSERT_NE(replicas_.back(), nullptr) << error;
    }
    nginx_ = NginxProcess::Start(nginx_bin_, LLMSERVE_SOURCE_DIR "/tests/scaleout/nginx_http.conf.in", http_ports_,
                                 &error);
    ASSERT_NE(nginx_, nullptr) << error;
  }
  std::string Http(int replica) const { return absl::StrCat("127.0.0.1:", http_ports_[static_cast<size_t>(replica)]); }

  std::string nginx_bin_;
  std::vector<int> http_ports_;
  std::vector<std::unique_ptr<ServerProcess>> replicas_;
  std::unique_ptr<NginxProcess> nginx_;
};

TEST_F(HttpScaleOutTest, SigtermDrainsWithoutFailuresAndSigkillFailsOnlyItsInFlightRequests) {
  // ---- phase 1: SIGTERM replica 0 after a third of the requests.
  ServerProcess& drained = *replicas_[0];
  const int drained_grpc_port = drained.port();
  absl::Time term_at = absl::InfiniteFuture(), closed_at = absl::InfiniteFuture();
  std::vector<HttpCall> calls = RunLoad(nginx_->port(), [&](int done) {
    if (done < kCalls / 3) return false;
    term_at = absl::Now();
    drained.Signal(SIGTERM);
    for (const absl::Time end = absl::Now() + absl::Seconds(10); absl::Now() < end;) {
      if (drained.Log().find("port closed") != std::string::npos) {
        closed_at = absl::Now();
        break;
      }
      absl::SleepFor(absl::Milliseconds(2));
    }
    return true;
  });
  ASSERT_NE(term_at, absl::InfiniteFuture()) << "the run ended before a third of the requests";
  PrintSummary("SIGTERM", calls);
  EXPECT_EQ(drained.WaitExit(absl::Seconds(60)), 0);
  std::map<std::string, int> served;
  int in_flight_on_drained = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    const HttpCall& c = calls[i];
    SCOPED_TRACE(absl::StrCat("phase 1 request ", i, " via ", c.upstream));
    EXPECT_TRUE(c.ok()) << c.Describe();
    ++served[c.served_by()];
    if (c.served_by() == Http(0) && c.start < term_at && c.end > term_at) ++in_flight_on_drained;
    if (c.start > closed_at) {
      EXPECT_NE(c.served_by(), Http(0));
    }
  }
  for (int r = 0; r < kReplicas; ++r) EXPECT_GT(served[Http(r)], 0) << "replica " << r << " served nothing";
  EXPECT_GT(in_flight_on_drained, 0) << "no stream was in flight on the SIGTERMed replica: nothing was drained";
  EXPECT_NE(drained.Log().find("drained in"), std::string::npos) << drained.Log();

  // ---- phase 2: replica 0 back on its ports; SIGKILL replica 1 after a third.
  replicas_[0] = ServerProcess::Launch(ReplicaArgs(http_ports_[0]), drained_grpc_port);
  ASSERT_TRUE(replicas_[0]->WaitServing(absl::Seconds(60))) << replicas_[0]->Log();
  ServerProcess& killed = *replicas_[1];
  absl::Time kill_at = absl::InfiniteFuture(), dead_at = absl::InfiniteFuture();
  calls = RunLoad(nginx_->port(), [&](int done) {
    if (done < kCalls / 3) return false;
    kill_at = absl::Now();
    killed.Signal(SIGKILL);
    killed.WaitExit(absl::Seconds(10));
    dead_at = absl::Now();
    return true;
  });
  ASSERT_NE(kill_at, absl::InfiniteFuture()) << "the run ended before a third of the requests";
  PrintSummary("SIGKILL", calls);
  int failed = 0, after = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    const HttpCall& c = calls[i];
    SCOPED_TRACE(absl::StrCat("phase 2 request ", i, " via ", c.upstream));
    if (c.start >= dead_at) ++after;
    if (c.ok()) continue;
    ++failed;
    // Only a request in flight on the killed replica may fail.
    EXPECT_LT(c.start, dead_at) << c.Describe();
    EXPECT_GE(c.end, kill_at);
    EXPECT_EQ(c.served_by(), Http(1)) << c.Describe();
  }
  EXPECT_LE(failed, kThreads);
  EXPECT_GE(after, kCalls / 2) << "requests did not keep coming after the SIGKILL";
}

}  // namespace
}  // namespace llmserve::testing
