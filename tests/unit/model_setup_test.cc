// SetUpModel: the demo model when no path is given, a real llama2.c model with its
// tokenizer, and the errors for missing or mismatched files.
#include "server/model_setup.h"

#include <fstream>

#include <string>

#include "gtest/gtest.h"
#include "server/demo_model.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

TEST(ModelSetupTest, NoModelPathBuildsTheDemoModel) {
  ServerConfig c;
  c.kv_blocks = 32;
  c.weight_dtype = DType::kF32;
  c.threads = 2;
  auto setup = SetUpModel(c);
  ASSERT_TRUE(setup.ok()) << setup.status();
  EXPECT_TRUE(setup->demo);
  EXPECT_EQ(setup->num_blocks, 32);
  EXPECT_EQ(setup->info.model_name, "demo");
  EXPECT_EQ(setup->info.config.vocab_size, 258);
  auto demo = MakeDemoModel();
  ASSERT_TRUE(demo.ok()) << demo.status();
  EXPECT_EQ(setup->info.num_parameters, CountParameters(*demo->weights));
  EXPECT_EQ(setup->info.weight_dtype, "f32");
  EXPECT_EQ(setup->info.version, kLlmserveVersion);
  ASSERT_NE(setup->engine, nullptr);
  EXPECT_EQ(setup->engine->config().scheduler.num_blocks, 32);
  EXPECT_EQ(setup->engine->config().scheduler.eos_ids, std::vector<int32_t>{257});
  EXPECT_EQ(setup->engine->config().scheduler.max_context, 2048);
  EXPECT_NE(setup->summary.find("32 blocks x 16 = 512 tokens"), std::string::npos) << setup->summary;
}

TEST(ModelSetupTest, ExplicitNameAndPrefillChunk) {
  ServerConfig c;
  c.kv_blocks = 8;
  c.model_name = "my-demo";
  c.max_prefill_chunk = 64;
  auto setup = SetUpModel(c);
  ASSERT_TRUE(setup.ok()) << setup.status();
  EXPECT_EQ(setup->info.model_name, "my-demo");
  EXPECT_EQ(setup->engine->config().scheduler.max_prefill_chunk, 64);
}

// The prefill policy flags resolve to one fixed policy, logged in the summary: on and off
// are taken as given; auto measures once (here on the demo model) and picks piggyback or
// bulk; the separate policy stays separate; a cache too small to measure with gives bulk.
TEST(ModelSetupTest, PrefillPolicyFlagsResolveToOneFixedPolicy) {
  ServerConfig c;
  c.weight_dtype = DType::kF32;
  c.threads = 2;
  using P = PrefillPolicyKind;
  struct Case {
    Piggyback mode;
    StepPolicy policy;
    int32_t blocks;
    const char* summary;
    P kind;  // for auto with a measurement: as the measurement says
  };
  for (const Case& k :
       {Case{Piggyback::kOn, StepPolicy::kMixed, 64, "prefill policy piggyback (decode steps filled to 12 rows",
             P::kPiggyback},
        Case{Piggyback::kOff, StepPolicy::kMixed, 64, "prefill policy bulk; --piggyback off", P::kBulk},
        Case{Piggyback::kAuto, StepPolicy::kSeparate, 64, "prefill policy separate (at most 4", P::kSeparate},
        Case{Piggyback::kAuto, StepPolicy::kMixed, 8, "prefill policy bulk; --piggyback auto, not measured: ",
             P::kBulk},
        Case{Piggyback::kAuto, StepPolicy::kMixed, 64,
             "--piggyback auto, measured once at start-up: decode step 8 rows", P::kBulk}}) {
    c.piggyback = k.mode;
    c.step_policy = k.policy;
    c.kv_blocks = k.blocks;
    auto setup = SetUpModel(c);
    ASSERT_TRUE(setup.ok()) << setup.status();
    const std::string& summary = setup->summary;
    EXPECT_NE(summary.find(k.summary), std::string::npos) << summary;
    const PrefillPolicyConfig got = setup->engine->config().scheduler.prefill_policy();
    const bool measured = summary.find("measured once") != std::string::npos;
    const bool pays = summary.find("piggybacking pays") != std::string::npos;
    EXPECT_EQ(got.kind, measured && pays ? P::kPiggyback : k.kind) << summary;
    if (got.kind == P::kPiggyback) {
      EXPECT_EQ(got.rows, c.mixed_step_tokens);
      EXPECT_EQ(got.horizon, c.prefill_spread_steps);
    }
  }
}

TEST(ModelSetupTest, MissingModelIsNotFound) {
  ServerConfig c;
  c.model_path = "/nonexistent/dir/model.gguf";
  auto setup = SetUpModel(c);
  EXPECT_EQ(setup.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(setup.status().message().find("/nonexistent/dir/model.gguf: no such file"), std::string::npos)
      << setup.status();
}

TEST(ModelSetupTest, Llama2cModelNeedsItsTokenizer) {
  LLMSERVE_REQUIRE_ASSET(model, "models/llama2c/stories260K.bin");
  LLMSERVE_REQUIRE_ASSET(big_tok, "models/llama2c/tokenizer.bin");
  ServerConfig c;
  c.model_path = model;
  auto none = SetUpModel(c);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("give --tokenizer"), std::string::npos) << none.status();
  c.tokenizer_path = big_tok;  // 32000 tokens for a 512-token model
  auto mismatch = SetUpModel(c);
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mismatch.status().message().find("more than the model's 512"), std::string::npos) << mismatch.status();
  // The first 100 bytes of the model's own tokenizer: a well-formed 7-token vocabulary
  // that the llama2.c format cannot tell from a whole one; the model's size can.
  LLMSERVE_REQUIRE_ASSET(tok, "models/llama2c/tok512.bin");
  std::ifstream in(tok, std::ios::binary);
  std::string head(100, '\0');
  ASSERT_TRUE(in.read(head.data(), 100));
  const std::string cut = testing::ScratchDir("model_setup_cut_tok") + "/tok_head100.bin";
  std::ofstream(cut, std::ios::binary) << head;
  c.tokenizer_path = cut;
  auto truncated = SetUpModel(c);
  EXPECT_EQ(truncated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(truncated.status().message().find("the model has 512: the file is truncated"), std::string::npos)
      << truncated.status();
}

TEST(ModelSetupTest, Stories260KWithItsTokenizer) {
  LLMSERVE_REQUIRE_ASSET(model, "models/llama2c/stories260K.bin");
  LLMSERVE_REQUIRE_ASSET(tok, "models/llama2c/tok512.bin");
  ServerConfig c;
  c.model_path = model;
  c.tokenizer_path = tok;
  c.threads = 2;
  c.max_running = 4;
  auto setup = SetUpModel(c);
  ASSERT_TRUE(setup.ok()) << setup.status();
  EXPECT_FALSE(setup->demo);
  EXPECT_EQ(setup->info.model_name, "stories260K");
  EXPECT_EQ(setup->info.config.context_length, 512);
  EXPECT_EQ(setup->num_blocks, 4 * 512 / 16);  // the 2 GiB default capped to 4 contexts
  EXPECT_GT(setup->info.num_parameters, 200'000);
  EXPECT_LT(setup->info.num_parameters, 300'000);
  EXPECT_EQ(setup->tokenizer->vocab_size(), 512);
  EXPECT_EQ(setup->engine->config().scheduler.eos_ids, std::vector<int32_t>{2});
}

}  // namespace
}  // namespace llmserve
