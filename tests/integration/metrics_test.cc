// /metrics of the real llmserve binary (demo model): scraped over plain HTTP after a few
// requests, the counters match what the clients saw, the KV gauge returns to 0 when idle,
// promtool accepts the exposition; a busy metrics port is an error; --metrics-prefix.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/integration/server_process.h"
#include "tests/util/prom_text.h"

namespace llmserve::testing {
namespace {

namespace v1 = ::llmserve::v1;

// GET http://127.0.0.1:port/path with a bare socket: the body, or nullopt (and *error)
// if the connection or the status is not right.
std::optional<std::string> HttpGet(int port, const std::string& path, std::string* error) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = "socket() failed";
    return std::nullopt;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  timeval tv{10, 0};  // a hung server fails the test instead of hanging it
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    *error = "connect failed";
    return std::nullopt;
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";  // 1.0: the server closes
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    close(fd);
    *error = "send failed";
    return std::nullopt;
  }
  std::string resp;
  char buf[8192];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) resp.append(buf, static_cast<size_t>(n));
  close(fd);
  const size_t body = resp.find("\r\n\r\n");
  if (resp.rfind("HTTP/1.", 0) != 0 || resp.find(" 200 ") == std::string::npos || body == std::string::npos ||
      resp.find(" 200 ") > body) {
    *error = "unexpected response: " + resp.substr(0, 200);
    return std::nullopt;
  }
  return resp.substr(body + 4);
}

// Scrapes until `done` holds for the samples (bounded; the engine updates the gauges just
// after publishing the stats GetServerInfo reads). The last scrape's text.
template <typename Pred>
std::string ScrapeUntil(int port, Pred done) {
  std::string text, error;
  const absl::Time end = absl::Now() + absl::Seconds(10);
  do {
    std::optional<std::string> got = HttpGet(port, "/metrics", &error);
    EXPECT_TRUE(got.has_value()) << error;
    if (!got.has_value()) return "";
    text = *got;
    if (done(ParsePromText(text))) break;
    absl::SleepFor(absl::Milliseconds(20));
  } while (absl::Now() < end);
  return text;
}

TEST(MetricsIntegrationTest, CountersMatchTheClientsAndPromtoolAcceptsTheScrape) {
  const int metrics_port = PickFreePort();
  std::string error;
  auto server = ServerProcess::Start({"--threads=2", "--metrics-port=" + std::to_string(metrics_port)}, &error);
  ASSERT_NE(server, nullptr) << error;
  auto stub = server->stub();
  int64_t received = 0, prompt = 0;
  for (const char* text : {"Hello", "Once upon a time", "A third prompt"}) {
    const StreamResult r = Generate(*stub, GreedyRequest(text, 12));
    ASSERT_TRUE(r.status.ok()) << r.status.error_message();
    received += static_cast<int64_t>(r.ids.size());
    prompt += r.final_msg.usage().prompt_tokens();
  }
  ASSERT_GT(received, 0);
  v1::GenerateRequest empty;  // no input: INVALID_ARGUMENT at the door
  EXPECT_EQ(Generate(*stub, empty).status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(WaitBlocksFree(*stub, absl::Seconds(10)));

  const std::map<std::string, std::string> model = {{"model_name", "demo"}};
  const std::string text = ScrapeUntil(metrics_port, [&](const std::vector<PromSample>& s) {
    return FindSample(s, "llmserve_kv_cache_usage_perc", model) == 0.0 &&
           FindSample(s, "llmserve_num_requests_running", model) == 0.0;
  });
  const auto s = ParsePromText(text);
  EXPECT_EQ(FindSample(s, "llmserve_generation_tokens_total", model), static_cast<double>(received)) << text;
  EXPECT_EQ(FindSample(s, "llmserve_prompt_tokens_total", model), static_cast<double>(prompt));
  EXPECT_EQ(FindSample(s, "llmserve_kv_cache_usage_perc", model), 0.0);
  EXPECT_EQ(FindSample(s, "llmserve_kv_cache_blocks_used", model), 0.0);
  EXPECT_GT(FindSample(s, "llmserve_kv_cache_num_blocks", model).value_or(0), 0);
  EXPECT_EQ(FindSample(s, "llmserve_num_requests_waiting", model), 0.0);
  EXPECT_EQ(FindSample(s, "llmserve_e2e_request_latency_seconds_count", model), 3.0);
  EXPECT_EQ(FindSample(s, "llmserve_time_to_first_token_seconds_count", model), 3.0);
  EXPECT_EQ(FindSample(s, "llmserve_inter_token_latency_seconds_count", model), static_cast<double>(received - 3));
  EXPECT_EQ(FindSample(s, "llmserve_request_failure_total", {{"code", "invalid_argument"}}), 1.0);
  double successes = 0;
  for (const char* reason : {"stop", "length", "abort"}) {
    successes += FindSample(s, "llmserve_request_success_total", {{"finished_reason", reason}}).value_or(-100);
  }
  EXPECT_EQ(successes, 3.0);
  EXPECT_EQ(FindSample(s, "llmserve_engine_config_info", {{"threads", "2"}, {"block_size", "16"}}), 1.0);

  const std::string promtool = PromtoolPath();
  if (promtool.empty()) {
    if (InCi()) FAIL() << "promtool not found (required under CI)";
    GTEST_SKIP() << "promtool not found: apt-get install prometheus (scripts/install-deps.sh)";
  }
  const ProcessResult check = PromtoolCheckMetrics(promtool, text);
  EXPECT_EQ(UnexpectedPromtoolFindings(check, "llmserve_"), std::vector<std::string>())
      << "exit code " << check.exit_code << ": " << check.out << check.err;
}

// A Generate call cancelled after its headers but before its request message reaches the
// service with no message: that is an abort (as a cancel after admission is), never an
// invalid_argument failure that no client saw (an error-rate alert would fire on a cancel
// storm).
TEST(MetricsIntegrationTest, CallsCancelledBeforeTheirRequestCountAsAborts) {
  const int metrics_port = PickFreePort();
  std::string error;
  auto server = ServerProcess::Start({"--threads=2", "--metrics-port=" + std::to_string(metrics_port)}, &error);
  ASSERT_NE(server, nullptr) << error;
  grpc::GenericStub generic(server->channel());
  grpc::CompletionQueue cq;
  auto wait = [&cq](void* want) {
    void* tag = nullptr;
    bool ok = false;
    return cq.Next(&tag, &ok) && tag == want;
  };
  constexpr int kCalls = 10;
  for (int i = 0; i < kCalls; ++i) {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
        generic.PrepareCall(&ctx, "/llmserve.v1.LlmService/Generate", &cq);
    int started = 0, finished = 0;
    call->StartCall(&started);  // the headers go out; no message follows
    ASSERT_TRUE(wait(&started));
    absl::SleepFor(absl::Milliseconds(50));  // the server has the call
    ctx.TryCancel();
    grpc::Status status;
    call->Finish(&status, &finished);
    ASSERT_TRUE(wait(&finished));
    EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED) << status.error_message();
  }
  const std::map<std::string, std::string> abort = {{"finished_reason", "abort"}};
  const std::string text = ScrapeUntil(metrics_port, [&](const std::vector<PromSample>& s) {
    return FindSample(s, "llmserve_request_success_total", abort).value_or(0) >= kCalls;
  });
  const auto s = ParsePromText(text);
  EXPECT_EQ(FindSample(s, "llmserve_request_success_total", abort), static_cast<double>(kCalls)) << text;
  for (const char* code : {"invalid_argument", "resource_exhausted", "unavailable", "internal"}) {
    EXPECT_EQ(FindSample(s, "llmserve_request_failure_total", {{"code", code}}), 0.0) << code;
  }
  // The server serves on.
  const StreamResult r = Generate(*server->stub(), GreedyRequest("Hello", 4));
  EXPECT_TRUE(r.status.ok()) << r.status.error_message();
}

TEST(MetricsIntegrationTest, PrefixFlagRenamesEverySeries) {
  const int metrics_port = PickFreePort();
  std::string error;
  auto server = ServerProcess::Start({"--threads=2", "--metrics-port=" + std::to_string(metrics_port),
                                      "--metrics-prefix=vllm:", "--model-name=tiny"},
                                     &error);
  ASSERT_NE(server, nullptr) << error;
  auto stub = server->stub();
  const StreamResult r = Generate(*stub, GreedyRequest("Hello", 4));
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  const std::string text = ScrapeUntil(metrics_port, [&](const std::vector<PromSample>& s) {
    return FindSample(s, "vllm:generation_tokens_total", {{"model_name", "tiny"}}) ==
           static_cast<double>(r.ids.size());
  });
  const auto s = ParsePromText(text);
  ASSERT_FALSE(s.empty());
  // Every series has the prefix and model_name.
  for (const PromSample& p : s) {
    EXPECT_EQ(p.name.rfind("vllm:", 0), 0u) << p.name;
    EXPECT_EQ(p.labels.count("model_name"), 1u) << p.name;
  }
  EXPECT_EQ(FindSample(s, "vllm:generation_tokens_total", {{"model_name", "tiny"}}), static_cast<double>(r.ids.size()));
  EXPECT_TRUE(FindSample(s, "vllm:num_requests_running", {{"model_name", "tiny"}}).has_value());
}

TEST(MetricsIntegrationTest, BusyMetricsPortExitsOneWithAClearMessage) {
  // Hold a listening socket on the port.
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  auto p = ServerProcess::Launch({"--threads=2", "--metrics-port=" + std::to_string(port)});
  EXPECT_EQ(p->WaitExit(absl::Seconds(30)), 1);
  EXPECT_NE(p->Log().find("cannot serve metrics on 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << p->Log();
  close(fd);
}

}  // namespace
}  // namespace llmserve::testing
