// LlmService through the real gRPC stack on loopback over the real stories260K model:
// "Once upon a time", greedy, 256 tokens, must stream exactly run.c's golden ids and text
// (../shared/golden/stories260K_greedy.txt).
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "model/kv_cache.h"
#include "model/model_loader.h"
#include "model/tokenizer/tokenizer_loader.h"
#include "model/transformer.h"
#include "scheduler/engine_model.h"
#include "server/llm_service.h"
#include "tests/util/service_test_util.h"
#include "tests/util/test_assets.h"
#include "tests/util/transformer_engine.h"

namespace llmserve {
namespace {

namespace v1 = ::llmserve::v1;
using ::llmserve::testing::Generate;
using ::llmserve::testing::Greedy;
using ::llmserve::testing::Served;
using ::llmserve::testing::Stream;

// One case of ../shared/golden/stories260K_greedy.txt: the generated ids after the prompt
// and run.c's stdout (prompt text + continuation, without the final newline).
struct Golden {
  std::vector<int32_t> prompt_ids, sequence_ids;
  std::string stdout_text;
};

bool ReadGreedyCase(const std::string& path, const std::string& prompt, Golden* out) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  const auto ids = [](const std::string& l) {
    std::vector<int32_t> v;
    for (absl::string_view f : absl::StrSplit(l.substr(l.find("):") + 2), ' ', absl::SkipEmpty())) {
      int32_t id = 0;
      if (absl::SimpleAtoi(f, &id)) v.push_back(id);
    }
    return v;
  };
  bool in_case = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.rfind("=== CASE", 0) == 0) {
      if (in_case) return true;
      *out = Golden{};
      continue;
    }
    if (l.rfind("prompt: ", 0) == 0) in_case = l == "prompt: \"" + prompt + "\"";
    if (!in_case) continue;
    if (l.rfind("args: ", 0) == 0 && l.find("-t 0.0") == std::string::npos) in_case = false;
    if (l.rfind("prompt_ids", 0) == 0) out->prompt_ids = ids(l);
    if (l.rfind("sequence_ids", 0) == 0) out->sequence_ids = ids(l);
    if (l == "--- BEGIN stdout") {
      std::string text;
      for (++i; i < lines.size() && lines[i] != "--- END stdout"; ++i) text += (text.empty() ? "" : "\n") + lines[i];
      out->stdout_text = text;
    }
  }
  return in_case;
}

// The golden check through the service: "Once upon a time", greedy, 256 tokens.
TEST(LlmServiceGoldenTest, Stories260KGreedyMatchesRunC) {
  LLMSERVE_REQUIRE_ASSET(model_path, "models/llama2c/stories260K.bin");
  LLMSERVE_REQUIRE_ASSET(tok_path, "models/llama2c/tok512.bin");
  LLMSERVE_REQUIRE_ASSET(golden_path, "golden/stories260K_greedy.txt");
  Golden golden;
  ASSERT_TRUE(ReadGreedyCase(golden_path, "Once upon a time", &golden));
  ASSERT_GT(golden.sequence_ids.size(), golden.prompt_ids.size());
  ASSERT_FALSE(golden.stdout_text.empty());
  auto weights = LoadModel(model_path);
  ASSERT_TRUE(weights.ok()) << weights.status();
  auto tok = LoadTokenizer(tok_path);
  ASSERT_TRUE(tok.ok()) << tok.status();
  RuntimeConfig rt;
  rt.weight_dtype = DType::kF32;
  rt.threads = 2;
  auto model = Transformer::Create(**weights, rt);
  ASSERT_TRUE(model.ok()) << model.status();
  auto engine = testing::StartTransformerEngine(*std::move(model), tok->get(), {.max_running = 8});
  ASSERT_TRUE(engine.ok()) << engine.status();
  ServiceInfo info;
  info.model_name = "stories260K";
  info.config = (*weights)->config;
  Served served(**engine, **tok, info);

  v1::GenerateRequest req = Greedy("Once upon a time", 256);
  const Stream s = Generate(*served.stub, req);
  ASSERT_TRUE(s.status.ok()) << s.status.error_message();
  ASSERT_TRUE(s.final_msg.has_value());
  EXPECT_EQ(s.final_msg->usage().prompt_tokens(), static_cast<int32_t>(golden.prompt_ids.size()));
  EXPECT_EQ(s.final_msg->usage().completion_tokens(), static_cast<int32_t>(s.ids.size()));
  const std::vector<int32_t> want(golden.sequence_ids.begin() + static_cast<long>(golden.prompt_ids.size()),
                                  golden.sequence_ids.end());
  ASSERT_GE(s.ids.size(), want.size());
  EXPECT_EQ(std::vector<int32_t>(s.ids.begin(), s.ids.begin() + static_cast<long>(want.size())), want);
  const std::string streamed = "Once upon a time" + s.text;
  EXPECT_EQ(streamed.compare(0, golden.stdout_text.size(), golden.stdout_text), 0)
      << "golden:\n" << golden.stdout_text << "\nstreamed:\n" << streamed;

  grpc::ClientContext ctx;
  v1::ModelInfo m;
  ASSERT_TRUE(served.stub->GetModelInfo(&ctx, v1::GetModelInfoRequest(), &m).ok());
  EXPECT_EQ(m.architecture(), "llama");
  EXPECT_EQ(m.vocab_size(), 512);
  (*engine)->Stop();
  served.Shutdown();
}

}  // namespace
}  // namespace llmserve
