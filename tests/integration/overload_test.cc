// The outside probe's overload, cancel-storm and soak runs as bounded integration tests
// against the real llmserve binary (demo model): 200 concurrent streams, 300 cancels, a
// 60 s soak of mixed traffic. Every stream that ends OK carries exactly one Final and
// nothing after it, every refusal is a clear status, the KV blocks used return to 0, and
// the soak's resident memory at the end is within 20% of its middle.
#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/integration/server_process.h"

// gcc says __SANITIZE_ADDRESS__, clang __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
#define LLMSERVE_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LLMSERVE_TEST_UNDER_ASAN 1
#endif
#endif
#ifndef LLMSERVE_TEST_UNDER_ASAN
#define LLMSERVE_TEST_UNDER_ASAN 0
#endif

namespace llmserve::testing {
namespace {

namespace v1 = ::llmserve::v1;

// How one stream ended, as its client saw it.
struct Outcome {
  grpc::StatusCode code = grpc::OK;
  int finals = 0;
  bool message_after_final = false;
};

// Generate, cancelling the call (TryCancel) after `cancel_after` messages (-1: never) or
// at `deadline`.
Outcome Stream(v1::LlmService::Stub& stub, const v1::GenerateRequest& request, int cancel_after,
               absl::Duration deadline = absl::Seconds(120)) {
  Outcome out;
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  auto reader = stub.Generate(&ctx, request);
  v1::GenerateResponse msg;
  int seen = 0;
  while (reader->Read(&msg)) {
    if (out.finals > 0) out.message_after_final = true;
    if (msg.has_final()) ++out.finals;
    if (++seen == cancel_after) ctx.TryCancel();
  }
  out.code = reader->Finish().error_code();
  return out;
}

// Counts of outcomes by status code, and the protocol violations among the OK ones.
struct Tally {
  std::mutex mu;
  std::map<grpc::StatusCode, int> codes;
  int ok_without_one_final = 0;
  int message_after_final = 0;
  void Add(const Outcome& o) {
    std::lock_guard<std::mutex> lock(mu);
    ++codes[o.code];
    if (o.code == grpc::OK && o.finals != 1) ++ok_without_one_final;
    if (o.message_after_final) ++message_after_final;
  }
  int count(grpc::StatusCode c) {
    std::lock_guard<std::mutex> lock(mu);
    return codes[c];
  }
  // Streams that ended by running out, a cancel or a deadline: no other code.
  int clean_ends() { return count(grpc::OK) + count(grpc::CANCELLED) + count(grpc::DEADLINE_EXCEEDED); }
  std::string Describe() {
    std::lock_guard<std::mutex> lock(mu);
    std::string s;
    for (const auto& [code, n] : codes) absl::StrAppend(&s, "code ", static_cast<int>(code), ": ", n, "; ");
    return s;
  }
};

v1::GenerateRequest Request(int i, int max_tokens) {
  v1::GenerateRequest r = GreedyRequest(absl::StrCat("Request ", i, ": once upon a time"), max_tokens);
  r.set_ignore_eos(true);
  return r;
}

// VmRSS of `pid` in KiB (0 if unreadable).
int64_t RssKib(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      int64_t kib = 0;
      in >> kib;
      return kib;
    }
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

class OverloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    server_ = ServerProcess::Start({"--threads=2"}, &error);
    ASSERT_NE(server_, nullptr) << error;
  }
  // Several connections, as many clients would open.
  std::vector<std::unique_ptr<v1::LlmService::Stub>> Stubs(int n) {
    std::vector<std::unique_ptr<v1::LlmService::Stub>> out;
    for (int i = 0; i < n; ++i) {
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      out.push_back(v1::LlmService::NewStub(
          grpc::CreateCustomChannel("ipv4:" + server_->address(), grpc::InsecureChannelCredentials(), args)));
    }
    return out;
  }
  // All `total` streams ended cleanly, the OK ones with exactly one Final and nothing after
  // it; then the server is idle (no KV block in use) and serves the next request.
  void ExpectCleanEndsThenIdle(Tally& tally, int total) {
    EXPECT_EQ(tally.clean_ends(), total) << tally.Describe();
    EXPECT_EQ(tally.ok_without_one_final, 0);
    EXPECT_EQ(tally.message_after_final, 0);
    ExpectIdleAndServing();
  }
  void ExpectIdleAndServing() {
    auto stub = server_->stub();
    EXPECT_TRUE(WaitBlocksFree(*stub, absl::Seconds(30))) << "KV blocks still in use";
    const StreamResult after = Generate(*stub, Request(0, 4));
    EXPECT_TRUE(after.status.ok()) << after.status.error_message();
    EXPECT_TRUE(after.has_final);
    int code = 0;
    EXPECT_FALSE(server_->Exited(&code));
  }
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(OverloadTest, TwoHundredConcurrentStreamsEachEndWithExactlyOneFinal) {
  auto stubs = Stubs(4);
  Tally tally;
  std::vector<std::thread> threads;
  for (int i = 0; i < 200; ++i) {
    threads.emplace_back([&, i] { tally.Add(Stream(*stubs[i % stubs.size()], Request(i, 32), -1)); });
  }
  for (std::thread& t : threads) t.join();
  // 200 fit the running batch (64) and the waiting queue (256): all are served.
  EXPECT_EQ(tally.count(grpc::OK), 200) << tally.Describe();
  ExpectCleanEndsThenIdle(tally, 200);
}

TEST_F(OverloadTest, ThreeHundredCancelsLeaveNothingBehind) {
  auto stubs = Stubs(4);
  Tally tally;
  std::atomic<int> next{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 30; ++w) {
    workers.emplace_back([&, w] {
      std::mt19937 rng(static_cast<uint32_t>(w));
      for (int i; (i = next.fetch_add(1)) < 300;) {
        // Cancelled before the first message, after a few, or by a short deadline.
        const int how = i % 3;
        const Outcome o = how == 0   ? Stream(*stubs[i % 4], Request(i, 256), 1)
                          : how == 1 ? Stream(*stubs[i % 4], Request(i, 256), 1 + static_cast<int>(rng() % 8))
                                     : Stream(*stubs[i % 4], Request(i, 256), -1,
                                              absl::Milliseconds(1 + static_cast<int>(rng() % 30)));
        tally.Add(o);
      }
    });
  }
  for (std::thread& t : workers) t.join();
  EXPECT_GT(tally.count(grpc::CANCELLED) + tally.count(grpc::DEADLINE_EXCEEDED), 200) << tally.Describe();
  ExpectCleanEndsThenIdle(tally, 300);
}

TEST_F(OverloadTest, SixtySecondSoakKeepsMemoryFlat) {
  auto stubs = Stubs(4);
  Tally tally;
  std::atomic<bool> stop{false};
  std::atomic<int> next{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 16; ++w) {
    workers.emplace_back([&, w] {
      std::mt19937 rng(static_cast<uint32_t>(100 + w));
      while (!stop.load()) {
        const int i = next.fetch_add(1);
        const int kind = static_cast<int>(rng() % 10);
        const int tokens = 8 + static_cast<int>(rng() % 120);
        // 7 in 10 run to the end, 2 are cancelled part way, 1 has a short deadline.
        const Outcome o = kind < 7   ? Stream(*stubs[w % 4], Request(i, tokens), -1)
                          : kind < 9 ? Stream(*stubs[w % 4], Request(i, tokens), 1 + static_cast<int>(rng() % 4))
                                     : Stream(*stubs[w % 4], Request(i, tokens), -1, absl::Milliseconds(5));
        tally.Add(o);
      }
    });
  }
  const absl::Time start = absl::Now();
  absl::SleepFor(absl::Seconds(30));
  const int64_t middle = RssKib(server_->pid());
  absl::SleepFor(start + absl::Seconds(60) - absl::Now());
  const int64_t end = RssKib(server_->pid());
  stop.store(true);
  for (std::thread& t : workers) t.join();

  ASSERT_GT(middle, 0);
#if LLMSERVE_TEST_UNDER_ASAN
  // AddressSanitizer keeps freed memory in its quarantine (up to 256 MiB) to catch uses
  // after free, so an ASan server's RSS grows with traffic by design; the release build
  // checks the bound.
  std::printf("soak under ASan: RSS not compared (quarantine)\n");
#else
  EXPECT_LE(end, middle * 12 / 10) << "RSS grew from " << middle << " KiB at 30 s to " << end << " KiB at 60 s";
#endif
  // A stalled server would stop the 16 clients at their first calls; how many more run in
  // 60 s is the machine's speed (an ASan build on a busy machine managed ~300), not a check.
  EXPECT_GT(next.load(), 100) << "the soak barely ran";
  ExpectCleanEndsThenIdle(tally, next.load());
  std::printf("soak: %d requests, RSS %lld KiB at 30 s, %lld KiB at 60 s\n", next.load(),
              static_cast<long long>(middle), static_cast<long long>(end));
}

}  // namespace
}  // namespace llmserve::testing
