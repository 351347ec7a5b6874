// The OpenAI-compatible HTTP API of the real llmserve binary beside its gRPC port: the
// same tokens over both for the same greedy or seeded request, a client that disconnects
// frees its KV blocks within a second, 64 HTTP and 64 gRPC streams at once, and the
// Gateway API Inference Extension's metric names with --metrics-prefix vllm:.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/openai_client.h"
#include "tests/integration/server_process.h"
#include "tests/util/prom_text.h"
#include "tests/util/test_assets.h"

namespace llmserve::testing {
namespace {

namespace v1 = llmserve::v1;
using json = nlohmann::json;

constexpr char kPrompt[] = "Once upon a time, there was a little";

// A ChatML template for stories260K (which ships none), in a scratch file.
std::string ChatTemplateFile() {
  const std::string path = ScratchDir("openai_http") + "/chatml.jinja";
  std::ofstream(path) << "{%- for message in messages -%}\n"
                         "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}\n"
                         "{%- endfor -%}\n"
                         "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}\n";
  return path;
}

// A raw HTTP/1.1 POST on a fresh connection; the socket, or -1.
int SendRaw(int port, const std::string& path, const json& body) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  const std::string text = body.dump();
  const std::string req = absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                                       "Content-Type: application/json\r\nContent-Length: ", text.size(), "\r\n\r\n",
                                       text);
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return -1;
  }
  return fd;
}

// Reads from `fd` until `needle` has arrived (or the connection ends); true if it did.
bool ReadUntil(int fd, const std::string& needle) {
  std::string got;
  char buf[4096];
  while (got.find(needle) == std::string::npos) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    got.append(buf, static_cast<size_t>(n));
  }
  return true;
}

class OpenAiHttpTest : public ::testing::Test {
 protected:
  // stories260K with the HTTP API (and metrics with `extra`).
  void StartStories(const std::vector<std::string>& extra = {}) {
    LLMSERVE_REQUIRE_ASSET(model, "models/llama2c/stories260K.bin");
    const std::string tok = AssetPath("models/llama2c/tok512.bin");
    std::vector<std::string> args = Stories260KArgs(model, tok);
    http_port_ = PickFreePort();
    args.push_back(absl::StrCat("--http-port=", http_port_));
    args.push_back("--chat-template=" + ChatTemplateFile());
    args.insert(args.end(), extra.begin(), extra.end());
    std::string error;
    server_ = ServerProcess::Start(args, &error);
    ASSERT_NE(server_, nullptr) << error;
    stub_ = server_->stub();
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<v1::LlmService::Stub> stub_;
  int http_port_ = 0;
};

// The gRPC request and the HTTP body of one completion.
struct SameRequest {
  v1::GenerateRequest grpc;
  json http;
};

SameRequest Completion(int max_tokens, std::optional<uint64_t> seed) {
  SameRequest r;
  r.grpc.set_text(kPrompt);
  r.grpc.set_max_tokens(max_tokens);
  r.grpc.set_ignore_eos(true);
  r.http = {{"prompt", kPrompt},    {"max_tokens", max_tokens},    {"ignore_eos", true},
            {"logprobs", 0},        {"return_token_ids", true}};
  if (seed.has_value()) {
    r.grpc.set_temperature(1.0f);
    r.grpc.set_seed(*seed);
    r.http["temperature"] = 1.0;
    r.http["seed"] = *seed;
  } else {
    r.grpc.set_temperature(0.0f);
    r.http["temperature"] = 0;
  }
  return r;
}

TEST_F(OpenAiHttpTest, HttpAndGrpcGiveTheSameTokens) {
  StartStories();
  if (HasFatalFailure() || IsSkipped()) return;
  for (const std::optional<uint64_t> seed : {std::optional<uint64_t>(), std::optional<uint64_t>(424242)}) {
    SCOPED_TRACE(seed.has_value() ? "seeded" : "greedy");
    SameRequest req = Completion(64, seed);
    const StreamResult grpc = Generate(*stub_, req.grpc);
    ASSERT_TRUE(grpc.status.ok()) << grpc.status.error_message();
    ASSERT_EQ(grpc.ids.size(), 64u);
    req.http["stream"] = true;
    req.http["stream_options"] = {{"include_usage", true}};
    const HttpResult streamed = PostJson(http_port_, "/v1/completions", req.http);
    ASSERT_EQ(streamed.status, 200) << streamed.body;
    EXPECT_TRUE(streamed.done);
    EXPECT_EQ(streamed.token_ids, grpc.ids);
    EXPECT_EQ(streamed.text, grpc.text);
    EXPECT_EQ(streamed.logprob_tokens, 64);
    EXPECT_EQ(streamed.usage["completion_tokens"], 64);
    EXPECT_EQ(streamed.usage["prompt_tokens"], grpc.final_msg.usage().prompt_tokens());
    req.http.erase("stream");
    req.http.erase("stream_options");
    const HttpResult whole = PostJson(http_port_, "/v1/completions", req.http);
    ASSERT_EQ(whole.status, 200) << whole.body;
    EXPECT_EQ(whole.body["choices"][0]["text"], grpc.text);
    EXPECT_EQ(whole.body["choices"][0]["token_ids"].get<std::vector<int32_t>>(), grpc.ids);
  }
  // A conversation: gRPC's chat input and HTTP's messages render the same prompt.
  v1::GenerateRequest chat;
  v1::ChatMessage* m = chat.mutable_chat()->add_messages();
  m->set_role("user");
  m->set_content("Tell me about a dog.");
  chat.set_max_tokens(32);
  chat.set_temperature(0.0f);
  const StreamResult grpc = Generate(*stub_, chat);
  ASSERT_TRUE(grpc.status.ok()) << grpc.status.error_message();
  const HttpResult http = PostJson(http_port_, "/v1/chat/completions",
                                   {{"messages", {{{"role", "user"}, {"content", "Tell me about a dog."}}}},
                                    {"max_tokens", 32},
                                    {"temperature", 0},
                                    {"return_token_ids", true},
                                    {"stream", true}});
  ASSERT_EQ(http.status, 200);
  EXPECT_EQ(http.token_ids, grpc.ids);
  EXPECT_EQ(http.text, grpc.text);
}

TEST_F(OpenAiHttpTest, SixtyFourHttpAndSixtyFourGrpcStreamsAllComplete) {
  StartStories();
  if (HasFatalFailure() || IsSkipped()) return;
  constexpr int kEach = 64;
  constexpr int kTokens = 48;
  std::vector<HttpResult> http(kEach);
  std::vector<StreamResult> grpc(kEach);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kEach; ++i) {
    threads.emplace_back([&, i] {
      SameRequest req = Completion(kTokens, 1000 + i);
      req.http["stream"] = true;
      req.http["stream_options"] = {{"include_usage", true}};
      ready.fetch_add(1);
      while (ready.load() < 2 * kEach) std::this_thread::yield();
      http[static_cast<size_t>(i)] = PostJson(http_port_, "/v1/completions", req.http);
    });
    threads.emplace_back([&, i] {
      SameRequest req = Completion(kTokens, 2000 + i);
      auto stub = server_->stub();
      ready.fetch_add(1);
      while (ready.load() < 2 * kEach) std::this_thread::yield();
      grpc[static_cast<size_t>(i)] = Generate(*stub, req.grpc);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kEach; ++i) {
    const HttpResult& h = http[static_cast<size_t>(i)];
    ASSERT_EQ(h.status, 200) << i << ": " << h.body;
    EXPECT_TRUE(h.done) << i;
    EXPECT_EQ(h.finish_reason, "length") << i;
    EXPECT_EQ(h.logprob_tokens, kTokens) << i;
    EXPECT_EQ(h.usage.value("completion_tokens", -1), kTokens) << i;
    const StreamResult& g = grpc[static_cast<size_t>(i)];
    ASSERT_TRUE(g.status.ok()) << i << ": " << g.status.error_message();
    EXPECT_EQ(static_cast<int>(g.ids.size()), kTokens) << i;
    EXPECT_EQ(g.final_msg.usage().completion_tokens(), kTokens) << i;
  }
  EXPECT_TRUE(WaitBlocksFree(*stub_, absl::Seconds(5)));
}

TEST_F(OpenAiHttpTest, VllmPrefixGivesTheInferenceExtensionMetrics) {
  const int metrics_port = PickFreePort();
  StartStories({"--metrics-prefix=vllm:", absl::StrCat("--metrics-port=", metrics_port)});
  if (HasFatalFailure() || IsSkipped()) return;
  int generated = 0;
  for (int i = 0; i < 3; ++i) {
    const HttpResult r = PostJson(http_port_, "/v1/completions", Completion(20 + i, std::nullopt).http);
    ASSERT_EQ(r.status, 200) << r.body;
    generated += r.body["usage"]["completion_tokens"].get<int>();
  }
  ASSERT_TRUE(WaitBlocksFree(*stub_, absl::Seconds(5)));
  // The engine updates the gauges just after it publishes what GetServerInfo reads.
  std::vector<PromSample> samples;
  for (const absl::Time end = absl::Now() + absl::Seconds(10); absl::Now() < end;) {
    const HttpResult scrape = GetJson(metrics_port, "/metrics");
    ASSERT_EQ(scrape.status, 200);
    samples = ParsePromText(scrape.raw);
    if (FindSample(samples, "vllm:generation_tokens_total").value_or(-1) == generated &&
        FindSample(samples, "vllm:num_requests_running").value_or(-1) == 0) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  const std::map<std::string, std::string> model = {{"model_name", "stories260K"}};
  for (const char* name : {"vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc"}) {
    const std::optional<double> v = FindSample(samples, name, model);
    ASSERT_TRUE(v.has_value()) << name;
    EXPECT_EQ(*v, 0.0) << name << " once idle";
  }
  EXPECT_EQ(FindSample(samples, "vllm:generation_tokens_total", model).value_or(-1), generated);
  EXPECT_EQ(FindSample(samples, "vllm:request_success_total", {{"finished_reason", "length"}}).value_or(-1), 3);
  EXPECT_TRUE(FindSample(samples, "vllm:time_to_first_token_seconds_count", model).has_value());
  for (const PromSample& sample : samples) EXPECT_EQ(sample.name.rfind("vllm:", 0), 0u) << sample.name;
}

TEST(OpenAiHttpDemoTest, ADisconnectedClientFreesItsBlocksWithinASecond) {
  const int http_port = PickFreePort();
  std::string error;
  auto server = ServerProcess::Start({"--threads=2", absl::StrCat("--http-port=", http_port)}, &error);
  ASSERT_NE(server, nullptr) << error;
  auto stub = server->stub();
  for (const bool stream : {true, false}) {
    SCOPED_TRACE(stream ? "streaming" : "not streaming");
    const json body = {{"prompt", "Cancel me"}, {"max_tokens", 1900}, {"ignore_eos", true}, {"stream", stream}};
    const int fd = SendRaw(http_port, "/v1/completions", body);
    ASSERT_GE(fd, 0);
    if (stream) {
      ASSERT_TRUE(ReadUntil(fd, "data: ")) << "no first event";
    }
    bool held = false;
    for (const absl::Time end = absl::Now() + absl::Seconds(5); !held && absl::Now() < end;) {
      held = ServerInfo(*stub).kv_blocks_used() > 0;
    }
    ASSERT_TRUE(held) << "the request's KV blocks never showed in GetServerInfo";
    close(fd);  // the client goes away mid-generation
    const absl::Time closed = absl::Now();
    EXPECT_TRUE(WaitBlocksFree(*stub, absl::Seconds(1)))
        << "blocks in use: " << ServerInfo(*stub).kv_blocks_used() << " after " << absl::Now() - closed;
  }
  // Both were aborted, not finished (the engine's one line per request names the reason).
  const std::string log = server->Log();
  int cancelled = 0;
  for (size_t at = 0; (at = log.find("finished: finished_cancelled", at)) != std::string::npos; ++at) ++cancelled;
  EXPECT_EQ(cancelled, 2) << log;
}

}  // namespace
}  // namespace llmserve::testing
