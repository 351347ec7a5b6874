// Generate over the real llmserve binary with stories260K: the greedy golden output of
// llama2.c's run.c streamed token for token, 64 concurrent streams equal to their solo
// runs, and a table of invalid requests with their codes and messages.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/integration/server_process.h"
#include "tests/util/test_assets.h"

namespace llmserve::testing {
namespace {

namespace v1 = llmserve::v1;

// Story-like prompts (tok512 was trained on TinyStories).
const std::vector<std::string> kPrompts = {
    "Once upon a time", "One day, a little girl named Lily", "Tom had a big red ball", "The sun was hot and",
    "There was a cat who liked to", "Mom said, \"Let's go to the park", "The little bird was sad because",
    "Ben and his dog ran"};

// The golden file's case 2: the generated ids after the prompt and run.c's stdout.
struct Golden {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> generated;
  std::string stdout_text;
};

bool ParseIds(const std::string& text, std::vector<int32_t>* out) {
  for (absl::string_view tok : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    int32_t id = 0;
    if (!absl::SimpleAtoi(tok, &id)) return false;
    out->push_back(id);
  }
  return true;
}

// Reads CASE 2 ("Once upon a time", greedy, 256 positions) from stories260K_greedy.txt.
bool ReadGolden(const std::string& path, Golden* g) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string all = ss.str();
  const size_t start = all.find("=== CASE 2\n");
  if (start == std::string::npos) return false;
  auto field = [&](const std::string& key) {
    const size_t k = all.find("\n" + key, start);
    const size_t colon = all.find("): ", k);
    const size_t eol = all.find('\n', colon);
    return (k == std::string::npos || colon == std::string::npos) ? std::string()
                                                                  : all.substr(colon + 3, eol - colon - 3);
  };
  std::vector<int32_t> sequence;
  if (!ParseIds(field("prompt_ids ("), &g->prompt_ids) || !ParseIds(field("sequence_ids ("), &sequence)) return false;
  if (g->prompt_ids.empty() || sequence.size() <= g->prompt_ids.size()) return false;
  g->generated.assign(sequence.begin() + static_cast<long>(g->prompt_ids.size()), sequence.end());
  const std::string begin = "--- BEGIN stdout\n", end = "\n--- END stdout";
  const size_t b = all.find(begin, start), e = all.find(end, start);
  if (b == std::string::npos || e == std::string::npos) return false;
  g->stdout_text = all.substr(b + begin.size(), e - b - begin.size());
  while (!g->stdout_text.empty() && g->stdout_text.back() == '\n') g->stdout_text.pop_back();  // run.c's final newline
  return true;
}

class ServerGenerateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LLMSERVE_REQUIRE_ASSET(model, "models/llama2c/stories260K.bin");
    LLMSERVE_REQUIRE_ASSET(tok, "models/llama2c/tok512.bin");
    std::string error;
    server_ = ServerProcess::Start(Stories260KArgs(model, tok), &error);
    ASSERT_NE(server_, nullptr) << error;
    stub_ = server_->stub();
  }

  // Detokenize(prompt + ids) minus Detokenize(prompt): what a stream's text must be.
  std::string Continuation(const std::vector<int32_t>& prompt, const std::vector<int32_t>& ids) {
    auto detok = [&](const std::vector<int32_t>& v) {
      grpc::ClientContext ctx;
      v1::DetokenizeRequest req;
      req.mutable_ids()->Add(v.begin(), v.end());
      v1::DetokenizeResponse resp;
      const grpc::Status s = stub_->Detokenize(&ctx, req, &resp);
      EXPECT_TRUE(s.ok()) << s.error_message();
      return resp.text();
    };
    std::vector<int32_t> all = prompt;
    all.insert(all.end(), ids.begin(), ids.end());
    const std::string full = detok(all), head = detok(prompt);
    EXPECT_EQ(full.compare(0, head.size(), head), 0) << "the prompt's text is not a prefix";
    return full.substr(std::min(head.size(), full.size()));
  }

  std::vector<int32_t> Tokenize(const std::string& text) {
    grpc::ClientContext ctx;
    v1::TokenizeRequest req;
    req.set_text(text);
    v1::TokenizeResponse resp;
    const grpc::Status s = stub_->Tokenize(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {resp.ids().begin(), resp.ids().end()};
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<v1::LlmService::Stub> stub_;
};

TEST_F(ServerGenerateTest, GreedyStoryEqualsLlama2cGolden) {
  LLMSERVE_REQUIRE_ASSET(golden_path, "golden/stories260K_greedy.txt");
  Golden golden;
  ASSERT_TRUE(ReadGolden(golden_path, &golden)) << "cannot parse case 2 of " << golden_path;
  ASSERT_EQ(golden.generated.size(), 252u);
  EXPECT_EQ(Tokenize("Once upon a time"), golden.prompt_ids);

  const StreamResult r = Generate(*stub_, GreedyRequest("Once upon a time", 256));
  ASSERT_TRUE(r.status.ok()) << r.status.error_code() << ": " << r.status.error_message();
  ASSERT_TRUE(r.has_final);
  EXPECT_FALSE(r.message_after_final);
  EXPECT_GT(r.chunks, 0);
  ASSERT_GE(r.ids.size(), golden.generated.size());
  EXPECT_EQ(std::vector<int32_t>(r.ids.begin(), r.ids.begin() + static_cast<long>(golden.generated.size())),
            golden.generated);
  // run.c printed the prompt, then the continuation (252 tokens of our 256).
  const std::string printed = "Once upon a time" + r.text;
  EXPECT_EQ(printed.compare(0, golden.stdout_text.size(), golden.stdout_text), 0)
      << "run.c: " << golden.stdout_text << "\nours:  " << printed;
  // The chunks concatenate to the whole continuation; usage matches what was streamed.
  EXPECT_EQ(r.text, Continuation(golden.prompt_ids, r.ids));
  EXPECT_EQ(r.final_msg.usage().prompt_tokens(), static_cast<int32_t>(golden.prompt_ids.size()));
  EXPECT_EQ(r.final_msg.usage().completion_tokens(), static_cast<int32_t>(r.ids.size()));
  if (r.ids.size() == 256u) {
    EXPECT_EQ(r.final_msg.finish_reason(), v1::FINISH_REASON_LENGTH);
  } else {
    EXPECT_EQ(r.final_msg.finish_reason(), v1::FINISH_REASON_EOS);
  }
  EXPECT_FALSE(r.final_msg.request_id().empty());
  EXPECT_GT(r.final_msg.timings().total_seconds(), 0.0);
  EXPECT_TRUE(WaitBlocksFree(*stub_, absl::Seconds(5)));
}

// Request i of the concurrent set: even ones greedy, odd ones seeded sampling with
// varied parameters; lengths, stops and logprobs vary too.
v1::GenerateRequest ConcurrentRequest(int i) {
  v1::GenerateRequest r;
  r.set_request_id("concurrent-" + std::to_string(i));
  r.set_text(kPrompts[static_cast<size_t>(i) % kPrompts.size()] + (i % 3 == 0 ? "" : " and"));
  r.set_max_tokens(16 + (i * 7) % 48);
  if (i % 2 == 0) {
    r.set_temperature(0.0f);
  } else {
    r.set_temperature(0.5f + 0.1f * static_cast<float>(i % 6));
    r.set_seed(1000 + static_cast<uint64_t>(i));
    if (i % 4 == 1) r.set_top_k(20 + i % 10);
    if (i % 4 == 3) r.set_top_p(0.9f);
    if (i % 8 == 5) r.set_min_p(0.05f);
    if (i % 8 == 7) r.set_repetition_penalty(1.1f);
    if (i % 16 == 3) r.set_presence_penalty(0.5f);
    if (i % 16 == 11) r.set_frequency_penalty(0.3f);
  }
  if (i % 5 == 2) r.add_stop(".");
  if (i % 7 == 4) r.set_logprobs(3);
  if (i % 9 == 8) r.set_ignore_eos(true);
  return r;
}

TEST_F(ServerGenerateTest, SixtyFourConcurrentStreamsEqualTheirSoloRuns) {
  constexpr int kStreams = 64;
  std::vector<StreamResult> together(kStreams);
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < kStreams; ++i) {
      threads.emplace_back([&, i] { together[static_cast<size_t>(i)] = Generate(*stub_, ConcurrentRequest(i)); });
    }
    for (auto& t : threads) t.join();
  }
  for (int i = 0; i < kStreams; ++i) {
    SCOPED_TRACE("stream " + std::to_string(i));
    const StreamResult& r = together[static_cast<size_t>(i)];
    const v1::GenerateRequest req = ConcurrentRequest(i);
    ASSERT_TRUE(r.status.ok()) << r.status.error_code() << ": " << r.status.error_message();
    ASSERT_TRUE(r.has_final);
    EXPECT_FALSE(r.message_after_final);
    EXPECT_EQ(r.final_msg.request_id(), req.request_id());
    EXPECT_EQ(r.final_msg.usage().completion_tokens(), static_cast<int32_t>(r.ids.size()));
    EXPECT_LE(static_cast<int32_t>(r.ids.size()), req.max_tokens());
    if (req.has_logprobs()) {
      EXPECT_EQ(r.logprobs, static_cast<int>(r.ids.size()));
    }
    if (req.has_seed()) {
      EXPECT_EQ(r.final_msg.seed(), req.seed());
    }
    const v1::FinishReason why = r.final_msg.finish_reason();
    EXPECT_TRUE(why == v1::FINISH_REASON_LENGTH || why == v1::FINISH_REASON_EOS ||
                why == v1::FINISH_REASON_STOP_SEQUENCE)
        << v1::FinishReason_Name(why);
    if (why == v1::FINISH_REASON_STOP_SEQUENCE) {
      EXPECT_EQ(r.text.find('.'), std::string::npos);
    }
  }
  // Alone, one at a time: greedy and seeded requests give the same tokens and text.
  for (int i = 0; i < kStreams; ++i) {
    SCOPED_TRACE("stream " + std::to_string(i) + " alone");
    const StreamResult solo = Generate(*stub_, ConcurrentRequest(i));
    ASSERT_TRUE(solo.status.ok()) << solo.status.error_message();
    EXPECT_EQ(solo.ids, together[static_cast<size_t>(i)].ids);
    EXPECT_EQ(solo.text, together[static_cast<size_t>(i)].text);
  }
  EXPECT_TRUE(WaitBlocksFree(*stub_, absl::Seconds(5)));
}

struct InvalidCase {
  std::string name;
  std::function<void(v1::GenerateRequest&)> change;  // applied to a valid request
  grpc::StatusCode code;
  std::string message;  // substring of the status message
};

TEST_F(ServerGenerateTest, InvalidRequestsGetCodesAndMessages) {
  const std::string long_id(129, 'x');
  const std::vector<InvalidCase> cases = {
      {"no input", [](auto& r) { r.clear_input(); }, grpc::INVALID_ARGUMENT, "input is required"},
      {"empty text", [](auto& r) { r.set_text(""); }, grpc::INVALID_ARGUMENT, "text must be non-empty"},
      {"text not UTF-8", [](auto& r) { r.set_text("bad \xff\xfe bytes"); }, grpc::INVALID_ARGUMENT, "UTF-8"},
      {"empty token list", [](auto& r) { r.mutable_tokens(); }, grpc::INVALID_ARGUMENT, "tokens.ids must be non-empty"},
      {"token id too large", [](auto& r) { r.mutable_tokens()->add_ids(1), r.mutable_tokens()->add_ids(512); },
       grpc::INVALID_ARGUMENT, "tokens.ids[1] must be in [0, 512)"},
      {"negative token id", [](auto& r) { r.mutable_tokens()->add_ids(-1); }, grpc::INVALID_ARGUMENT, "tokens.ids[0]"},
      {"negative temperature", [](auto& r) { r.set_temperature(-0.5f); }, grpc::INVALID_ARGUMENT, "temperature"},
      {"NaN temperature", [](auto& r) { r.set_temperature(std::nanf("")); }, grpc::INVALID_ARGUMENT, "temperature"},
      {"top_p zero", [](auto& r) { r.set_top_p(0.0f); }, grpc::INVALID_ARGUMENT, "top_p"},
      {"top_p above one", [](auto& r) { r.set_top_p(1.5f); }, grpc::INVALID_ARGUMENT, "top_p"},
      {"negative top_k", [](auto& r) { r.set_top_k(-1); }, grpc::INVALID_ARGUMENT, "top_k"},
      {"min_p above one", [](auto& r) { r.set_min_p(2.0f); }, grpc::INVALID_ARGUMENT, "min_p"},
      {"zero repetition penalty", [](auto& r) { r.set_repetition_penalty(0.0f); }, grpc::INVALID_ARGUMENT,
       "repetition_penalty"},
      {"presence penalty 3", [](auto& r) { r.set_presence_penalty(3.0f); }, grpc::INVALID_ARGUMENT, "presence_penalty"},
      {"frequency penalty -3", [](auto& r) { r.set_frequency_penalty(-3.0f); }, grpc::INVALID_ARGUMENT,
       "frequency_penalty"},
      {"logprobs 21", [](auto& r) { r.set_logprobs(21); }, grpc::INVALID_ARGUMENT, "logprobs"},
      {"max_tokens 0", [](auto& r) { r.set_max_tokens(0); }, grpc::INVALID_ARGUMENT, "max_tokens must be >= 1"},
      {"beyond the context", [](auto& r) { r.set_max_tokens(600); }, grpc::INVALID_ARGUMENT,
       "exceeds the context length (512)"},
      {"prompt fills the context",
       [](auto& r) {
         r.clear_max_tokens();
         for (int i = 0; i < 512; ++i) r.mutable_tokens()->add_ids(300);
       },
       grpc::INVALID_ARGUMENT,
       "leaves no room"},
      {"17 stop strings", [](auto& r) { for (int i = 0; i < 17; ++i) r.add_stop(absl::StrCat("s", i)); },
       grpc::INVALID_ARGUMENT, "at most 16"},
      {"empty stop string", [](auto& r) { r.add_stop(""); }, grpc::INVALID_ARGUMENT, "stop[0] must be non-empty"},
      {"long stop string", [](auto& r) { r.add_stop(std::string(257, 'a')); }, grpc::INVALID_ARGUMENT,
       "at most 256 bytes"},
      {"stop not UTF-8", [](auto& r) { r.add_stop("ok"), r.add_stop("\xc3"); }, grpc::INVALID_ARGUMENT, "stop[1]"},
      {"stop token id", [](auto& r) { r.add_stop_token_ids(9999); }, grpc::INVALID_ARGUMENT,
       "stop_token_ids[0] must be in [0, 512)"},
      {"request_id too long", [&](auto& r) { r.set_request_id(long_id); }, grpc::INVALID_ARGUMENT,
       "request_id must be at most 128 bytes"},
      // The default --max-prompt-bytes: 32 bytes per token of the 512-token context.
      {"text beyond --max-prompt-bytes", [](auto& r) { r.set_text(std::string(16385, 'a')); },
       grpc::INVALID_ARGUMENT, "text must be at most 16384 bytes (the server's --max-prompt-bytes), got 16385"},
  };
  ASSERT_GE(cases.size(), 15u);
  for (const InvalidCase& c : cases) {
    SCOPED_TRACE(c.name);
    v1::GenerateRequest r = GreedyRequest("Once upon a time", 8);
    c.change(r);
    const StreamResult got = Generate(*stub_, r);
    EXPECT_EQ(got.status.error_code(), c.code) << got.status.error_message();
    EXPECT_NE(got.status.error_message().find(c.message), std::string::npos) << got.status.error_message();
    EXPECT_EQ(got.chunks, 0);
    EXPECT_FALSE(got.has_final);
  }
  // The unary methods refuse bad input the same way.
  {
    grpc::ClientContext ctx;
    v1::DetokenizeRequest req;
    req.add_ids(5);
    req.add_ids(4096);
    v1::DetokenizeResponse resp;
    const grpc::Status s = stub_->Detokenize(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("4096"), std::string::npos) << s.error_message();
  }
  {
    grpc::ClientContext ctx;
    v1::TokenizeRequest req;
    req.set_text("\xff");
    v1::TokenizeResponse resp;
    const grpc::Status s = stub_->Tokenize(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("UTF-8"), std::string::npos) << s.error_message();
  }
  // Tokenize is bounded before tokenizing (its answer is several times the text), and a
  // request beyond --max-request-bytes (4 MiB) never reaches the service.
  for (const auto& [bytes, code, message] :
       {std::tuple{size_t{1} << 20, grpc::INVALID_ARGUMENT, "text must be at most 16384 bytes"},
        std::tuple{size_t{5} << 20, grpc::RESOURCE_EXHAUSTED, ""}}) {
    SCOPED_TRACE(bytes);
    grpc::ClientContext ctx;
    v1::TokenizeRequest req;
    req.set_text(std::string(bytes, 'a'));
    v1::TokenizeResponse resp;
    const grpc::Status s = stub_->Tokenize(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), code) << s.error_message();
    EXPECT_NE(s.error_message().find(message), std::string::npos) << s.error_message();
    EXPECT_EQ(resp.ids_size(), 0);
  }
  EXPECT_EQ(Tokenize(std::string(16384, 'a')).empty(), false);  // at the bound: served
  // Nothing was admitted.
  const v1::ServerInfo info = ServerInfo(*stub_);
  EXPECT_EQ(info.kv_blocks_used(), 0);
  EXPECT_EQ(info.running_requests(), 0);
}

TEST_F(ServerGenerateTest, ModelAndServerInfo) {
  grpc::ClientContext ctx;
  v1::ModelInfo m;
  ASSERT_TRUE(stub_->GetModelInfo(&ctx, v1::GetModelInfoRequest(), &m).ok());
  EXPECT_EQ(m.name(), "stories260K");
  EXPECT_EQ(m.architecture(), "llama");
  EXPECT_EQ(m.vocab_size(), 512);
  EXPECT_EQ(m.context_length(), 512);
  EXPECT_EQ(m.weight_dtype(), "f32");
  EXPECT_EQ(m.num_layers(), 5);
  EXPECT_EQ(m.bos_id(), 1);
  EXPECT_EQ(m.eos_id(), 2);
  const v1::ServerInfo info = ServerInfo(*stub_);
  EXPECT_EQ(info.block_size(), 16);
  EXPECT_EQ(info.kv_blocks_total(), 64 * 512 / 16);  // capped to max_running full contexts
  EXPECT_EQ(info.max_running(), 64);
  EXPECT_EQ(info.max_waiting(), 256);
  EXPECT_EQ(info.version(), "0.1.0");
  EXPECT_FALSE(info.draining());
}

}  // namespace
}  // namespace llmserve::testing
