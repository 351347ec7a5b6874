// HuggingFace Qwen3ForCausalLM and Phi3ForCausalLM (config keys, q/k norms, fused
// qkv_proj / gate_up_proj, LongRoPE, partial rotary) and the sliding windows of Mistral,
// Qwen2/3 and Phi-3 configs.
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/formats/hf_config.h"
#include "model/formats/hf_model.h"
#include "nlohmann/json.hpp"
#include "tests/util/safetensors_writer.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

using json = nlohmann::json;
using ::llmserve::testing::HfSpec;
using ::llmserve::testing::MakeTensors;
using ::llmserve::testing::ScratchDir;
using ::llmserve::testing::TestValue;
using ::llmserve::testing::WriteConfig;
using ::llmserve::testing::WriteHfWeights;

constexpr int64_t kLayers = 2, kDim = 16, kFfn = 24, kHeads = 4, kKv = 2, kVocab = 32;

json BaseConfig(const std::string& arch) {
  return {{"architectures", {arch}}, {"hidden_size", kDim}, {"intermediate_size", kFfn},
          {"num_hidden_layers", kLayers}, {"num_attention_heads", kHeads}, {"num_key_value_heads", kKv},
          {"rms_norm_eps", 1e-6}, {"max_position_embeddings", 256}, {"vocab_size", kVocab},
          {"tie_word_embeddings", true}, {"bos_token_id", 1}, {"eos_token_id", 2}, {"hidden_act", "silu"}};
}

absl::StatusOr<ModelConfig> Parse(const json& j, const std::string& name) {
  const std::string dir = ScratchDir("hfarch") + "/" + name;
  WriteConfig(dir, j);
  return ParseHfConfig(dir + "/config.json");
}

json Phi3Config() {
  json j = BaseConfig("Phi3ForCausalLM");
  j["original_max_position_embeddings"] = 64;  // 256 / 64: scale 4
  j["partial_rotary_factor"] = 0.75;            // 2 heads of 8 dims: 6 rotated, 3 pairs
  j["num_attention_heads"] = 2;
  j["num_key_value_heads"] = 1;
  j["rope_scaling"] = {{"type", "longrope"},
                       {"short_factor", {1.0, 1.5, 2.0}},
                       {"long_factor", {2.0, 4.0, 8.0}}};
  j["sliding_window"] = 48;
  return j;
}

TEST(HfArchConfigTest, Qwen3) {
  json j = BaseConfig("Qwen3ForCausalLM");
  j["head_dim"] = 8;  // 4 heads of 8: q is 32 wide, dim 16
  j["attention_bias"] = false;
  j["use_sliding_window"] = false;
  j["sliding_window"] = 16;
  auto c = Parse(j, "qwen3");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch, Architecture::kQwen3);
  EXPECT_TRUE(c->qk_norm);
  EXPECT_FALSE(c->qkv_bias);
  EXPECT_EQ(c->head_dim, 8);
  EXPECT_EQ(c->rope_dim, 8);
  EXPECT_EQ(c->rope_layout, RopeLayout::kHalf);
  EXPECT_EQ(c->sliding_window, 0);
  EXPECT_EQ(c->context_length, 256);
  j.erase("architectures");
  j["model_type"] = "qwen3";
  c = Parse(j, "qwen3_type");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch, Architecture::kQwen3);
}

TEST(HfArchConfigTest, Phi3LongRopePartialRotaryWindow) {
  auto c = Parse(Phi3Config(), "phi3");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch, Architecture::kPhi3);
  EXPECT_EQ(c->head_dim, 8);
  EXPECT_EQ(c->rope_dim, 6);  // int(8 * 0.75)
  EXPECT_EQ(c->context_length, 256);
  EXPECT_EQ(c->sliding_window, 48);
  EXPECT_TRUE(c->sliding_layers.empty());
  const RopeScaling& s = c->rope_scaling;
  EXPECT_EQ(s.kind, RopeScalingKind::kLongRope);
  EXPECT_EQ(s.original_context, 64);
  EXPECT_EQ(s.short_factor, (std::vector<float>{1.0f, 1.5f, 2.0f}));
  EXPECT_EQ(s.long_factor, (std::vector<float>{2.0f, 4.0f, 8.0f}));
  EXPECT_FLOAT_EQ(s.attention_factor, static_cast<float>(std::sqrt(1.0 + std::log(4.0) / std::log(64.0))));

  json explicit_factor = Phi3Config();
  explicit_factor["rope_scaling"]["attention_factor"] = 1.5;
  explicit_factor["rope_scaling"]["type"] = "su";  // the older name
  c = Parse(explicit_factor, "phi3_attn");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FLOAT_EQ(c->rope_scaling.attention_factor, 1.5f);

  json no_scale = Phi3Config();
  no_scale["original_max_position_embeddings"] = 256;  // scale 1: no attention factor
  c = Parse(no_scale, "phi3_scale1");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FLOAT_EQ(c->rope_scaling.attention_factor, 1.0f);
}

TEST(HfArchConfigTest, Phi3RejectsBadLongRope) {
  json wrong_len = Phi3Config();
  wrong_len["rope_scaling"]["long_factor"] = {2.0, 4.0};
  auto c = Parse(wrong_len, "phi3_len");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("longrope needs 3 short and long factors"), std::string::npos) << c.status();

  json no_orig = Phi3Config();
  no_orig.erase("original_max_position_embeddings");
  c = Parse(no_orig, "phi3_orig");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("original_max_position_embeddings"), std::string::npos) << c.status();

  json negative = Phi3Config();
  negative["rope_scaling"]["short_factor"] = {1.0, -1.0, 2.0};
  c = Parse(negative, "phi3_neg");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << c.status();

  json yarn = Phi3Config();
  yarn["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}};
  c = Parse(yarn, "phi3_yarn");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnimplemented) << c.status();
}

TEST(HfArchConfigTest, SlidingWindows) {
  json q = BaseConfig("Qwen2ForCausalLM");
  q["num_hidden_layers"] = 4;
  q["use_sliding_window"] = true;
  q["sliding_window"] = 32;
  q["max_window_layers"] = 2;  // HF: layers >= 2 slide
  auto c = Parse(q, "qwen2_swa");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->sliding_window, 32);
  EXPECT_EQ(c->sliding_layers, (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(c->LayerWindow(1), 0);
  EXPECT_EQ(c->LayerWindow(2), 32);
  EXPECT_EQ(c->context_length, 256);

  q["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention", "full_attention"};
  c = Parse(q, "qwen2_types");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->sliding_layers, (std::vector<bool>{true, false, true, false}));
  q["layer_types"] = {"sliding_attention", "chunked_attention", "full_attention", "full_attention"};
  EXPECT_EQ(Parse(q, "qwen2_badtype").status().code(), absl::StatusCode::kInvalidArgument);
  q.erase("layer_types");

  q["max_window_layers"] = 4;  // no layer slides
  c = Parse(q, "qwen2_none");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->sliding_window, 0);
  EXPECT_EQ(c->LayerWindow(3), 0);

  q.erase("max_window_layers");  // HF's default 28: none of 4 layers
  c = Parse(q, "qwen2_default");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->sliding_window, 0);

  json m = BaseConfig("MistralForCausalLM");
  m["sliding_window"] = 300;  // wider than the context: no window
  c = Parse(m, "mistral_wide");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->sliding_window, 0);
  EXPECT_EQ(c->context_length, 256);

  json l = BaseConfig("LlamaForCausalLM");
  l["sliding_window"] = 16;  // not a Llama key: ignored, as HF does
  c = Parse(l, "llama_sw");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->sliding_window, 0);
}

TEST(HfArchConfigTest, UnknownArchitectureListsTheSupportedOnes) {
  json j = BaseConfig("Gemma2ForCausalLM");
  auto c = Parse(j, "gemma2");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(c.status().message().find("\"Gemma2ForCausalLM\" is not supported"), std::string::npos) << c.status();
  EXPECT_NE(c.status().message().find("Qwen3ForCausalLM"), std::string::npos);
  EXPECT_NE(c.status().message().find("Phi3ForCausalLM"), std::string::npos);
  j.erase("architectures");
  j["model_type"] = "gemma2";
  EXPECT_EQ(Parse(j, "gemma2_type").status().code(), absl::StatusCode::kUnimplemented);
}

// Phi-3's fused tensors come out as the canonical q | k | v and gate | up row ranges.
TEST(HfArchModelTest, Phi3FusedTensorsAreSplit) {
  const std::string dir = ScratchDir("hfarch") + "/phi3_model";
  WriteConfig(dir, Phi3Config());
  const int64_t hd = 8, q = 2 * hd, kv = hd;
  std::vector<HfSpec> specs = {{"model.embed_tokens.weight", {kVocab, kDim}}, {"model.norm.weight", {kDim}}};
  for (int64_t i = 0; i < kLayers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    specs.push_back({p + "input_layernorm.weight", {kDim}});
    specs.push_back({p + "post_attention_layernorm.weight", {kDim}});
    specs.push_back({p + "self_attn.qkv_proj.weight", {q + 2 * kv, kDim}});
    specs.push_back({p + "self_attn.o_proj.weight", {kDim, q}});
    specs.push_back({p + "mlp.gate_up_proj.weight", {2 * kFfn, kDim}});
    specs.push_back({p + "mlp.down_proj.weight", {kDim, kFfn}});
  }
  WriteHfWeights(dir, MakeTensors(specs, "BF16"));
  auto w = LoadHfModel(dir);
  ASSERT_TRUE(w.ok()) << w.status();
  struct Part {
    const char* name;
    const char* hf;
    int64_t rows, first_row;
  };
  for (const Part& part : {Part{"blk.1.attn_q.weight", "model.layers.1.self_attn.qkv_proj.weight", q, 0},
                           Part{"blk.1.attn_k.weight", "model.layers.1.self_attn.qkv_proj.weight", kv, q},
                           Part{"blk.1.attn_v.weight", "model.layers.1.self_attn.qkv_proj.weight", kv, q + kv},
                           Part{"blk.0.ffn_gate.weight", "model.layers.0.mlp.gate_up_proj.weight", kFfn, 0},
                           Part{"blk.0.ffn_up.weight", "model.layers.0.mlp.gate_up_proj.weight", kFfn, kFfn}}) {
    SCOPED_TRACE(part.name);
    const TensorView* t = (*w)->Find(part.name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->shape, (std::vector<int64_t>{part.rows, kDim}));
    std::vector<float> v(static_cast<size_t>(t->numel()));
    ConvertToF32(t->dtype, t->data, v.size(), v.data());
    for (int64_t e : {int64_t{0}, int64_t{7}, part.rows * kDim - 1}) {
      const float want = TestValue(part.hf, static_cast<uint64_t>(part.first_row * kDim + e));
      EXPECT_EQ(v[static_cast<size_t>(e)], BF16ToF32(F32ToBF16(want))) << e;
    }
  }
  auto mapped = MapHfTensorName(Architecture::kPhi3, "model.layers.3.self_attn.qkv_proj.weight");
  ASSERT_TRUE(mapped);
  EXPECT_EQ(mapped->parts, (std::vector<std::string>{"blk.3.attn_q.weight", "blk.3.attn_k.weight",
                                                     "blk.3.attn_v.weight"}));
}

TEST(HfArchModelTest, Qwen3NormsAreLoaded) {
  const std::string dir = ScratchDir("hfarch") + "/qwen3_model";
  json j = BaseConfig("Qwen3ForCausalLM");
  j["head_dim"] = 8;
  WriteConfig(dir, j);
  std::vector<HfSpec> specs =
      ::llmserve::testing::LlamaHfSpecs(kLayers, kDim, kFfn, kHeads, kKv, 8, kVocab, /*lm_head=*/false,
                                        /*qkv_bias=*/false);
  std::vector<HfSpec> with_norms = specs;
  for (int64_t i = 0; i < kLayers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".self_attn.";
    with_norms.push_back({p + "q_norm.weight", {8}});
    with_norms.push_back({p + "k_norm.weight", {8}});
  }
  WriteHfWeights(dir, MakeTensors(with_norms, "F32"));
  auto w = LoadHfModel(dir);
  ASSERT_TRUE(w.ok()) << w.status();
  const TensorView* kn = (*w)->Find("blk.1.attn_k_norm.weight");
  ASSERT_NE(kn, nullptr);
  EXPECT_EQ(kn->shape, (std::vector<int64_t>{8}));

  WriteHfWeights(dir, MakeTensors(specs, "F32"));  // without them: incomplete
  auto m = LoadHfModel(dir);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("attn_q_norm"), std::string::npos) << m.status();
}

}  // namespace
}  // namespace llmserve
