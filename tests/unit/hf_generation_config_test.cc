#include "model/formats/hf_generation_config.h"

#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

using ::llmserve::testing::ScratchDir;

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = ScratchDir("hf_generation_config") + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(HfGenerationConfig, MissingFileChangesNothing) {
  ModelConfig c;
  c.eos_ids = {2};
  ASSERT_TRUE(ReadGenerationConfig("/nonexistent/generation_config.json", &c).ok());
  EXPECT_EQ(c.eos_ids, std::vector<int32_t>{2});
  EXPECT_TRUE(c.generation.empty());
}

TEST(HfGenerationConfig, EosListAndSamplingDefaults) {
  // Llama 3.1 Instruct's generation_config.json.
  const std::string path = Write("llama31.json", R"({"bos_token_id": 128000, "do_sample": true,
      "eos_token_id": [128001, 128008, 128009], "temperature": 0.6, "top_p": 0.9,
      "transformers_version": "4.42.3"})");
  ModelConfig c;
  c.eos_ids = {128009};  // already known (config.json): kept once, first
  ASSERT_TRUE(ReadGenerationConfig(path, &c).ok());
  EXPECT_EQ(c.eos_ids, (std::vector<int32_t>{128009, 128001, 128008}));
  ASSERT_TRUE(c.generation.temperature.has_value());
  EXPECT_FLOAT_EQ(*c.generation.temperature, 0.6f);
  EXPECT_FLOAT_EQ(*c.generation.top_p, 0.9f);
  EXPECT_FALSE(c.generation.top_k.has_value());
  EXPECT_FALSE(c.generation.repetition_penalty.has_value());
}

TEST(HfGenerationConfig, SingleIdTopKAndRepetitionPenalty) {
  // Qwen2.5 Instruct's.
  const std::string path = Write("qwen.json", R"({"bos_token_id": 151643, "pad_token_id": 151643,
      "do_sample": true, "eos_token_id": [151645, 151643], "repetition_penalty": 1.05,
      "temperature": 0.7, "top_p": 0.8, "top_k": 20})");
  ModelConfig c;
  ASSERT_TRUE(ReadGenerationConfig(path, &c).ok());
  EXPECT_EQ(c.eos_ids, (std::vector<int32_t>{151645, 151643}));
  EXPECT_EQ(c.generation.top_k, 20);
  EXPECT_FLOAT_EQ(*c.generation.repetition_penalty, 1.05f);
  const std::string one = Write("one.json", R"({"eos_token_id": 2, "top_k": null})");
  ModelConfig d;
  ASSERT_TRUE(ReadGenerationConfig(one, &d).ok());
  EXPECT_EQ(d.eos_ids, std::vector<int32_t>{2});
  EXPECT_FALSE(d.generation.top_k.has_value());
}

TEST(HfGenerationConfig, MalformedValuesNameFileAndKey) {
  for (const char* text : {R"({"eos_token_id": "</s>"})", R"({"eos_token_id": [1, -3]})",
                           R"({"eos_token_id": 4294967296})", R"({"temperature": "hot"})", R"({"top_k": -1})",
                           R"({"top_p": 1e300})", R"({"top_p": 0})", R"({"temperature": -1})",
                           "[1, 2]", "{not json"}) {
    const std::string path = Write("bad.json", text);
    ModelConfig c;
    const absl::Status s = ReadGenerationConfig(path, &c);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(s.message().find("bad.json"), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace llmserve
