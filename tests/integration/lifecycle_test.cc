// The llmserve process around generation: admission control under a burst, cancellation
// and deadlines returning KV blocks, health and the SIGTERM drain, the demo model, and
// startup failures (missing or corrupt model, busy port, bad flags).
#include <signal.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/server_process.h"
#include "tests/util/test_assets.h"

namespace llmserve::testing {
namespace {

namespace v1 = llmserve::v1;
using HealthStatus = grpc::health::v1::HealthCheckResponse;

// A long generation that cannot end early.
v1::GenerateRequest LongRequest(const std::string& text, int32_t max_tokens) {
  v1::GenerateRequest r = GreedyRequest(text, max_tokens);
  r.set_ignore_eos(true);
  return r;
}

std::unique_ptr<ServerProcess> StartStories(const std::vector<std::string>& extra, std::string* error) {
  const std::string model = AssetPath("models/llama2c/stories260K.bin");
  const std::string tok = AssetPath("models/llama2c/tok512.bin");
  std::vector<std::string> args = Stories260KArgs(model, tok);
  args.insert(args.end(), extra.begin(), extra.end());
  return ServerProcess::Start(args, error);
}

TEST(ServerLifecycleTest, BurstBeyondMaxWaitingIsRefusedAndAcceptedOnesComplete) {
  LLMSERVE_REQUIRE_ASSET(model, "models/llama2c/stories260K.bin");
  std::string error;
  auto server = StartStories({"--max-waiting=2", "--max-running=1"}, &error);
  ASSERT_NE(server, nullptr) << error;
  auto stub = server->stub();
  constexpr int kBurst = 12;
  std::vector<StreamResult> results(kBurst);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kBurst; ++i) {
    threads.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < kBurst) std::this_thread::yield();  // all at once
      results[static_cast<size_t>(i)] = Generate(*stub, LongRequest("Once upon a time", 400));
    });
  }
  for (auto& t : threads) t.join();
  int accepted = 0, refused = 0;
  for (const StreamResult& r : results) {
    if (r.status.error_code() == grpc::RESOURCE_EXHAUSTED) {
      ++refused;
      EXPECT_EQ(r.chunks, 0);
      EXPECT_NE(r.status.error_message().find("wait"), std::string::npos) << r.status.error_message();
      continue;
    }
    ++accepted;
    ASSERT_TRUE(r.status.ok()) << r.status.error_code() << ": " << r.status.error_message();
    ASSERT_TRUE(r.has_final);
    EXPECT_EQ(r.final_msg.finish_reason(), v1::FINISH_REASON_LENGTH);
    EXPECT_EQ(r.ids.size(), 400u);
  }
  EXPECT_GE(accepted, 2);  // one running (or about to) and the waiting queue's two
  EXPECT_GE(refused, 1);
  EXPECT_EQ(accepted + refused, kBurst);
  EXPECT_TRUE(WaitBlocksFree(*stub, absl::Seconds(5)));
}

class DemoServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    server_ = ServerProcess::Start({"--threads=2"}, &error);  // no --model: the demo model
    ASSERT_NE(server_, nullptr) << error;
    stub_ = server_->stub();
  }
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<v1::LlmService::Stub> stub_;
};

TEST_F(DemoServerTest, ServesTheDemoModelAndSaysItIsMeaningless) {
  EXPECT_NE(server_->Log().find("demo model: random weights, its text is meaningless"), std::string::npos)
      << server_->Log();
  grpc::ClientContext ctx;
  v1::ModelInfo m;
  ASSERT_TRUE(stub_->GetModelInfo(&ctx, v1::GetModelInfoRequest(), &m).ok());
  EXPECT_EQ(m.name(), "demo");
  EXPECT_EQ(m.vocab_size(), 258);
  EXPECT_EQ(m.context_length(), 2048);
  const StreamResult a = Generate(*stub_, GreedyRequest("Hello", 24));
  const StreamResult b = Generate(*stub_, GreedyRequest("Hello", 24));
  ASSERT_TRUE(a.status.ok()) << a.status.error_message();
  EXPECT_EQ(a.ids.size(), 24u);
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.text.size(), 24u);  // one printable byte per token
}

TEST_F(DemoServerTest, CancelledStreamReturnsItsBlocksWithinOneSecond) {
  grpc::ClientContext ctx;
  auto reader = stub_->Generate(&ctx, LongRequest("Cancel me", 2000));
  v1::GenerateResponse msg;
  ASSERT_TRUE(reader->Read(&msg));
  ASSERT_TRUE(msg.has_chunk());
  // The stats are published after each engine step, so they may trail the first chunk.
  bool held = false;
  for (const absl::Time end = absl::Now() + absl::Seconds(5); !held && absl::Now() < end;) {
    held = ServerInfo(*stub_).kv_blocks_used() > 0;
  }
  EXPECT_TRUE(held) << "the stream's KV blocks never showed in GetServerInfo";
  ctx.TryCancel();
  while (reader->Read(&msg)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::CANCELLED);
  const bool freed = WaitBlocksFree(*stub_, absl::Seconds(1));
  EXPECT_TRUE(freed) << "blocks in use: " << ServerInfo(*stub_).kv_blocks_used();
  for (int i = 0; !freed && i < 30; ++i) {
    const v1::ServerInfo info = ServerInfo(*stub_);
    std::cerr << absl::Now() << " running " << info.running_requests() << " blocks " << info.kv_blocks_used() << "\n";
    absl::SleepFor(absl::Milliseconds(100));
  }
}

TEST_F(DemoServerTest, ExpiredDeadlineReturnsItsBlocksWithinOneSecond) {
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Milliseconds(800)));
  auto reader = stub_->Generate(&ctx, LongRequest("Deadline", 2000));
  v1::GenerateResponse msg;
  int tokens = 0;
  bool saw_blocks = false;
  while (reader->Read(&msg)) {
    if (msg.has_chunk()) tokens += msg.chunk().ids_size();
    if (!saw_blocks && tokens > 0) saw_blocks = ServerInfo(*stub_).kv_blocks_used() > 0;
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::DEADLINE_EXCEEDED);
  EXPECT_TRUE(saw_blocks);
  EXPECT_LT(tokens, 2000);
  EXPECT_TRUE(WaitBlocksFree(*stub_, absl::Seconds(1))) << "blocks in use: " << ServerInfo(*stub_).kv_blocks_used();
}

TEST_F(DemoServerTest, SecondServerOnTheSamePortExitsWithAnError) {
  auto second = ServerProcess::Launch({}, server_->port());
  EXPECT_NE(second->WaitExit(absl::Seconds(30)), 0);
  EXPECT_NE(second->Log().find("cannot listen on 127.0.0.1:" + std::to_string(server_->port())), std::string::npos)
      << second->Log();
  EXPECT_EQ(server_->Health(""), HealthStatus::SERVING);  // the first one is unharmed
}

// A Tokenize call with a short deadline.
grpc::Status TryTokenize(v1::LlmService::Stub& stub) {
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  v1::TokenizeRequest req;
  req.set_text("Still there?");
  v1::TokenizeResponse resp;
  return stub.Tokenize(&ctx, req, &resp);
}

// Polls until `text` is in the server's log (bounded); true if it came.
bool WaitLog(ServerProcess& server, const std::string& text, absl::Duration timeout) {
  for (const absl::Time end = absl::Now() + timeout; absl::Now() < end; absl::SleepFor(absl::Milliseconds(2))) {
    if (server.Log().find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(ServerLifecycleTest, SigtermRefusesNewCallsAtTheTransportDrainsInFlightOnesAndExitsZero) {
  LLMSERVE_REQUIRE_ASSET(model, "models/llama2c/stories260K.bin");
  std::string error;
  auto server = StartStories({"--max-running=2"}, &error);  // 8 streams: 2 running, 6 waiting
  ASSERT_NE(server, nullptr) << error;
  EXPECT_EQ(server->Health(""), HealthStatus::SERVING);
  EXPECT_EQ(server->Health("llmserve.v1.LlmService"), HealthStatus::SERVING);
  auto stub = server->stub();
  constexpr int kStreams = 8;
  std::vector<StreamResult> results(kStreams);
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] {
      results[static_cast<size_t>(i)] = Generate(*stub, LongRequest("Lily and Ben " + std::to_string(i), 400));
    });
  }
  // In flight: all 8 accepted by the engine and none finished.
  bool in_flight = false;
  for (const absl::Time end = absl::Now() + absl::Seconds(30); !in_flight && absl::Now() < end;) {
    const v1::ServerInfo info = ServerInfo(*stub);
    in_flight = info.running_requests() + info.waiting_requests() == kStreams;
    if (!in_flight) absl::SleepFor(absl::Milliseconds(2));
  }
  ASSERT_TRUE(in_flight) << "the 8 streams never were in flight together";
  server->Signal(SIGTERM);
  // New calls are refused at the transport (no handler sees them): UNAVAILABLE on the open
  // channel (its connection got GOAWAY, reconnecting is refused) and on a new one (the
  // port is closed). A call that races the GOAWAY on the open connection may instead end
  // CANCELLED (the server saw its stream after shutdown began and dropped it).
  ASSERT_TRUE(WaitLog(*server, "refusing new calls", absl::Seconds(10))) << server->Log();
  grpc::Status late;
  int served = 0, cancelled = 0;
  const absl::Time refusing = absl::Now();
  for (const absl::Time end = absl::Now() + absl::Seconds(10); absl::Now() < end;) {
    late = TryTokenize(*stub);
    if (late.ok() || late.error_code() == grpc::CANCELLED) {
      ++(late.ok() ? served : cancelled);
      absl::SleepFor(absl::Milliseconds(1));
      continue;
    }
    break;
  }
  EXPECT_EQ(late.error_code(), grpc::UNAVAILABLE) << late.error_message();
  std::cout << "open channel after the refusal began: " << served << " served, " << cancelled
            << " cancelled, then UNAVAILABLE after " << absl::Now() - refusing << "\n";
  const StreamResult late_stream = Generate(*stub, GreedyRequest("Too late", 8));
  EXPECT_EQ(late_stream.status.error_code(), grpc::UNAVAILABLE) << late_stream.status.error_message();
  EXPECT_EQ(late_stream.chunks, 0);
  auto fresh = v1::LlmService::NewStub(grpc::CreateChannel("ipv4:" + server->address(),
                                                           grpc::InsecureChannelCredentials()));
  const StreamResult fresh_stream = Generate(*fresh, GreedyRequest("Too late", 8));
  EXPECT_EQ(fresh_stream.status.error_code(), grpc::UNAVAILABLE) << fresh_stream.status.error_message();
  // Every stream in flight at the signal completes.
  for (auto& t : threads) t.join();
  for (int i = 0; i < kStreams; ++i) {
    SCOPED_TRACE("stream " + std::to_string(i));
    const StreamResult& r = results[static_cast<size_t>(i)];
    ASSERT_TRUE(r.status.ok()) << r.status.error_code() << ": " << r.status.error_message();
    ASSERT_TRUE(r.has_final);
    EXPECT_EQ(r.final_msg.finish_reason(), v1::FINISH_REASON_LENGTH);
    EXPECT_EQ(r.ids.size(), 400u);
  }
  EXPECT_EQ(server->WaitExit(absl::Seconds(60)), 0);
  const std::string log = server->Log();
  EXPECT_NE(log.find("SIGTERM: health NOT_SERVING, draining"), std::string::npos) << log;
  EXPECT_NE(log.find("drained in"), std::string::npos) << log;
  EXPECT_NE(log.find("shut down"), std::string::npos) << log;
}

TEST(ServerLifecycleTest, DuringTheDrainDelayHealthIsNotServingAndCallsAreStillServed) {
  std::string error;
  // The demo model. The delay (30 s) is far longer than this test needs: a second
  // signal ends it.
  auto server = ServerProcess::Start({"--threads=2", "--drain-delay=30"}, &error);
  ASSERT_NE(server, nullptr) << error;
  auto stub = server->stub();
  server->Signal(SIGTERM);
  ASSERT_TRUE(WaitLog(*server, "serving on for --drain-delay=30 s", absl::Seconds(10))) << server->Log();
  EXPECT_EQ(server->Health(""), HealthStatus::NOT_SERVING);
  EXPECT_EQ(server->Health("llmserve.v1.LlmService"), HealthStatus::NOT_SERVING);
  const grpc::Status tokenize = TryTokenize(*stub);
  EXPECT_TRUE(tokenize.ok()) << tokenize.error_code() << ": " << tokenize.error_message();
  const StreamResult r = Generate(*stub, GreedyRequest("Still here", 8));
  ASSERT_TRUE(r.status.ok()) << r.status.error_code() << ": " << r.status.error_message();
  EXPECT_EQ(r.ids.size(), 8u);
  EXPECT_EQ(server->Log().find("refusing new calls"), std::string::npos) << server->Log();
  server->Signal(SIGTERM);
  EXPECT_EQ(server->WaitExit(absl::Seconds(10)), 128 + SIGTERM);
}

TEST(ServerLifecycleTest, PastTheDrainTimeoutStreamsEndCancelledAndTheServerExitsZero) {
  std::string error;
  auto server = ServerProcess::Start({"--threads=2", "--drain-timeout=0"}, &error);  // the demo model
  ASSERT_NE(server, nullptr) << error;
  auto stub = server->stub();
  constexpr int kStreams = 2;
  std::vector<StreamResult> results(kStreams);
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] { results[static_cast<size_t>(i)] = Generate(*stub, LongRequest("Drain", 2000)); });
  }
  bool running = false;
  for (const absl::Time end = absl::Now() + absl::Seconds(30); !running && absl::Now() < end;) {
    running = ServerInfo(*stub).running_requests() == kStreams;
    if (!running) absl::SleepFor(absl::Milliseconds(2));
  }
  ASSERT_TRUE(running);
  server->Signal(SIGINT);
  for (auto& t : threads) t.join();
  for (const StreamResult& r : results) {
    // The final message says cancelled; the call then ends UNAVAILABLE (retry elsewhere).
    EXPECT_EQ(r.status.error_code(), grpc::UNAVAILABLE) << r.status.error_message();
    EXPECT_NE(r.status.error_message().find("shutting down"), std::string::npos) << r.status.error_message();
    ASSERT_TRUE(r.has_final);
    EXPECT_EQ(r.final_msg.finish_reason(), v1::FINISH_REASON_CANCELLED);
    EXPECT_LT(r.ids.size(), 2000u);
    EXPECT_EQ(r.final_msg.usage().completion_tokens(), static_cast<int32_t>(r.ids.size()));
  }
  EXPECT_EQ(server->WaitExit(absl::Seconds(60)), 0);
  EXPECT_NE(server->Log().find("drain timeout (0 s): cancelling"), std::string::npos) << server->Log();
}

TEST(ServerLifecycleTest, SecondSignalExitsAtOnce) {
  std::string error;
  auto server = ServerProcess::Start({"--threads=2"}, &error);  // the demo model, 30 s drain
  ASSERT_NE(server, nullptr) << error;
  auto stub = server->stub();
  grpc::ClientContext ctx;
  auto reader = stub->Generate(&ctx, LongRequest("Keep going", 2000));
  v1::GenerateResponse msg;
  ASSERT_TRUE(reader->Read(&msg));
  server->Signal(SIGTERM);
  ASSERT_TRUE(WaitLog(*server, "refusing new calls", absl::Seconds(10))) << server->Log();
  server->Signal(SIGTERM);
  EXPECT_EQ(server->WaitExit(absl::Seconds(10)), 128 + SIGTERM);
  EXPECT_NE(server->Log().find("second signal (SIGTERM): exiting now"), std::string::npos) << server->Log();
  ctx.TryCancel();
  while (reader->Read(&msg)) {
  }
  reader->Finish();
}

struct StartupFailure {
  std::string name;
  std::vector<std::string> args;
  std::string message;  // substring of the log
};

TEST(ServerLifecycleTest, BadModelsExitNonZeroWithTheLoadersMessage) {
  LLMSERVE_REQUIRE_ASSET(model, "models/llama2c/stories260K.bin");
  LLMSERVE_REQUIRE_ASSET(tok, "models/llama2c/tok512.bin");
  const std::string dir = ScratchDir("integration_bad_models");
  const std::string garbage = dir + "/garbage.gguf", truncated = dir + "/truncated.bin";
  {
    std::ofstream out(garbage, std::ios::binary);
    out << "GGUF";
    for (int i = 0; i < 4000; ++i) out.put(static_cast<char>((i * 131 + 7) & 0xff));
    std::ifstream in(model, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream cut(truncated, std::ios::binary);
    cut.write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  }
  const std::vector<StartupFailure> cases = {
      {"no such model", {"--model=" + dir + "/missing.bin", "--tokenizer=" + tok}, "no such file or directory"},
      {"garbage gguf", {"--model=" + garbage}, garbage + ": "},
      {"truncated llama2.c", {"--model=" + truncated, "--tokenizer=" + tok}, "truncated"},
      {"no such tokenizer", {"--model=" + model, "--tokenizer=" + dir + "/missing-tok.bin"}, "missing-tok.bin"},
      {"llama2.c without tokenizer", {"--model=" + model}, "give --tokenizer"},
  };
  for (const StartupFailure& c : cases) {
    SCOPED_TRACE(c.name);
    auto p = ServerProcess::Launch(c.args);
    EXPECT_EQ(p->WaitExit(absl::Seconds(30)), 1);
    EXPECT_NE(p->Log().find(c.message), std::string::npos) << p->Log();
    EXPECT_NE(p->Log().find("[error]"), std::string::npos) << p->Log();
  }
  std::filesystem::remove_all(dir);
}

TEST(ServerLifecycleTest, BadFlagsExitTwoAndHelpDocumentsTheFlags) {
  const std::vector<StartupFailure> cases = {
      {"unknown flag", {"--no-such-flag=1"}, "Unknown command line flag 'no_such_flag'"},
      {"not a number", {"--max-running=lots"}, "Illegal value 'lots' specified for flag 'max_running'"},
      {"missing value", {"--max-running"}, "Missing the value for the flag 'max_running'"},
      {"zero max running", {"--max-running=0"}, "--max-running=0"},
      {"batch below running", {"--max-running=64", "--max-batched-tokens=8"}, "--max-batched-tokens=8"},
      {"bad dtype", {"--weight-dtype=f16"}, "--weight-dtype=f16"},
      {"bad step policy", {"--step-policy=fast"}, "--step-policy=fast"},
      {"bad byte size", {"--kv-cache-bytes=lots"}, "--kv-cache-bytes=lots"},
      {"bad log level", {"--log-level=loud"}, "--log-level=loud"},
      {"negative drain delay", {"--drain-delay=-1"}, "--drain-delay=-1"},
      {"tokenizer alone", {"--tokenizer=tok.bin"}, "--tokenizer needs --model"},
      {"positional argument", {"model.bin"}, "unexpected argument 'model.bin'"},
  };
  for (const StartupFailure& c : cases) {
    SCOPED_TRACE(c.name);
    auto p = ServerProcess::Launch(c.args);
    EXPECT_EQ(p->WaitExit(absl::Seconds(30)), 2);
    EXPECT_NE(p->Log().find(c.message), std::string::npos) << p->Log();
  }
  // absl's --help: "--name (help); default: value;", the engine's flags and the server's.
  auto help = ServerProcess::Launch({"--help"});
  EXPECT_EQ(help->WaitExit(absl::Seconds(30)), 0);
  const std::string text = help->Log();
  const std::vector<std::pair<std::string, std::string>> flags = {
      {"model", "\"\""}, {"tokenizer", "\"\""}, {"host", "\"0.0.0.0\""}, {"port", "50051"},
      {"threads", "0"}, {"kv_cache_bytes", "\"2G\""}, {"kv_blocks", "0"}, {"block_size", "16"},
      {"max_running", "64"}, {"max_batched_tokens", "512"}, {"max_prefill_chunk", "0"}, {"max_waiting", "256"},
      {"weight_dtype", "\"auto\""}, {"kv_dtype", "\"auto\""}, {"step_policy", "\"mixed\""},
      {"piggyback", "\"auto\""}, {"prefill_spread_steps", "128"}, {"mixed_step_tokens", "12"},
      {"drain_delay", "0"}, {"drain_timeout", "30"}, {"log_level", "\"info\""}};
  for (const auto& [flag, value] : flags) {
    const size_t at = text.find("--" + flag + " (");
    ASSERT_NE(at, std::string::npos) << flag << " missing from --help:\n" << text;
    const size_t def = text.find("default: ", at);
    ASSERT_NE(def, std::string::npos) << flag;
    EXPECT_EQ(text.substr(def + 9, value.size() + 1), value + ";") << flag << "'s default in --help:\n" << text;
  }
}

}  // namespace
}  // namespace llmserve::testing
