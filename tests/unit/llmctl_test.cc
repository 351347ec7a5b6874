// llmctl against an in-process fake llmserve.v1.LlmService (canned streams and errors)
// plus gRPC's default health service: stdout text, stderr summary and errors, exit codes,
// flags reaching the request, Ctrl-C cancellation; and examples/python/generate.py.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "llmserve/v1/llmserve.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "tests/util/subprocess.h"
#include "tests/util/test_assets.h"

namespace {

namespace v1 = llmserve::v1;
using llmserve::testing::ProcessResult;
using llmserve::testing::RunProcess;
using llmserve::testing::Subprocess;

// Canned behaviour, chosen by the prompt text:
//   "invalid" / "busy" / ""  → INVALID_ARGUMENT / RESOURCE_EXHAUSTED / INVALID_ARGUMENT
//   "midstream"              → one chunk "partial", then INTERNAL
//   "error-final"            → a Final with FINISH_REASON_ERROR (OK status)
//   "error-internal"         → the same, then INTERNAL (what llmserve does)
//   "shutdown"               → a Final with FINISH_REASON_CANCELLED, then UNAVAILABLE
//   "slow"                   → one chunk "tick", then waits for the call to be cancelled
//   anything else            → chunks "Once" " upon" " a" " time", Final LENGTH (or
//                              STOP_SEQUENCE when stop strings were given)
class FakeLlmService final : public v1::LlmService::Service {
 public:
  grpc::Status Generate(grpc::ServerContext* ctx, const v1::GenerateRequest* req,
                        grpc::ServerWriter<v1::GenerateResponse>* writer) override {
    {
      absl::MutexLock lock(&mu_);
      last_ = *req;
    }
    const std::string& text = req->text();
    if (req->has_text() && text.empty()) return {grpc::StatusCode::INVALID_ARGUMENT, "the prompt is empty"};
    if (text == "invalid") {
      return {grpc::StatusCode::INVALID_ARGUMENT, "temperature must be a finite number >= 0 (0 = greedy), got -1"};
    }
    if (text == "busy") return {grpc::StatusCode::RESOURCE_EXHAUSTED, "too many requests waiting (2 of 2)"};
    v1::GenerateResponse msg;
    if (text == "midstream" || text == "slow") {
      msg.mutable_chunk()->set_text(text == "slow" ? "tick" : "partial");
      msg.mutable_chunk()->add_ids(7);
      writer->Write(msg);
      if (text == "midstream") return {grpc::StatusCode::INTERNAL, "engine step failed: boom"};
      for (int i = 0; i < 6000 && !ctx->IsCancelled(); ++i) absl::SleepFor(absl::Milliseconds(10));
      absl::MutexLock lock(&mu_);
      saw_cancel_ = ctx->IsCancelled();
      return {grpc::StatusCode::CANCELLED, "cancelled"};
    }
    const std::vector<std::string> pieces = {"Once", " upon", " a", " time"};
    const bool error_final = text == "error-final" || text == "error-internal";
    const bool shutdown = text == "shutdown";
    if (!error_final) {
      for (size_t i = 0; i < pieces.size(); ++i) {
        msg.Clear();
        v1::Chunk* chunk = msg.mutable_chunk();
        chunk->set_text(pieces[i]);
        chunk->add_ids(static_cast<int32_t>(10 + i));
        if (req->has_logprobs()) chunk->add_logprobs()->set_logprob(-0.5f);
        writer->Write(msg);
      }
    }
    msg.Clear();
    v1::Final* f = msg.mutable_final();
    f->set_finish_reason(req->stop_size() > 0 ? v1::FINISH_REASON_STOP_SEQUENCE : v1::FINISH_REASON_LENGTH);
    if (req->stop_size() > 0) f->set_stop_sequence(req->stop(0));
    if (error_final) {
      f->set_finish_reason(v1::FINISH_REASON_ERROR);
      f->set_error("model step failed");
    }
    if (shutdown) f->set_finish_reason(v1::FINISH_REASON_CANCELLED);
    f->mutable_usage()->set_prompt_tokens(3);
    f->mutable_usage()->set_completion_tokens(error_final ? 0 : 4);
    f->mutable_timings()->set_queue_seconds(0.001);
    f->mutable_timings()->set_time_to_first_token_seconds(0.01);
    f->mutable_timings()->set_total_seconds(0.1);
    f->set_seed(req->has_seed() ? req->seed() : 4242);
    f->set_request_id(req->request_id().empty() ? "fake-1" : req->request_id());
    writer->Write(msg);
    if (text == "error-internal") return {grpc::StatusCode::INTERNAL, "model step failed"};
    if (shutdown) return {grpc::StatusCode::UNAVAILABLE, "the server is shutting down"};
    return grpc::Status::OK;
  }

  // Byte-level: id = byte value (+ BOS id 1 unless add_bos is false); vocabulary 256.
  grpc::Status Tokenize(grpc::ServerContext*, const v1::TokenizeRequest* req, v1::TokenizeResponse* resp) override {
    if (!req->has_add_bos() || req->add_bos()) {
      resp->add_ids(1);
      resp->add_pieces("<s>");
    }
    for (const char c : req->text()) {
      resp->add_ids(static_cast<unsigned char>(c));
      resp->add_pieces(std::string(1, c));
    }
    return grpc::Status::OK;
  }

  grpc::Status Detokenize(grpc::ServerContext*, const v1::DetokenizeRequest* req, v1::DetokenizeResponse* resp) override {
    for (const int32_t id : req->ids()) {
      if (id < 0 || id >= 256) {
        return {grpc::StatusCode::INVALID_ARGUMENT, "ids[1] = " + std::to_string(id) + " is outside the vocabulary [0, 256)"};
      }
      resp->mutable_text()->push_back(static_cast<char>(id));
    }
    return grpc::Status::OK;
  }

  grpc::Status GetModelInfo(grpc::ServerContext*, const v1::GetModelInfoRequest*, v1::ModelInfo* m) override {
    m->set_name("fake-model");
    m->set_architecture("llama");
    m->set_vocab_size(256);
    m->set_context_length(512);
    m->set_num_parameters(260000);
    return grpc::Status::OK;
  }

  grpc::Status GetServerInfo(grpc::ServerContext*, const v1::GetServerInfoRequest*, v1::ServerInfo* s) override {
    s->set_kv_blocks_total(1024);
    s->set_kv_blocks_used(256);
    s->set_block_size(16);
    s->set_version("0.0.0-test");
    return grpc::Status::OK;
  }

  v1::GenerateRequest last() {
    absl::MutexLock lock(&mu_);
    return last_;
  }
  bool saw_cancel() {
    absl::MutexLock lock(&mu_);
    return saw_cancel_;
  }
  void reset() {
    absl::MutexLock lock(&mu_);
    last_.Clear();
    saw_cancel_ = false;
  }

 private:
  absl::Mutex mu_;
  v1::GenerateRequest last_ ABSL_GUARDED_BY(mu_);
  bool saw_cancel_ ABSL_GUARDED_BY(mu_) = false;
};

class LlmctlTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    grpc::EnableDefaultHealthCheckService(true);
    service_ = new FakeLlmService();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(service_);
    server_ = builder.BuildAndStart().release();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
    server_->GetHealthCheckService()->SetServingStatus("llmserve.v1.LlmService", false);
  }
  static void TearDownTestSuite() {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    delete server_;
    delete service_;
  }
  void SetUp() override { service_->reset(); }

  static std::string Addr() { return "127.0.0.1:" + std::to_string(port_); }

  // llmctl COMMAND --addr ADDR ARGS...
  static std::vector<std::string> Argv(const std::string& command, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {LLMCTL_PATH, command, "--addr", Addr()};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  static ProcessResult Llmctl(const std::string& command, const std::vector<std::string>& args,
                              const std::string& stdin_data = "") {
    return RunProcess(Argv(command, args), stdin_data);
  }

  static inline FakeLlmService* service_ = nullptr;
  static inline grpc::Server* server_ = nullptr;
  static inline int port_ = 0;
};

TEST_F(LlmctlTest, GenerateStreamsOnlyTextToStdoutAndSummaryToStderr) {
  const ProcessResult r = Llmctl("generate", {"Once"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Once upon a time");
  EXPECT_NE(r.err.find("finish_reason: LENGTH"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("prompt_tokens=3 completion_tokens=4"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("first_token=0.010s total=0.100s"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("seed: 4242"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("request_id: fake-1"), std::string::npos) << r.err;
}

TEST_F(LlmctlTest, FlagsReachTheRequest) {
  struct Case {
    std::vector<std::string> args;
    std::function<bool(const v1::GenerateRequest&)> check;
  };
  const std::vector<Case> cases = {
      {{"p"}, [](auto& r) { return r.text() == "p" && !r.has_temperature() && !r.has_max_tokens() &&
                                   !r.has_add_bos() && !r.has_logprobs() && !r.has_seed(); }},
      {{"--max-tokens", "7", "p"}, [](auto& r) { return r.has_max_tokens() && r.max_tokens() == 7; }},
      {{"--max_tokens=9", "p"}, [](auto& r) { return r.max_tokens() == 9; }},
      {{"--temperature", "0", "p"}, [](auto& r) { return r.has_temperature() && r.temperature() == 0.0f; }},
      {{"--top-k", "40", "p"}, [](auto& r) { return r.top_k() == 40; }},
      {{"--top-p", "0.9", "p"}, [](auto& r) { return r.top_p() == 0.9f; }},
      {{"--min-p", "0.05", "p"}, [](auto& r) { return r.min_p() == 0.05f; }},
      {{"--repetition-penalty", "1.1", "p"}, [](auto& r) { return r.repetition_penalty() == 1.1f; }},
      {{"--presence-penalty", "-0.5", "p"}, [](auto& r) { return r.presence_penalty() == -0.5f; }},
      {{"--frequency-penalty", "0.25", "p"}, [](auto& r) { return r.frequency_penalty() == 0.25f; }},
      {{"--seed", "18446744073709551615", "p"}, [](auto& r) { return r.seed() == 18446744073709551615ull; }},
      {{"--stop", "a", "--stop", "b c", "p"}, [](auto& r) { return r.stop_size() == 2 && r.stop(1) == "b c"; }},
      {{"--stop-token-id", "5", "--stop-token-id", "6", "p"},
       [](auto& r) { return r.stop_token_ids_size() == 2 && r.stop_token_ids(1) == 6; }},
      {{"--ignore-eos", "p"}, [](auto& r) { return r.ignore_eos(); }},
      {{"--logprobs", "3", "p"}, [](auto& r) { return r.has_logprobs() && r.logprobs() == 3; }},
      {{"--no-bos", "p"}, [](auto& r) { return r.has_add_bos() && !r.add_bos(); }},
      {{"--bos", "p"}, [](auto& r) { return r.has_add_bos() && r.add_bos(); }},
      {{"--request-id", "r-77", "p"}, [](auto& r) { return r.request_id() == "r-77"; }},
      {{"--token-ids", "1,2", "3"},
       [](auto& r) { return r.has_tokens() && r.tokens().ids_size() == 3 && r.tokens().ids(2) == 3; }},
      {{"--", "--not-a-flag"}, [](auto& r) { return r.text() == "--not-a-flag"; }},
  };
  // Structured output: each flag fills GenerateRequest.constraint.
  const std::string dir = llmserve::testing::ScratchDir("llmctl_constraint");
  const std::string schema_path = dir + "/schema.json", grammar_path = dir + "/grammar.gbnf";
  const std::string schema = R"({"type": "object", "properties": {"b": {}, "a": {}}})";
  const std::string grammar = "root ::= \"yes\" | \"no\"\n";
  std::ofstream(schema_path) << schema;
  std::ofstream(grammar_path) << grammar;
  const std::vector<Case> constraint_cases = {
      {{"p"}, [](auto& r) { return !r.has_constraint(); }},
      {{"--json-schema", schema_path, "p"},
       [&](auto& r) { return r.constraint().json_schema() == schema && !r.constraint().flexible_whitespace(); }},
      {{"--json-schema", schema_path, "--flexible-whitespace", "p"},
       [&](auto& r) { return r.constraint().json_schema() == schema && r.constraint().flexible_whitespace(); }},
      {{"--json-object", "p"}, [](auto& r) { return r.constraint().has_json_object(); }},
      {{"--regex", "[0-9]+", "p"}, [](auto& r) { return r.constraint().regex() == "[0-9]+"; }},
      {{"--choice", "red|green|", "p"},
       [](auto& r) {
         return r.constraint().choice().choices_size() == 3 && r.constraint().choice().choices(1) == "green" &&
                r.constraint().choice().choices(2).empty();
       }},
      {{"--grammar", grammar_path, "p"}, [&](auto& r) { return r.constraint().grammar() == grammar; }},
  };
  for (const Case& c : constraint_cases) {
    const std::string label = ::testing::PrintToString(c.args);
    const ProcessResult r = Llmctl("generate", c.args);
    EXPECT_EQ(r.exit_code, 0) << label << ": " << r.err;
    EXPECT_TRUE(c.check(service_->last())) << label << ": " << service_->last().DebugString();
  }
  for (const Case& c : cases) {
    const std::string label = ::testing::PrintToString(c.args);
    const ProcessResult r = Llmctl("generate", c.args);
    EXPECT_EQ(r.exit_code, 0) << label << ": " << r.err;
    EXPECT_TRUE(c.check(service_->last())) << label << ": " << service_->last().DebugString();
  }
}

TEST_F(LlmctlTest, PromptDashReadsStdinVerbatim) {
  const ProcessResult r = Llmctl("generate", {"-"}, "line one\nline two\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(service_->last().text(), "line one\nline two\n");
}

TEST_F(LlmctlTest, SummaryShowsStopSequenceAndLogprobs) {
  const ProcessResult r = Llmctl("generate", {"--stop", "\n", "--logprobs", "0", "Once"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("finish_reason: STOP_SEQUENCE \"\\n\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("logprobs: sum=-2.0000 mean=-0.5000 over 4 tokens"), std::string::npos) << r.err;
}

TEST_F(LlmctlTest, JsonPrintsOneLinePerMessage) {
  const ProcessResult r = Llmctl("generate", {"--json", "--seed", "5", "Once"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<nlohmann::json> lines;
  size_t start = 0;
  for (size_t nl; (nl = r.out.find('\n', start)) != std::string::npos; start = nl + 1) {
    lines.push_back(nlohmann::json::parse(r.out.substr(start, nl - start)));
  }
  ASSERT_EQ(lines.size(), 5u) << r.out;
  EXPECT_EQ(lines[0]["chunk"]["text"], "Once");
  EXPECT_EQ(lines[0]["chunk"]["ids"], nlohmann::json::array({10}));
  EXPECT_EQ(lines[4]["final"]["finish_reason"], "FINISH_REASON_LENGTH");
  EXPECT_EQ(lines[4]["final"]["seed"], "5");  // uint64 is a string in proto3 JSON
  EXPECT_EQ(lines[4]["final"]["usage"]["completion_tokens"], 4);
  EXPECT_EQ(r.err, "");
}

TEST_F(LlmctlTest, ErrorsPrintCodeAndMessageAndExitNonZero) {
  struct Case {
    std::string prompt, stdout_text, stderr_line;
  };
  const std::vector<Case> cases = {
      {"invalid", "", "llmctl: INVALID_ARGUMENT: temperature must be a finite number >= 0 (0 = greedy), got -1\n"},
      {"", "", "llmctl: INVALID_ARGUMENT: the prompt is empty\n"},
      {"busy", "", "llmctl: RESOURCE_EXHAUSTED: too many requests waiting (2 of 2)\n"},
      {"midstream", "partial", "llmctl: INTERNAL: engine step failed: boom\n"},
      {"error-final", "", "finish_reason: ERROR: model step failed\n"},
      {"error-internal", "", "finish_reason: ERROR: model step failed\n"},
      {"error-internal", "", "llmctl: INTERNAL: model step failed\n"},
      {"shutdown", "Once upon a time", "finish_reason: CANCELLED\n"},
      {"shutdown", "Once upon a time", "llmctl: UNAVAILABLE: the server is shutting down\n"},
  };
  for (const Case& c : cases) {
    const ProcessResult r = Llmctl("generate", {c.prompt});
    EXPECT_EQ(r.exit_code, 1) << c.prompt << ": " << r.err;
    EXPECT_EQ(r.out, c.stdout_text) << c.prompt;
    EXPECT_NE(r.err.find(c.stderr_line), std::string::npos) << c.prompt << ": " << r.err;
  }
}

TEST_F(LlmctlTest, UnreachableServerIsUnavailable) {
  // A bound but not listening socket: connections to its port are refused.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  socklen_t len = sizeof(sa);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len), 0);
  const std::string addr = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"generate", "--addr", addr, "hi"}, {"info", "--addr", addr}, {"health", "--addr", addr}}) {
    std::vector<std::string> argv = {LLMCTL_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    const ProcessResult r = RunProcess(argv);
    EXPECT_EQ(r.exit_code, 1) << args[0];
    EXPECT_EQ(r.err.rfind("llmctl: UNAVAILABLE: ", 0), 0u) << args[0] << ": " << r.err;
  }
  close(fd);
}

TEST_F(LlmctlTest, UsageErrorsExitTwo) {
  const std::vector<std::vector<std::string>> cases = {
      {"generate"},                          // no prompt
      {"generate", "a", "b"},                // two prompts
      {"generate", "--bogus", "a"},          // unknown flag
      {"generate", "--max-tokens", "x", "a"},  // not a number
      {"generate", "--max-tokens"},          // missing value
      {"generate", "--ignore-eos=1", "a"},   // switch with a value
      {"generate", "\xff\xfe"},              // not UTF-8
      {"generate", "--regex", "a", "--json-object", "p"},   // two constraints
      {"generate", "--flexible-whitespace", "p"},           // whitespace without a JSON constraint
      {"generate", "--json-schema", "/nonexistent/schema.json", "p"},  // unreadable file
      {"chat", "--grammar", "/nonexistent/g.gbnf"},
      {"detokenize", "1", "two"},            // not an id
      {"info", "extra"},
      {"frobnicate"},
  };
  for (const auto& args : cases) {
    std::vector<std::string> argv = {LLMCTL_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    const ProcessResult r = RunProcess(argv);
    EXPECT_EQ(r.exit_code, 2) << ::testing::PrintToString(args) << ": " << r.err;
    EXPECT_EQ(r.err.rfind("llmctl: ", 0), 0u) << r.err;
  }
}

TEST_F(LlmctlTest, HelpExitsZero) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--help"}, {"generate", "--help"}, {"help", "tokenize"}, {"health", "-h"}}) {
    std::vector<std::string> argv = {LLMCTL_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    const ProcessResult r = RunProcess(argv);
    EXPECT_EQ(r.exit_code, 0) << args[0];
    EXPECT_NE(r.out.find("usage: llmctl"), std::string::npos) << r.out;
  }
}

TEST_F(LlmctlTest, TokenizeAndDetokenize) {
  EXPECT_EQ(Llmctl("tokenize", {"ab"}).out, "1 97 98\n");
  EXPECT_EQ(Llmctl("tokenize", {"--no-bos", "ab"}).out, "97 98\n");
  EXPECT_EQ(Llmctl("tokenize", {"--no-bos", "--pieces", "a\n"}).out, "97\t\"a\"\n10\t\"\\n\"\n");
  EXPECT_EQ(Llmctl("detokenize", {"104,105", "33"}).out, "hi!\n");
  const ProcessResult bad = Llmctl("detokenize", {"104", "999"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.err, "llmctl: INVALID_ARGUMENT: ids[1] = 999 is outside the vocabulary [0, 256)\n");
}

TEST_F(LlmctlTest, InfoHumanAndJson) {
  const ProcessResult human = Llmctl("info", {});
  EXPECT_EQ(human.exit_code, 0) << human.err;
  EXPECT_NE(human.out.find("fake-model"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("256 / 1024 blocks used (25.0%)"), std::string::npos) << human.out;
  const ProcessResult json = Llmctl("info", {"--json"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["model"]["name"], "fake-model");
  EXPECT_EQ(j["server"]["kv_blocks_total"], 1024);
}

TEST_F(LlmctlTest, AddressFromEnvironment) {
  const ProcessResult r = RunProcess({LLMCTL_PATH, "info"}, "", {"LLMSERVE_ADDR=" + Addr()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fake-model"), std::string::npos);
}

TEST_F(LlmctlTest, HealthExitCodeFollowsServingStatus) {
  const ProcessResult serving = Llmctl("health", {});
  EXPECT_EQ(serving.exit_code, 0) << serving.err;
  EXPECT_EQ(serving.out, "SERVING\n");
  const ProcessResult not_serving = Llmctl("health", {"--service", "llmserve.v1.LlmService"});
  EXPECT_EQ(not_serving.exit_code, 1);
  EXPECT_EQ(not_serving.out, "NOT_SERVING\n");
  const ProcessResult unknown = Llmctl("health", {"--service", "no.such.Service"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.err.rfind("llmctl: NOT_FOUND: ", 0), 0u) << unknown.err;
}

TEST_F(LlmctlTest, TimeoutGivesDeadlineExceeded) {
  const ProcessResult r = Llmctl("generate", {"--timeout", "0.5", "slow"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "tick");
  EXPECT_NE(r.err.find("llmctl: DEADLINE_EXCEEDED: "), std::string::npos) << r.err;
}

TEST_F(LlmctlTest, CtrlCCancelsTheCall) {
  Subprocess p(Argv("generate", {"slow"}));
  ASSERT_GT(p.pid(), 0);
  ASSERT_TRUE(p.ReadStdoutUntil("tick"));  // the call is under way
  kill(p.pid(), SIGINT);
  const ProcessResult r = p.Wait();
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.err.find("llmctl: CANCELLED: "), std::string::npos) << r.err;
  // The server saw the cancellation (its handler polls for it, up to 60 s).
  for (int i = 0; i < 6000 && !service_->saw_cancel(); ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_TRUE(service_->saw_cancel());
}

TEST_F(LlmctlTest, PythonExampleStreams) {
  if (RunProcess({"/usr/bin/python3", "-c", "import grpc, google.protobuf"}).exit_code != 0) {
    GTEST_SKIP() << "python3-grpcio is not installed (scripts/install-deps.sh installs it)";
  }
  const std::string script = std::string(LLMSERVE_SOURCE_DIR) + "/examples/python/generate.py";
  const ProcessResult ok = RunProcess({"/usr/bin/python3", script, "--addr", Addr(), "--max-tokens", "4", "Once"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "Once upon a time\n");
  EXPECT_NE(ok.err.find("finish_reason=LENGTH"), std::string::npos) << ok.err;
  EXPECT_EQ(service_->last().max_tokens(), 4);
  const ProcessResult bad = RunProcess({"/usr/bin/python3", script, "--addr", Addr(), "invalid"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("INVALID_ARGUMENT"), std::string::npos) << bad.err;
}

}  // namespace
