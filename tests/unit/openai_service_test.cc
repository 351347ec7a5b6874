// The OpenAI-compatible HTTP API in-process over the fake engine model
// (tests/util/fake_engine_model.h), so that it runs under ThreadSanitizer
// (scripts/tsan-test.sh): streamed and whole answers carry the fake's greedy ids, a client
// that closes its connection (streaming or not) aborts its request, a full waiting queue is
// 429, X-Request-Timeout is a deadline (504), a draining engine 503, and 24 concurrent
// streams all complete.
#include "server/openai_service.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "server/openai_server.h"
#include "tests/util/fake_engine_model.h"
#include "tests/util/service_test_util.h"

namespace llmserve {
namespace {

using json = nlohmann::json;
using ::llmserve::testing::FakeEngineModel;
using ::llmserve::testing::FakeGreedy;
using ::llmserve::testing::FakeModelOptions;
using ::llmserve::testing::FakeModelState;
using ::llmserve::testing::kHang;
using ::llmserve::testing::PollUntil;
using ::llmserve::testing::ReasonObserver;

constexpr int32_t kVocab = 64;

EngineConfig FakeConfig(int32_t max_running = 16, int32_t max_waiting = 128) {
  EngineConfig c;
  c.scheduler.block_size = 4;
  c.scheduler.max_running = max_running;
  c.scheduler.max_batched_tokens = 64;
  c.scheduler.max_prefill_chunk = 32;
  c.scheduler.max_waiting = max_waiting;
  c.scheduler.eos_ids = {2};
  c.channel_capacity = 8;
  return c;
}

// The fake engine behind an OpenAiServer on 127.0.0.1:0.
struct Harness {
  std::shared_ptr<FakeModelState> state = std::make_shared<FakeModelState>();
  std::unique_ptr<Tokenizer> tok = testing::MakeTinyTokenizer();
  ReasonObserver observer;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<OpenAiService> service;
  std::shared_ptr<AccessGate> access;
  std::unique_ptr<OpenAiServer> server;

  explicit Harness(const EngineConfig& c = FakeConfig()) {
    FakeModelOptions o;
    o.num_blocks = 256;
    auto e = Engine::Create(c, std::make_unique<FakeEngineModel>(o, state), tok.get(), &observer);
    EXPECT_TRUE(e.ok()) << e.status();
    if (!e.ok()) return;
    engine = *std::move(e);
    engine->Start();
    RequestLimits limits;
    limits.vocab_size = kVocab;
    limits.max_context = engine->config().scheduler.max_context;
    service = std::make_unique<OpenAiService>(*engine, *tok, limits, "fake", 0);
    ServerConfig config;
    config.host = "127.0.0.1";
    config.http_port = 0;
    config.http_threads = 4;
    access = std::make_shared<AccessGate>(nullptr, nullptr, /*reflection_needs_key=*/true);
    auto s = OpenAiServer::Start(config, access);
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) return;
    server = *std::move(s);
    server->Open(service.get());
    access->SetPhase(ServingPhase::kServing);
  }
  ~Harness() {
    state->Resume();
    if (engine != nullptr) engine->Stop();
    server.reset();  // joins the workers before the service goes
  }
  int port() const { return server->port(); }
  bool BlocksFree() const {
    const EngineStats s = engine->Stats();
    return s.blocks_used == 0 && s.running == 0 && s.waiting == 0;
  }
};

json Post(int port, const json& body) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(60);
  httplib::Result r = cli.Post("/v1/completions", body.dump(), "application/json");
  EXPECT_TRUE(r) << httplib::to_string(r.error());
  if (!r) return json();
  json out = json::parse(r->body, nullptr, false);
  out["http_status"] = r->status;
  return out;
}

// The ids of a streamed completion (return_token_ids), its usage and whether [DONE] came.
struct Streamed {
  std::vector<int32_t> ids;
  json usage;
  bool done = false;
  int status = 0;
};

Streamed PostStream(int port, json body) {
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  body["return_token_ids"] = true;
  Streamed s;
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(60);
  std::string pending;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.headers = {{"Content-Type", "application/json"}};
  req.body = body.dump();
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    pending.append(data, n);
    for (size_t eol; (eol = pending.find("\n\n")) != std::string::npos; pending.erase(0, eol + 2)) {
      const std::string ev = pending.substr(0, eol);
      if (ev == "data: [DONE]") {
        s.done = true;
        continue;
      }
      const json j = json::parse(ev.substr(6), nullptr, false);
      if (j.contains("usage") && j["usage"].is_object()) s.usage = j["usage"];
      for (const json& c : j.value("choices", json::array())) {
        for (const json& id : c.value("token_ids", json::array())) s.ids.push_back(id.get<int32_t>());
      }
    }
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  EXPECT_TRUE(cli.send(req, res, err)) << httplib::to_string(err);
  s.status = res.status;
  return s;
}

// A raw POST on a connection of its own, left open; the socket.
int SendRaw(int port, const json& body, const std::string& request_id) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const std::string text = body.dump();
  const std::string req = absl::StrCat("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n",
                                       "X-Request-Id: ", request_id, "\r\nContent-Length: ", text.size(), "\r\n\r\n",
                                       text);
  EXPECT_EQ(send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  return fd;
}

TEST(OpenAiServiceTest, StreamedAndWholeCarryTheGreedyIds) {
  Harness h;
  const std::vector<int32_t> prompt = {1, 5, 6, 7, 8};
  const std::vector<int32_t> expected = FakeGreedy(prompt, 12, kVocab);
  const json body = {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}, {"ignore_eos", true}};
  json whole_body = body;
  whole_body["return_token_ids"] = true;
  const json whole = Post(h.port(), whole_body);
  ASSERT_EQ(whole["http_status"], 200) << whole;
  EXPECT_EQ(whole["choices"][0]["token_ids"].get<std::vector<int32_t>>(), expected);
  EXPECT_EQ(whole["usage"]["completion_tokens"], 12);
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length");
  const Streamed streamed = PostStream(h.port(), body);
  EXPECT_EQ(streamed.status, 200);
  EXPECT_TRUE(streamed.done);
  EXPECT_EQ(streamed.ids, expected);
  EXPECT_EQ(streamed.usage["completion_tokens"], 12);
  EXPECT_EQ(streamed.usage["prompt_tokens"], 5);
  EXPECT_TRUE(h.state->errors().empty());
}

TEST(OpenAiServiceTest, AClosedConnectionAbortsItsRequest) {
  Harness h;
  for (const bool stream : {true, false}) {
    SCOPED_TRACE(stream ? "streaming" : "not streaming");
    const std::string id = stream ? "gone-streaming" : "gone-whole";
    h.state->Pause();  // the request's first step blocks: it is running, nothing is written
    const json body = {{"prompt", {1, 5, 6}}, {"max_tokens", 200}, {"ignore_eos", true}, {"stream", stream}};
    const int fd = SendRaw(h.port(), body, id);
    ASSERT_TRUE(h.state->WaitBlocked(kHang));
    close(fd);
    // The worker notices the close while it waits (no write needed) and aborts; the engine
    // applies it at its next step boundary.
    absl::SleepFor(absl::Milliseconds(50));
    h.state->Resume();
    ASSERT_TRUE(PollUntil([&] { return h.observer.Reason(id).has_value(); }, kHang));
    EXPECT_EQ(*h.observer.Reason(id), SequenceState::kFinishedCancelled);
    EXPECT_TRUE(PollUntil([&] { return h.BlocksFree(); }, kHang));
  }
}

TEST(OpenAiServiceTest, AFullWaitingQueueIs429) {
  Harness h(FakeConfig(/*max_running=*/1, /*max_waiting=*/1));
  h.state->Pause();
  const json long_request = {{"prompt", {1, 5, 6}}, {"max_tokens", 100}, {"ignore_eos", true}, {"stream", true}};
  const int running = SendRaw(h.port(), long_request, "running");
  ASSERT_TRUE(h.state->WaitBlocked(kHang));
  const int waiting = SendRaw(h.port(), long_request, "waiting");
  // Both submitted (the engine's stats wait for a step, which the gate holds).
  ASSERT_TRUE(PollUntil([&] { return h.service->open_requests() == 2; }, kHang));
  const json refused = Post(h.port(), {{"prompt", {1, 5}}, {"max_tokens", 4}});
  EXPECT_EQ(refused["http_status"], 429) << refused;
  EXPECT_EQ(refused["error"]["type"], "rate_limit_error");
  close(running);
  close(waiting);
  h.state->Resume();
  EXPECT_TRUE(PollUntil([&] { return h.BlocksFree(); }, kHang));
}

// X-Request-Timeout is the request's deadline, as a gRPC call's: the engine ends it, 504
// (or the stream's error event); a draining engine refuses new requests, 503.
TEST(OpenAiServiceTest, DeadlinesAndDraining) {
  Harness h;
  for (const bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "streaming" : "not streaming");
    h.state->Pause();
    httplib::Client cli("127.0.0.1", h.port());
    cli.set_read_timeout(60);
    const json body = {{"prompt", {1, 5, 6}}, {"max_tokens", 50}, {"ignore_eos", true}, {"stream", stream}};
    std::thread resume([&] {
      EXPECT_TRUE(h.state->WaitBlocked(kHang));
      absl::SleepFor(absl::Milliseconds(300));  // past the deadline
      h.state->Resume();
    });
    httplib::Result r = cli.Post("/v1/completions", {{"X-Request-Timeout", "0.1"}}, body.dump(), "application/json");
    resume.join();
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    if (stream) {
      EXPECT_EQ(r->status, 200);
      EXPECT_NE(r->body.find("\"type\":\"timeout_error\""), std::string::npos) << r->body;
      EXPECT_NE(r->body.find("data: [DONE]"), std::string::npos) << r->body;
    } else {
      EXPECT_EQ(r->status, 504) << r->body;
      EXPECT_EQ(json::parse(r->body)["error"]["type"], "timeout_error");
    }
  }
  httplib::Client cli("127.0.0.1", h.port());
  httplib::Result in_time = cli.Post("/v1/completions", {{"X-Request-Timeout", "30"}},
                                     R"({"prompt": [1, 5], "max_tokens": 3})", "application/json");
  ASSERT_TRUE(in_time);
  EXPECT_EQ(in_time->status, 200) << in_time->body;
  httplib::Result bad = cli.Post("/v1/completions", {{"X-Request-Timeout", "soon"}},
                                 R"({"prompt": [1, 5], "max_tokens": 3})", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
  h.engine->BeginDrain();
  const json refused = Post(h.port(), {{"prompt", {1, 5}}, {"max_tokens", 4}});
  EXPECT_EQ(refused["http_status"], 503) << refused;
  EXPECT_EQ(refused["error"]["type"], "service_unavailable_error");
}

TEST(OpenAiServiceTest, ConcurrentStreamsAllComplete) {
  Harness h;
  constexpr int kStreams = 24;
  std::vector<Streamed> results(kStreams);
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] {
      results[static_cast<size_t>(i)] =
          PostStream(h.port(), {{"prompt", {1, 5 + i % 20, 6}}, {"max_tokens", 16 + i % 5}, {"ignore_eos", true},
                                {"temperature", 0}});
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kStreams; ++i) {
    const Streamed& s = results[static_cast<size_t>(i)];
    EXPECT_EQ(s.status, 200) << i;
    EXPECT_TRUE(s.done) << i;
    EXPECT_EQ(s.ids, FakeGreedy({1, 5 + i % 20, 6}, 16 + i % 5, kVocab)) << i;
    EXPECT_EQ(s.usage.value("completion_tokens", -1), 16 + i % 5) << i;
  }
  EXPECT_TRUE(PollUntil([&] { return h.BlocksFree(); }, kHang));
  EXPECT_TRUE(h.state->errors().empty());
}

}  // namespace
}  // namespace llmserve
