// LlmService through the real gRPC stack on loopback (a server on 127.0.0.1:0 in this
// process), over the fake engine model (tests/util/fake_engine_model.h): streams and their
// finals, Tokenize and Detokenize, the info calls, invalid requests, cancel and deadline
// returning the KV blocks, admission control, draining, engine errors, 64 concurrent
// streams. The real stories260K model against run.c's golden output:
// llm_service_golden_test.cc.
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/llm_service.h"
#include "tests/util/fake_engine_model.h"
#include "tests/util/service_test_util.h"

namespace llmserve {
namespace {

namespace v1 = ::llmserve::v1;
using ::llmserve::testing::FakeEngineModel;
using ::llmserve::testing::FakeGreedy;
using ::llmserve::testing::FakeModelOptions;
using ::llmserve::testing::FakeModelState;
using ::llmserve::testing::Generate;
using ::llmserve::testing::Greedy;
using ::llmserve::testing::kHang;
using ::llmserve::testing::PollUntil;
using ::llmserve::testing::ReadAll;
using ::llmserve::testing::ReasonObserver;
using ::llmserve::testing::Served;
using ::llmserve::testing::ServerInfo;
using ::llmserve::testing::Stream;

constexpr int32_t kVocab = 64;

EngineConfig FakeConfig() {
  EngineConfig c;
  c.scheduler.block_size = 4;
  c.scheduler.max_running = 16;
  c.scheduler.max_batched_tokens = 64;
  c.scheduler.max_prefill_chunk = 32;
  c.scheduler.max_waiting = 128;
  c.scheduler.eos_ids = {2};  // MakeTinyTokenizer's </s>
  c.channel_capacity = 8;
  return c;
}

// The fake engine (not started unless `start`) behind a served LlmService.
struct Harness {
  std::shared_ptr<FakeModelState> state = std::make_shared<FakeModelState>();
  std::unique_ptr<Tokenizer> tok = testing::MakeTinyTokenizer();
  ReasonObserver observer;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Served> served;

  explicit Harness(const EngineConfig& c = FakeConfig(), const FakeModelOptions& o = {}, bool start = true) {
    auto e = Engine::Create(c, std::make_unique<FakeEngineModel>(o, state), tok.get(), &observer);
    EXPECT_TRUE(e.ok()) << e.status();
    if (!e.ok()) return;
    engine = *std::move(e);
    if (start) engine->Start();
    ServiceInfo info;
    info.model_name = "fake";
    info.config.arch = Architecture::kGpt2;
    info.config.num_layers = 2;
    info.config.hidden_size = 32;
    info.config.num_heads = 4;
    info.config.num_kv_heads = 2;
    info.num_parameters = 1234;
    info.weight_dtype = "bf16";
    info.kv_dtype = DType::kF32;
    info.version = "test-1";
    served = std::make_unique<Served>(*engine, *tok, std::move(info));
  }
  ~Harness() {
    state->Resume();
    if (engine != nullptr) engine->Stop();
    if (served != nullptr) served->Shutdown();
  }
  v1::LlmService::Stub& stub() { return *served->stub; }
  std::vector<int32_t> Encode(const std::string& text, bool add_bos) const {
    auto ids = tok->Encode(text, EncodeOptions{.add_bos = add_bos});
    EXPECT_TRUE(ids.ok());
    return ids.ok() ? *ids : std::vector<int32_t>{};
  }
};

TEST(LlmServiceTest, ChunksThenOneFinalWithTheRightCounts) {
  Harness h;
  ASSERT_NE(h.engine, nullptr);
  v1::GenerateRequest req = Greedy("the cat sat", 20);
  req.set_ignore_eos(true);
  req.set_logprobs(2);
  const Stream s = Generate(h.stub(), req);
  ASSERT_TRUE(s.status.ok()) << s.status.error_code() << " " << s.status.error_message();
  ASSERT_TRUE(s.final_msg.has_value());
  EXPECT_FALSE(s.after_final);
  const std::vector<int32_t> prompt = h.Encode("the cat sat", h.tok->add_bos_default());
  EXPECT_EQ(s.ids, FakeGreedy(prompt, 20, kVocab));
  EXPECT_GE(s.chunks, 1);
  const v1::Final& f = *s.final_msg;
  EXPECT_EQ(f.finish_reason(), v1::FINISH_REASON_LENGTH);
  EXPECT_EQ(f.usage().completion_tokens(), static_cast<int32_t>(s.ids.size()));
  EXPECT_EQ(f.usage().prompt_tokens(), static_cast<int32_t>(prompt.size()));
  EXPECT_EQ(f.request_id().rfind("req-", 0), 0u) << f.request_id();
  EXPECT_GE(f.timings().total_seconds(), f.timings().time_to_first_token_seconds());
  EXPECT_GE(f.timings().time_to_first_token_seconds(), f.timings().queue_seconds());
  EXPECT_TRUE(f.error().empty());
  ASSERT_EQ(s.logprobs.size(), s.ids.size());
  for (size_t i = 0; i < s.ids.size(); ++i) {
    EXPECT_EQ(s.logprobs[i].id(), s.ids[i]);
    EXPECT_EQ(s.logprobs[i].top_size(), 2);
    EXPECT_LE(s.logprobs[i].logprob(), 0.0f);
  }
  // The text continues the prompt's: Decode(prompt + ids) after Decode(prompt).
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), s.ids.begin(), s.ids.end());
  const std::string full = h.tok->Decode(all), head = h.tok->Decode(prompt);
  ASSERT_EQ(full.compare(0, head.size(), head), 0);
  EXPECT_EQ(s.text, full.substr(head.size()));
}

TEST(LlmServiceTest, SeedRequestIdStopTokenAndStopString) {
  Harness h;
  ASSERT_NE(h.engine, nullptr);
  v1::GenerateRequest base = Greedy("the dog ran far", 30);
  base.set_ignore_eos(true);
  const Stream full = Generate(h.stub(), base);
  ASSERT_TRUE(full.status.ok());
  ASSERT_GE(full.ids.size(), 10u);

  v1::GenerateRequest r = base;
  r.set_request_id("mine-1");
  r.set_seed(4242);
  r.add_stop_token_ids(full.ids[6]);
  const Stream st = Generate(h.stub(), r);
  ASSERT_TRUE(st.status.ok()) << st.status.error_message();
  ASSERT_TRUE(st.final_msg.has_value());
  EXPECT_EQ(st.final_msg->request_id(), "mine-1");
  EXPECT_EQ(st.final_msg->seed(), 4242u);
  EXPECT_EQ(st.final_msg->finish_reason(), v1::FINISH_REASON_STOP_TOKEN);
  size_t first = 0;
  while (full.ids[first] != full.ids[6]) ++first;
  EXPECT_EQ(st.ids, std::vector<int32_t>(full.ids.begin(), full.ids.begin() + static_cast<long>(first)));

  // A stop string: two ASCII letters of the full text past its first few bytes.
  size_t at = 4;
  while (at + 1 < full.text.size() && !(std::isalpha(static_cast<unsigned char>(full.text[at])) &&
                                         std::isalpha(static_cast<unsigned char>(full.text[at + 1])))) {
    ++at;
  }
  ASSERT_LT(at + 1, full.text.size()) << full.text;
  const std::string stop = full.text.substr(at, 2);
  v1::GenerateRequest s = base;
  s.add_stop(stop);
  const Stream ss = Generate(h.stub(), s);
  ASSERT_TRUE(ss.status.ok()) << ss.status.error_message();
  ASSERT_TRUE(ss.final_msg.has_value());
  EXPECT_EQ(ss.final_msg->finish_reason(), v1::FINISH_REASON_STOP_SEQUENCE);
  EXPECT_EQ(ss.final_msg->stop_sequence(), stop);
  EXPECT_EQ(ss.text, full.text.substr(0, full.text.find(stop)));
}

TEST(LlmServiceTest, TokenizeDetokenizeRoundTrip) {
  Harness h;
  ASSERT_NE(h.engine, nullptr);
  const std::string text = "the cat sat on the mat";
  grpc::ClientContext c1;
  v1::TokenizeRequest tr;
  tr.set_text(text);
  tr.set_add_bos(true);
  v1::TokenizeResponse tokens;
  ASSERT_TRUE(h.stub().Tokenize(&c1, tr, &tokens).ok());
  EXPECT_EQ(std::vector<int32_t>(tokens.ids().begin(), tokens.ids().end()), h.Encode(text, true));
  ASSERT_EQ(tokens.pieces_size(), tokens.ids_size());
  EXPECT_EQ(tokens.pieces(1), h.tok->TokenBytes(tokens.ids(1)));

  grpc::ClientContext c2;
  v1::DetokenizeRequest dr;
  dr.mutable_ids()->CopyFrom(tokens.ids());
  dr.set_skip_special(true);
  v1::DetokenizeResponse back;
  ASSERT_TRUE(h.stub().Detokenize(&c2, dr, &back).ok());
  EXPECT_EQ(back.text(), text);

  grpc::ClientContext c3;
  dr.add_ids(kVocab + 5);
  const grpc::Status bad = h.stub().Detokenize(&c3, dr, &back);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bad.error_message().find("got 69"), std::string::npos) << bad.error_message();

  // Invalid UTF-8 reaches the server (the C++ client only logs) and is named.
  grpc::ClientContext c4;
  tr.set_text("ca\xFFt");
  const grpc::Status utf = h.stub().Tokenize(&c4, tr, &tokens);
  EXPECT_EQ(utf.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(utf.error_message(), "text must be valid UTF-8");
}

TEST(LlmServiceTest, ModelAndServerInfo) {
  Harness h;
  ASSERT_NE(h.engine, nullptr);
  grpc::ClientContext ctx;
  v1::ModelInfo m;
  ASSERT_TRUE(h.stub().GetModelInfo(&ctx, v1::GetModelInfoRequest(), &m).ok());
  EXPECT_EQ(m.name(), "fake");
  EXPECT_EQ(m.architecture(), "gpt2");
  EXPECT_EQ(m.vocab_size(), kVocab);
  EXPECT_EQ(m.context_length(), 256);
  EXPECT_EQ(m.weight_dtype(), "bf16");
  EXPECT_EQ(m.kv_dtype(), "f32");
  EXPECT_EQ(m.bos_id(), 1);
  EXPECT_EQ(m.eos_id(), 2);
  EXPECT_EQ(m.num_parameters(), 1234);
  EXPECT_EQ(m.num_layers(), 2);
  EXPECT_EQ(m.hidden_size(), 32);
  EXPECT_EQ(m.num_heads(), 4);
  EXPECT_EQ(m.num_kv_heads(), 2);

  const v1::ServerInfo s = ServerInfo(h.stub());
  EXPECT_EQ(s.running_requests(), 0);
  EXPECT_EQ(s.waiting_requests(), 0);
  EXPECT_EQ(s.kv_blocks_total(), 64);
  EXPECT_EQ(s.kv_blocks_used(), 0);
  EXPECT_EQ(s.block_size(), 4);
  EXPECT_GE(s.uptime_seconds(), 0.0);
  EXPECT_EQ(s.version(), "test-1");
  EXPECT_EQ(s.preemptions_total(), 0);
  EXPECT_EQ(s.max_running(), 16);
  EXPECT_EQ(s.max_waiting(), 128);
  EXPECT_EQ(s.max_batched_tokens(), 64);
  EXPECT_EQ(s.step_policy(), "mixed");
  EXPECT_FALSE(s.draining());
}

// The invalid-request table through the whole stack: the client gets the code and message.
// Bytes that are no message of the method's request type get INVALID_ARGUMENT with a
// message from every method (gRPC's own parsing would answer UNIMPLEMENTED, no message);
// an empty request (a valid message with every field unset) is still answered.
TEST(LlmServiceTest, MalformedRequestBytesGetInvalidArgumentFromEveryMethod) {
  Harness h;
  ASSERT_NE(h.engine, nullptr);
  grpc::GenericStub generic(h.served->channel);
  auto call = [&](const std::string& method, const std::string& bytes) {
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1), response;
    grpc::ClientContext ctx;
    std::promise<grpc::Status> done;
    generic.UnaryCall(&ctx, "/llmserve.v1.LlmService/" + method, grpc::StubOptions(), &request, &response,
                      [&](grpc::Status s) { done.set_value(std::move(s)); });
    return done.get_future().get();
  };
  for (const char* method : {"Tokenize", "Detokenize", "ApplyChatTemplate", "GetModelInfo", "GetServerInfo"}) {
    const grpc::Status bad = call(method, "\x55");  // field 10, fixed32, with no value bytes
    EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method << ": " << bad.error_message();
    EXPECT_NE(bad.error_message().find("is not a valid llmserve.v1."), std::string::npos)
        << method << ": " << bad.error_message();
  }
  for (const char* method : {"GetModelInfo", "GetServerInfo"}) {
    const grpc::Status ok = call(method, "");
    EXPECT_TRUE(ok.ok()) << method << ": " << ok.error_message();
  }
}

TEST(LlmServiceTest, InvalidRequestsReachTheClientAsInvalidArgument) {
  Harness h;
  ASSERT_NE(h.engine, nullptr);
  struct Case {
    std::function<void(v1::GenerateRequest&)> edit;  // applied to Greedy("the cat", 8)
    const char* message;
  };
  const std::vector<Case> cases = {
      {[](v1::GenerateRequest& r) { r.clear_input(); }, "input is required"},
      {[](v1::GenerateRequest& r) { r.set_text(""); }, "text must be non-empty"},
      {[](v1::GenerateRequest& r) { r.set_text("ab\xC3(c"); }, "text must be valid UTF-8"},
      {[](v1::GenerateRequest& r) { r.mutable_tokens(); }, "tokens.ids must be non-empty"},
      {[](v1::GenerateRequest& r) { r.mutable_tokens()->add_ids(64); }, "tokens.ids[0] must be in [0, 64), got 64"},
      {[](v1::GenerateRequest& r) { r.set_temperature(-1.0f); }, "temperature must be in [0, 100]"},
      {[](v1::GenerateRequest& r) { r.set_top_k(-3); }, "top_k must be >= 0"},
      {[](v1::GenerateRequest& r) { r.set_top_p(0.0f); }, "top_p must be in (0, 1]"},
      {[](v1::GenerateRequest& r) { r.set_min_p(-0.1f); }, "min_p must be in [0, 1]"},
      {[](v1::GenerateRequest& r) { r.set_repetition_penalty(-1.0f); }, "repetition_penalty"},
      {[](v1::GenerateRequest& r) { r.set_presence_penalty(3.0f); }, "presence_penalty must be in [-2, 2]"},
      {[](v1::GenerateRequest& r) { r.set_frequency_penalty(-2.5f); }, "frequency_penalty must be in [-2, 2]"},
      {[](v1::GenerateRequest& r) { r.set_logprobs(21); }, "logprobs must be in [0, 20], got 21"},
      {[](v1::GenerateRequest& r) { r.set_max_tokens(0); }, "max_tokens must be >= 1, got 0"},
      {[](v1::GenerateRequest& r) { r.set_max_tokens(300); }, "+ max_tokens (300) = "},
      {[](v1::GenerateRequest& r) { *r.add_stop() = ""; }, "stop[0] must be non-empty"},
      {[](v1::GenerateRequest& r) { *r.add_stop() = "a"; *r.add_stop() = "\xE2\x82"; }, "stop[1] must be valid UTF-8"},
      {[](v1::GenerateRequest& r) { *r.add_stop() = std::string(300, 'z'); }, "stop[0] must be at most 256 bytes"},
      {[](v1::GenerateRequest& r) { r.add_stop_token_ids(99); }, "stop_token_ids[0] must be in [0, 64), got 99"},
      {[](v1::GenerateRequest& r) { r.set_request_id(std::string(200, 'i')); }, "request_id must be at most 128 bytes"},
      {[](v1::GenerateRequest& r) { r.set_request_id("\xC0\xAF"); }, "request_id must be valid UTF-8"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    v1::GenerateRequest r = Greedy("the cat", 8);
    cases[i].edit(r);
    const Stream s = Generate(h.stub(), r);
    EXPECT_EQ(s.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << "case " << i << ": " << s.status.error_message();
    EXPECT_NE(s.status.error_message().find(cases[i].message), std::string::npos)
        << "case " << i << ": " << s.status.error_message();
    EXPECT_FALSE(s.final_msg.has_value()) << "case " << i;
  }
  EXPECT_EQ(ServerInfo(h.stub()).waiting_requests(), 0);
}

FakeModelOptions SlowModel() {
  FakeModelOptions o;
  o.max_context = 1024;
  o.num_blocks = 512;
  o.forward_delay = absl::Milliseconds(2);
  o.verify_full = false;
  return o;
}

v1::GenerateRequest Long(const std::string& id) {
  v1::GenerateRequest r = Greedy("the cat sat on the mat", 1000);
  r.set_ignore_eos(true);
  r.set_request_id(id);
  return r;
}

TEST(LlmServiceTest, ClientCancelReturnsTheBlocks) {
  Harness h(FakeConfig(), SlowModel());
  ASSERT_NE(h.engine, nullptr);
  grpc::ClientContext ctx;
  auto reader = h.stub().Generate(&ctx, Long("cancel-me"));
  v1::GenerateResponse first;
  ASSERT_TRUE(reader->Read(&first));
  ASSERT_TRUE(first.has_chunk());
  // Stats are published after each step: wait until they show the stream's blocks.
  ASSERT_TRUE(PollUntil([&] {
    const v1::ServerInfo busy = ServerInfo(h.stub());
    return busy.running_requests() == 1 && busy.kv_blocks_used() > 0;
  }, kHang));
  ctx.TryCancel();
  // The requirement: the blocks are free within one second of the cancel.
  EXPECT_TRUE(PollUntil([&] { return ServerInfo(h.stub()).kv_blocks_used() == 0; }, absl::Seconds(1)));
  Stream rest = ReadAll(*reader);
  EXPECT_EQ(rest.status.error_code(), grpc::StatusCode::CANCELLED);
  ASSERT_TRUE(PollUntil([&] { return h.observer.Reason("cancel-me").has_value(); }, kHang));
  EXPECT_EQ(*h.observer.Reason("cancel-me"), SequenceState::kFinishedCancelled);
  EXPECT_TRUE(PollUntil([&] { return h.served->service->open_streams() == 0; }, kHang));
  EXPECT_EQ(ServerInfo(h.stub()).running_requests(), 0);
}

TEST(LlmServiceTest, DeadlineReturnsTheBlocks) {
  Harness h(FakeConfig(), SlowModel());
  ASSERT_NE(h.engine, nullptr);
  const Stream s = Generate(h.stub(), Long("late"), absl::Milliseconds(300));
  EXPECT_EQ(s.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.status.error_message();
  EXPECT_FALSE(s.ids.empty());  // it was generating when the deadline passed
  EXPECT_TRUE(PollUntil([&] { return ServerInfo(h.stub()).kv_blocks_used() == 0; }, absl::Seconds(1)));
  ASSERT_TRUE(PollUntil([&] { return h.observer.Reason("late").has_value(); }, kHang));
  EXPECT_EQ(*h.observer.Reason("late"), SequenceState::kFinishedDeadline);
  EXPECT_TRUE(PollUntil([&] { return h.served->service->open_streams() == 0; }, kHang));
}

// Engine::Stop (the server's drain timeout) ends an open stream: Final(CANCELLED), then
// UNAVAILABLE.
TEST(LlmServiceTest, EngineStopEndsOpenStreamsWithUnavailable) {
  Harness h(FakeConfig(), SlowModel());
  ASSERT_NE(h.engine, nullptr);
  grpc::ClientContext ctx;
  auto reader = h.stub().Generate(&ctx, Long("stopped"));
  v1::GenerateResponse first;
  ASSERT_TRUE(reader->Read(&first));
  h.engine->Stop();
  const Stream rest = ReadAll(*reader);
  EXPECT_EQ(rest.status.error_code(), grpc::StatusCode::UNAVAILABLE) << rest.status.error_message();
  ASSERT_TRUE(rest.final_msg.has_value());
  EXPECT_EQ(rest.final_msg->finish_reason(), v1::FINISH_REASON_CANCELLED);
  EXPECT_EQ(rest.final_msg->usage().completion_tokens(), static_cast<int32_t>(first.chunk().ids_size() + rest.ids.size()));
  EXPECT_EQ(rest.final_msg->request_id(), "stopped");
}

// max_waiting 2, max_running 1, the engine not yet running: of five calls two are queued
// and three refused at once; once the engine runs, the queued two complete.
TEST(LlmServiceTest, BurstBeyondMaxWaitingIsRefused) {
  EngineConfig c = FakeConfig();
  c.scheduler.max_waiting = 2;
  c.scheduler.max_running = 1;
  Harness h(c, FakeModelOptions{}, /*start=*/false);
  ASSERT_NE(h.engine, nullptr);
  constexpr int kCalls = 5;
  std::vector<Stream> got(kCalls);
  std::atomic<int> ended{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kCalls; ++i) {
    threads.emplace_back([&, i] {
      v1::GenerateRequest r = Greedy("the cat", 8);
      r.set_ignore_eos(true);
      got[static_cast<size_t>(i)] = Generate(h.stub(), r);
      ended.fetch_add(1);
    });
  }
  ASSERT_TRUE(PollUntil([&] { return ended.load() == kCalls - 2 && h.engine->Stats().waiting == 2; }, kHang))
      << ended.load() << " ended, " << h.engine->Stats().waiting << " waiting";
  h.engine->Start();
  for (auto& t : threads) t.join();
  int ok = 0, refused = 0;
  for (const Stream& s : got) {
    if (s.status.ok()) {
      ++ok;
      ASSERT_TRUE(s.final_msg.has_value());
      EXPECT_EQ(s.final_msg->finish_reason(), v1::FINISH_REASON_LENGTH);
      EXPECT_EQ(s.ids.size(), 8u);
    } else {
      ++refused;
      EXPECT_EQ(s.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.status.error_message();
      EXPECT_NE(s.status.error_message().find("too many requests waiting"), std::string::npos);
    }
  }
  EXPECT_EQ(ok, 2);
  EXPECT_EQ(refused, kCalls - 2);
}

TEST(LlmServiceTest, DrainingRefusesNewCallsAndFinishesOpenOnes) {
  Harness h;
  ASSERT_NE(h.engine, nullptr);
  h.state->Pause();
  Stream open;
  std::thread t([&] { open = Generate(h.stub(), Greedy("the cat", 5)); });
  ASSERT_TRUE(h.state->WaitBlocked(kHang));
  h.engine->BeginDrain();
  const Stream refused = Generate(h.stub(), Greedy("the dog", 5));
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(refused.status.error_message().find("draining"), std::string::npos) << refused.status.error_message();
  EXPECT_TRUE(ServerInfo(h.stub()).draining());
  h.state->Resume();
  t.join();
  EXPECT_TRUE(open.status.ok()) << open.status.error_message();
  ASSERT_TRUE(open.final_msg.has_value());
  EXPECT_EQ(open.final_msg->usage().completion_tokens(), static_cast<int32_t>(open.ids.size()));
  EXPECT_TRUE(h.engine->WaitIdle(kHang));
}

// A failed forward pass: the stream carries Final(ERROR, reason) and ends with INTERNAL.
TEST(LlmServiceTest, EngineErrorGivesErrorFinalThenInternal) {
  Harness h;
  ASSERT_NE(h.engine, nullptr);
  h.state->FailNext(1);
  const Stream s = Generate(h.stub(), Greedy("the cat", 5));
  EXPECT_EQ(s.status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_NE(s.status.error_message().find("injected failure"), std::string::npos) << s.status.error_message();
  ASSERT_TRUE(s.final_msg.has_value());
  EXPECT_EQ(s.final_msg->finish_reason(), v1::FINISH_REASON_ERROR);
  EXPECT_NE(s.final_msg->error().find("injected failure"), std::string::npos) << s.final_msg->error();
  EXPECT_TRUE(s.ids.empty());
  // The engine goes on.
  const Stream next = Generate(h.stub(), Greedy("the cat", 5));
  EXPECT_TRUE(next.status.ok()) << next.status.error_message();
}

// 64 streams at once with different prompts and parameters all complete; each equals the
// same request run alone (greedy ones also equal the fake's greedy reference).
TEST(LlmServiceTest, ConcurrentStreamsEqualSoloRuns) {
  FakeModelOptions o;
  o.num_blocks = 1024;
  o.forward_delay = absl::Microseconds(200);
  Harness h(FakeConfig(), o);
  ASSERT_NE(h.engine, nullptr);
  const std::vector<std::string> words = {"the", "cat", "sat", "on", "mat", "dog", "ran", "far", "and", "then",
                                          "it", "was", "a", "big", "red", "sun"};
  constexpr int kStreams = 64;
  std::vector<v1::GenerateRequest> reqs;
  for (int i = 0; i < kStreams; ++i) {
    v1::GenerateRequest r;
    if (i % 2 == 0) {
      std::string text;
      for (int k = 0; k <= i % 9; ++k) text += (k ? " " : "") + words[static_cast<size_t>((i * 3 + k * 5) % 16)];
      r.set_text(text);
    } else {
      for (int k = 0; k <= i % 17; ++k) r.mutable_tokens()->add_ids(3 + (i * 7 + k * 5) % (kVocab - 3));
    }
    r.set_max_tokens(1 + (i * 7) % 40);
    r.set_ignore_eos(i % 5 == 0);
    switch (i % 4) {
      case 0: r.set_temperature(0.0f); break;
      case 1: r.set_temperature(0.0f); r.add_stop_token_ids(3 + i % 50); r.set_logprobs(2); break;
      case 2:
        r.set_temperature(0.9f); r.set_seed(1000 + static_cast<uint64_t>(i)); r.set_top_k(10); r.set_top_p(0.95f);
        r.set_min_p(0.01f); r.set_repetition_penalty(1.1f); r.set_presence_penalty(0.3f); r.set_frequency_penalty(0.2f);
        break;
      default: r.set_seed(7 * static_cast<uint64_t>(i)); *r.add_stop() = "e"; r.set_logprobs(0); break;
    }
    reqs.push_back(r);
  }
  std::vector<Stream> together(kStreams);
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] { together[static_cast<size_t>(i)] = Generate(h.stub(), reqs[static_cast<size_t>(i)]); });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kStreams; ++i) {
    SCOPED_TRACE("stream " + std::to_string(i));
    const Stream& s = together[static_cast<size_t>(i)];
    ASSERT_TRUE(s.status.ok()) << s.status.error_message();
    ASSERT_TRUE(s.final_msg.has_value());
    EXPECT_FALSE(s.after_final);
    EXPECT_EQ(s.final_msg->usage().completion_tokens(), static_cast<int32_t>(s.ids.size()));
    const Stream alone = Generate(h.stub(), reqs[static_cast<size_t>(i)]);
    ASSERT_TRUE(alone.status.ok()) << alone.status.error_message();
    EXPECT_EQ(s.ids, alone.ids);
    EXPECT_EQ(s.text, alone.text);
    EXPECT_EQ(s.final_msg->finish_reason(), alone.final_msg->finish_reason());
    if (i % 4 >= 2) {
      EXPECT_EQ(s.final_msg->seed(), alone.final_msg->seed());
    }
    if (reqs[static_cast<size_t>(i)].has_logprobs()) {
      EXPECT_EQ(s.logprobs.size(), s.ids.size());
    }
    if (i % 4 == 0) {
      const v1::GenerateRequest& r = reqs[static_cast<size_t>(i)];
      const std::vector<int32_t> prompt = r.has_text() ? h.Encode(r.text(), h.tok->add_bos_default())
                                                       : std::vector<int32_t>(r.tokens().ids().begin(), r.tokens().ids().end());
      EXPECT_EQ(s.ids, FakeGreedy(prompt, r.max_tokens(), kVocab, r.ignore_eos() ? -1 : 2));
    }
  }
  EXPECT_TRUE(h.state->errors().empty()) << h.state->errors().front();
  EXPECT_TRUE(h.engine->WaitIdle(kHang));
  EXPECT_EQ(ServerInfo(h.stub()).kv_blocks_used(), 0);
}

}  // namespace
}  // namespace llmserve
