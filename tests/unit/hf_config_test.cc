#include "model/formats/hf_config.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/util/safetensors_writer.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

using json = nlohmann::json;
using ::llmserve::testing::ScratchDir;
using ::llmserve::testing::WriteFileBytes;

// A TinyLlama-1.1B-style config, shrunk.
json LlamaConfig() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "hidden_size": 64, "intermediate_size": 176, "num_hidden_layers": 2,
    "num_attention_heads": 8, "num_key_value_heads": 2, "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0, "rope_scaling": null, "max_position_embeddings": 2048,
    "vocab_size": 100, "tie_word_embeddings": false, "bos_token_id": 1, "eos_token_id": 2,
    "attention_bias": false, "hidden_act": "silu", "torch_dtype": "bfloat16"})");
}

json Gpt2Config() {
  return json::parse(R"({
    "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
    "n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 64, "n_ctx": 64, "n_inner": null,
    "layer_norm_epsilon": 1e-05, "vocab_size": 50257, "bos_token_id": 50256, "eos_token_id": 50256})");
}

absl::StatusOr<ModelConfig> Parse(const json& j, const std::string& name = "cfg") {
  const std::string dir = ScratchDir("hfcfg") + "/" + name;
  ::llmserve::testing::WriteConfig(dir, j);
  return ParseHfConfig(dir + "/config.json");
}

TEST(HfConfigTest, Llama) {
  auto c = Parse(LlamaConfig(), "tiny-llama");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->name, "tiny-llama");
  EXPECT_EQ(c->format, "hf");
  EXPECT_EQ(c->arch, Architecture::kLlama);
  EXPECT_EQ(c->hidden_size, 64);
  EXPECT_EQ(c->ffn_dim, 176);
  EXPECT_EQ(c->num_layers, 2);
  EXPECT_EQ(c->num_heads, 8);
  EXPECT_EQ(c->num_kv_heads, 2);
  EXPECT_EQ(c->head_dim, 8);
  EXPECT_EQ(c->rope_dim, 8);
  EXPECT_FLOAT_EQ(c->norm_eps, 1e-5f);
  EXPECT_FLOAT_EQ(c->rope_theta, 10000.0f);
  EXPECT_EQ(c->rope_scaling.kind, RopeScalingKind::kNone);
  EXPECT_EQ(c->rope_layout, RopeLayout::kHalf);
  EXPECT_EQ(c->norm, NormKind::kRmsNorm);
  EXPECT_EQ(c->position, PositionKind::kRope);
  EXPECT_EQ(c->activation, Activation::kSilu);
  EXPECT_EQ(c->context_length, 2048);
  EXPECT_EQ(c->vocab_size, 100);
  EXPECT_FALSE(c->tied_embeddings);
  EXPECT_FALSE(c->qkv_bias || c->out_bias || c->mlp_bias || c->norm_bias);
  EXPECT_EQ(c->bos_id, 1);
  EXPECT_EQ(c->eos_id, 2);
}

TEST(HfConfigTest, LlamaDefaultsAndOptionalKeys) {
  json j = LlamaConfig();
  for (const char* k : {"num_key_value_heads", "rope_theta", "tie_word_embeddings", "bos_token_id", "rope_scaling"}) {
    j.erase(k);
  }
  j["eos_token_id"] = {128001, 128008, 128009};  // Llama 3.1 style list: each ends generation
  j["head_dim"] = 16;                              // explicit, != hidden / heads
  j["attention_bias"] = true;
  j["mlp_bias"] = true;
  j["vocab_size"] = 130000;
  auto c = Parse(j);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->num_kv_heads, 8);
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_EQ(c->rope_dim, 16);
  EXPECT_FLOAT_EQ(c->rope_theta, 10000.0f);
  EXPECT_FALSE(c->tied_embeddings);
  EXPECT_EQ(c->bos_id, -1);
  EXPECT_EQ(c->eos_id, 128001);
  EXPECT_EQ(c->eos_ids, (std::vector<int32_t>{128001, 128008, 128009}));
  EXPECT_TRUE(c->qkv_bias);
  EXPECT_TRUE(c->out_bias);
  EXPECT_TRUE(c->mlp_bias);
}

TEST(HfConfigTest, RopeScaling) {
  json j = LlamaConfig();
  j["rope_theta"] = 500000.0;
  j["rope_scaling"] = json::parse(R"({"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 8192, "rope_type": "llama3"})");
  auto c = Parse(j);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FLOAT_EQ(c->rope_theta, 500000.0f);
  EXPECT_EQ(c->rope_scaling.kind, RopeScalingKind::kLlama3);
  EXPECT_FLOAT_EQ(c->rope_scaling.factor, 8.0f);
  EXPECT_FLOAT_EQ(c->rope_scaling.low_freq_factor, 1.0f);
  EXPECT_FLOAT_EQ(c->rope_scaling.high_freq_factor, 4.0f);
  EXPECT_EQ(c->rope_scaling.original_context, 8192);

  j["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
  c = Parse(j);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rope_scaling.kind, RopeScalingKind::kLinear);
  EXPECT_FLOAT_EQ(c->rope_scaling.factor, 4.0f);

  j["rope_scaling"] = {{"rope_type", "default"}};
  c = Parse(j);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rope_scaling.kind, RopeScalingKind::kNone);

  for (const char* type : {"yarn", "dynamic"}) {
    j["rope_scaling"] = {{"rope_type", type}, {"factor", 2.0}};
    c = Parse(j);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kUnimplemented) << type;
    EXPECT_NE(c.status().message().find(type), std::string::npos) << c.status();
  }
  j["rope_scaling"] = {{"rope_type", "longrope"}, {"factor", 2.0}};  // no factor lists (hf_arch_test has them)
  c = Parse(j);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("short_factor"), std::string::npos) << c.status();
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};  // incomplete
  EXPECT_EQ(Parse(j).status().code(), absl::StatusCode::kInvalidArgument);
  j["rope_scaling"] = {{"type", "linear"}};  // no factor
  EXPECT_EQ(Parse(j).status().code(), absl::StatusCode::kInvalidArgument);
  j["rope_scaling"] = "linear";
  EXPECT_EQ(Parse(j).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(HfConfigTest, MistralAndQwen2) {
  json m = LlamaConfig();
  m["architectures"] = {"MistralForCausalLM"};
  m["max_position_embeddings"] = 32768;
  m["sliding_window"] = 4096;  // a window on every layer; the context stays the model's
  m["attention_bias"] = true;  // not a Mistral key, but honoured the same way
  auto c = Parse(m);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch, Architecture::kLlama);
  EXPECT_EQ(c->context_length, 32768);
  EXPECT_EQ(c->sliding_window, 4096);
  EXPECT_TRUE(c->sliding_layers.empty());
  m["sliding_window"] = nullptr;
  c = Parse(m);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->context_length, 32768);
  EXPECT_EQ(c->sliding_window, 0);

  json q = LlamaConfig();
  q["architectures"] = {"Qwen2ForCausalLM"};
  q["tie_word_embeddings"] = true;
  q["attention_bias"] = false;
  q["sliding_window"] = 128;
  q["use_sliding_window"] = false;
  c = Parse(q);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->qkv_bias);
  EXPECT_FALSE(c->out_bias);
  EXPECT_TRUE(c->tied_embeddings);
  EXPECT_EQ(c->context_length, 2048);
  EXPECT_EQ(c->arch, Architecture::kQwen2);
  EXPECT_EQ(c->sliding_window, 0);  // use_sliding_window false
}

TEST(HfConfigTest, Gpt2) {
  auto c = Parse(Gpt2Config(), "gpt2-tiny");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch, Architecture::kGpt2);
  EXPECT_EQ(c->hidden_size, 32);
  EXPECT_EQ(c->num_layers, 2);
  EXPECT_EQ(c->num_heads, 4);
  EXPECT_EQ(c->num_kv_heads, 4);
  EXPECT_EQ(c->head_dim, 8);
  EXPECT_EQ(c->ffn_dim, 128);  // n_inner null -> 4 * n_embd
  EXPECT_EQ(c->context_length, 64);
  EXPECT_EQ(c->norm, NormKind::kLayerNorm);
  EXPECT_TRUE(c->norm_bias);
  EXPECT_EQ(c->position, PositionKind::kLearned);
  EXPECT_EQ(c->activation, Activation::kGeluTanh);
  EXPECT_TRUE(c->qkv_bias && c->out_bias && c->mlp_bias);
  EXPECT_TRUE(c->tied_embeddings);
  EXPECT_EQ(c->bos_id, 50256);
  EXPECT_EQ(c->eos_id, 50256);

  json j = Gpt2Config();
  j.erase("n_positions");
  j["n_ctx"] = 48;
  j["n_inner"] = 100;
  j.erase("architectures");  // falls back to model_type
  c = Parse(j);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->context_length, 48);
  EXPECT_EQ(c->ffn_dim, 100);
  j["activation_function"] = "relu";
  EXPECT_EQ(Parse(j).status().code(), absl::StatusCode::kUnimplemented);
}

// Expects rejection with `code`, naming the file and (if given) `needle`.
void ExpectRejected(const json& j, absl::StatusCode code, const std::string& needle) {
  const std::string dir = ScratchDir("hfcfg_bad") + "/m";
  ::llmserve::testing::WriteConfig(dir, j);
  auto c = ParseHfConfig(dir + "/config.json");
  ASSERT_FALSE(c.ok()) << j.dump();
  EXPECT_EQ(c.status().code(), code) << c.status();
  EXPECT_NE(c.status().message().find(dir + "/config.json"), std::string::npos) << c.status();
  EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status();
}

TEST(HfConfigTest, RejectsMissingKeys) {
  for (const char* key : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                          "max_position_embeddings", "vocab_size"}) {
    json j = LlamaConfig();
    j.erase(key);
    ExpectRejected(j, absl::StatusCode::kInvalidArgument, key);
  }
  for (const char* key : {"n_embd", "n_layer", "n_head", "vocab_size"}) {
    json j = Gpt2Config();
    j.erase(key);
    ExpectRejected(j, absl::StatusCode::kInvalidArgument, key);
  }
  json j = Gpt2Config();
  j.erase("n_positions");
  j.erase("n_ctx");
  ExpectRejected(j, absl::StatusCode::kInvalidArgument, "n_ctx");
}

TEST(HfConfigTest, RejectsWrongTypesAndValues) {
  const std::pair<const char*, json> cases[] = {
      {"hidden_size", "64"},          {"hidden_size", 64.5},         {"hidden_size", -64},
      {"num_hidden_layers", 0},       {"num_attention_heads", true}, {"vocab_size", json::array()},
      {"vocab_size", 18446744073709551615ull},                       {"rms_norm_eps", "1e-5"},
      {"rope_theta", "big"},          {"tie_word_embeddings", "yes"}, {"eos_token_id", -2},
      {"eos_token_id", "</s>"},       {"bos_token_id", 4294967296ll}, {"max_position_embeddings", -1},
      {"head_dim", 0},                {"num_key_value_heads", 0},    {"architectures", "LlamaForCausalLM"},
      {"architectures", json::array({1})},
  };
  for (const auto& [key, value] : cases) {
    json j = LlamaConfig();
    j[key] = value;
    SCOPED_TRACE(std::string(key) + " = " + value.dump());
    ExpectRejected(j, absl::StatusCode::kInvalidArgument, key);
  }
  // Values that are well typed but inconsistent (caught by ModelConfig::Validate).
  json j = LlamaConfig();
  j["num_key_value_heads"] = 3;
  ExpectRejected(j, absl::StatusCode::kInvalidArgument, "num_kv_heads");
  j = LlamaConfig();
  j["num_attention_heads"] = 7;  // does not divide hidden_size and no head_dim
  ExpectRejected(j, absl::StatusCode::kInvalidArgument, "num_attention_heads");
  j = LlamaConfig();
  j["eos_token_id"] = 100;  // outside the vocabulary
  ExpectRejected(j, absl::StatusCode::kInvalidArgument, "eos_id");
  j = LlamaConfig();
  j["hidden_act"] = "gelu";
  ExpectRejected(j, absl::StatusCode::kUnimplemented, "gelu");
}

TEST(HfConfigTest, RejectsUnknownArchitectures) {
  json j = LlamaConfig();
  j["architectures"] = {"PhiForCausalLM"};
  ExpectRejected(j, absl::StatusCode::kUnimplemented, "PhiForCausalLM");
  j.erase("architectures");
  j["model_type"] = "falcon";
  ExpectRejected(j, absl::StatusCode::kUnimplemented, "falcon");
  j.erase("model_type");
  ExpectRejected(j, absl::StatusCode::kInvalidArgument, "model_type");
}

TEST(HfConfigTest, RejectsBadFiles) {
  const std::string dir = ScratchDir("hfcfg_files");
  for (const std::string text : {"", "{", "[1, 2]", "null", "{\"hidden_size\": 64,}", "\xff\xfe{}"}) {
    WriteFileBytes(dir + "/config.json", text);
    auto c = ParseHfConfig(dir + "/config.json");
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(c.status().message().find(dir + "/config.json"), std::string::npos) << c.status();
  }
  auto c = ParseHfConfig(dir + "/missing.json");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("missing.json"), std::string::npos);
}

}  // namespace
}  // namespace llmserve
