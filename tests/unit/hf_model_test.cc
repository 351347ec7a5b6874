#include "model/formats/hf_model.h"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/util/safetensors_writer.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

using json = nlohmann::json;
using ::llmserve::testing::HfSpec;
using ::llmserve::testing::MakeTensors;
using ::llmserve::testing::ReadFileBytes;
using ::llmserve::testing::ScratchDir;
using ::llmserve::testing::StTensor;
using ::llmserve::testing::TestValue;
using ::llmserve::testing::WriteConfig;
using ::llmserve::testing::WriteFileBytes;
using ::llmserve::testing::WriteHfWeights;

constexpr int64_t kLayers = 2, kDim = 16, kFfn = 24, kHeads = 4, kKv = 2, kHeadDim = 4, kVocab = 32;

json LlamaFamilyConfig(const std::string& arch, bool tied) {
  return {{"architectures", {arch}}, {"hidden_size", kDim}, {"intermediate_size", kFfn},
          {"num_hidden_layers", kLayers}, {"num_attention_heads", kHeads}, {"num_key_value_heads", kKv},
          {"rms_norm_eps", 1e-6}, {"max_position_embeddings", 64}, {"vocab_size", kVocab},
          {"tie_word_embeddings", tied}, {"bos_token_id", 1}, {"eos_token_id", 2}};
}

std::vector<HfSpec> LlamaSpecs(bool lm_head, bool qkv_bias = false, bool out_bias = false) {
  return ::llmserve::testing::LlamaHfSpecs(kLayers, kDim, kFfn, kHeads, kKv, kHeadDim, kVocab, lm_head, qkv_bias,
                                           out_bias);
}

// HF -> canonical names, written out from the mapping in model_weights.h.
std::map<std::string, std::string> LlamaNames(bool lm_head, bool qkv_bias, bool out_bias) {
  std::map<std::string, std::string> m = {{"model.embed_tokens.weight", "token_embd.weight"},
                                          {"model.norm.weight", "output_norm.weight"}};
  if (lm_head) m["lm_head.weight"] = "output.weight";
  for (int i = 0; i < kLayers; ++i) {
    const std::string h = "model.layers." + std::to_string(i) + ".", b = "blk." + std::to_string(i) + ".";
    m[h + "input_layernorm.weight"] = b + "attn_norm.weight";
    m[h + "post_attention_layernorm.weight"] = b + "ffn_norm.weight";
    m[h + "self_attn.q_proj.weight"] = b + "attn_q.weight";
    m[h + "self_attn.k_proj.weight"] = b + "attn_k.weight";
    m[h + "self_attn.v_proj.weight"] = b + "attn_v.weight";
    m[h + "self_attn.o_proj.weight"] = b + "attn_output.weight";
    m[h + "mlp.gate_proj.weight"] = b + "ffn_gate.weight";
    m[h + "mlp.up_proj.weight"] = b + "ffn_up.weight";
    m[h + "mlp.down_proj.weight"] = b + "ffn_down.weight";
    if (qkv_bias) {
      m[h + "self_attn.q_proj.bias"] = b + "attn_q.bias";
      m[h + "self_attn.k_proj.bias"] = b + "attn_k.bias";
      m[h + "self_attn.v_proj.bias"] = b + "attn_v.bias";
    }
    if (out_bias) m[h + "self_attn.o_proj.bias"] = b + "attn_output.bias";
  }
  return m;
}

std::vector<float> Floats(const TensorView& t) {
  std::vector<float> v(t.numel());
  ConvertToF32(t.dtype, t.data, v.size(), v.data());
  return v;
}

// Every canonical tensor holds exactly the values written for its HF tensor.
void ExpectValues(const ModelWeights& w, const std::map<std::string, std::string>& names, DType dtype) {
  EXPECT_EQ(w.tensors().size(), names.size());
  for (const auto& [hf, canonical] : names) {
    const TensorView* t = w.Find(canonical);
    ASSERT_NE(t, nullptr) << canonical;
    EXPECT_EQ(t->dtype, dtype) << canonical;
    EXPECT_EQ(Floats(*t), ::llmserve::testing::TestValues(hf, t->numel())) << hf << " -> " << canonical;
  }
}

std::string NewDir(const std::string& name) {
  const std::string dir = ScratchDir("hfmodel") + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(HfModelTest, LlamaSingleFileF32Untied) {
  const std::string dir = NewDir("llama");
  WriteConfig(dir, LlamaFamilyConfig("LlamaForCausalLM", false));
  WriteHfWeights(dir, MakeTensors(LlamaSpecs(true), "F32"));
  auto w = LoadHfModel(dir);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ((*w)->config.format, "hf");
  EXPECT_EQ((*w)->config.name, "llama");
  EXPECT_EQ((*w)->config.num_kv_heads, kKv);
  EXPECT_FALSE((*w)->config.tied_embeddings);
  ExpectValues(**w, LlamaNames(true, false, false), DType::kF32);
}

TEST(HfModelTest, LlamaTiedIgnoresLmHeadAndExtraTensors) {
  const std::string dir = NewDir("llama_tied");
  WriteConfig(dir, LlamaFamilyConfig("LlamaForCausalLM", true));
  std::vector<StTensor> t = MakeTensors(LlamaSpecs(true), "BF16");
  std::string i64(16, '\1');
  t.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", "I64", {2}, i64});  // unsupported, unused
  t.push_back({"model.layers.7.mlp.up_proj.weight", "F32", {1}, std::string(4, '\0')});  // beyond num layers
  t.push_back({"something.else", "F64", {1}, std::string(8, '\0')});
  WriteHfWeights(dir, t);
  auto w = LoadHfModel(dir);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ((*w)->Find("output.weight"), nullptr);
  ExpectValues(**w, LlamaNames(false, false, false), DType::kBF16);
}

TEST(HfModelTest, LlamaAttentionBiasShardedWithLlama3Rope) {
  const std::string dir = NewDir("llama_bias");
  json c = LlamaFamilyConfig("LlamaForCausalLM", false);
  c["attention_bias"] = true;
  c["rope_theta"] = 500000.0;
  c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  WriteConfig(dir, c);
  WriteHfWeights(dir, MakeTensors(LlamaSpecs(true, true, true), "F32"), 2);
  auto w = LoadHfModel(dir);
  ASSERT_TRUE(w.ok()) << w.status();
  const ModelConfig& cfg = (*w)->config;
  EXPECT_TRUE(cfg.qkv_bias);
  EXPECT_TRUE(cfg.out_bias);
  EXPECT_FLOAT_EQ(cfg.rope_theta, 500000.0f);
  EXPECT_EQ(cfg.rope_scaling.kind, RopeScalingKind::kLlama3);
  EXPECT_FLOAT_EQ(cfg.rope_scaling.factor, 32.0f);
  EXPECT_EQ(cfg.rope_scaling.original_context, 8192);
  ExpectValues(**w, LlamaNames(true, true, true), DType::kF32);
}

TEST(HfModelTest, MistralShardedF16) {
  const std::string dir = NewDir("mistral");
  WriteConfig(dir, LlamaFamilyConfig("MistralForCausalLM", false));
  WriteHfWeights(dir, MakeTensors(LlamaSpecs(true), "F16"), 3);
  ASSERT_TRUE(std::filesystem::exists(dir + "/model-00003-of-00003.safetensors"));
  auto w = LoadHfModel(dir);
  ASSERT_TRUE(w.ok()) << w.status();
  ExpectValues(**w, LlamaNames(true, false, false), DType::kF16);
}

TEST(HfModelTest, Qwen2BiasesBf16) {
  const std::string dir = NewDir("qwen2");
  WriteConfig(dir, LlamaFamilyConfig("Qwen2ForCausalLM", true));
  WriteHfWeights(dir, MakeTensors(LlamaSpecs(false, /*qkv_bias=*/true), "BF16"), 2);
  auto w = LoadHfModel(dir);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE((*w)->config.qkv_bias);
  EXPECT_FALSE((*w)->config.out_bias);
  EXPECT_EQ((*w)->Find("blk.1.attn_k.bias")->shape, (std::vector<int64_t>{kKv * kHeadDim}));
  ExpectValues(**w, LlamaNames(false, true, false), DType::kBF16);
}

constexpr int64_t kGptCtx = 8, kGptFfn = 64;

json Gpt2Config() {
  return {{"architectures", {"GPT2LMHeadModel"}}, {"n_embd", kDim}, {"n_layer", kLayers}, {"n_head", kHeads},
          {"n_positions", kGptCtx}, {"n_inner", nullptr}, {"vocab_size", kVocab}, {"bos_token_id", 0},
          {"eos_token_id", 0}};
}

// GPT-2 HF -> canonical names and whether the HF tensor is a Conv1D [in, out] weight.
std::map<std::string, std::pair<std::string, bool>> Gpt2Names(const std::string& prefix) {
  std::map<std::string, std::pair<std::string, bool>> m = {
      {prefix + "wte.weight", {"token_embd.weight", false}}, {prefix + "wpe.weight", {"position_embd.weight", false}},
      {prefix + "ln_f.weight", {"output_norm.weight", false}}, {prefix + "ln_f.bias", {"output_norm.bias", false}}};
  for (int i = 0; i < kLayers; ++i) {
    const std::string h = prefix + "h." + std::to_string(i) + ".", b = "blk." + std::to_string(i) + ".";
    const std::pair<const char*, const char*> modules[] = {{"ln_1", "attn_norm"},        {"ln_2", "ffn_norm"},
                                                           {"attn.c_attn", "attn_qkv"}, {"attn.c_proj", "attn_output"},
                                                           {"mlp.c_fc", "ffn_up"},      {"mlp.c_proj", "ffn_down"}};
    for (const auto& [hm, cm] : modules) {
      const bool conv = std::string(hm).find('.') != std::string::npos;
      m[h + hm + ".weight"] = {b + cm + ".weight", conv};
      m[h + hm + ".bias"] = {b + cm + ".bias", false};
    }
  }
  return m;
}

void ExpectGpt2Values(const ModelWeights& w, const std::string& prefix, DType dtype) {
  const auto names = Gpt2Names(prefix);
  EXPECT_EQ(w.tensors().size(), names.size());
  for (const auto& [hf, target] : names) {
    const auto& [canonical, transposed] = target;
    const TensorView* t = w.Find(canonical);
    ASSERT_NE(t, nullptr) << canonical;
    EXPECT_EQ(t->dtype, dtype);
    std::vector<float> v = Floats(*t);
    if (!transposed) {
      EXPECT_EQ(v, ::llmserve::testing::TestValues(hf, t->numel())) << hf;
      continue;
    }
    ASSERT_EQ(t->shape.size(), 2u);
    const int64_t out = t->shape[0], in = t->shape[1];  // HF stored [in, out]
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t i = 0; i < in; ++i) {
        ASSERT_EQ(v[o * in + i], TestValue(hf, i * out + o)) << hf << " [" << o << ", " << i << "]";
      }
    }
  }
}

TEST(HfModelTest, Gpt2TransposesConv1DWeights) {
  const std::string dir = NewDir("gpt2");
  WriteConfig(dir, Gpt2Config());
  auto specs = ::llmserve::testing::Gpt2HfSpecs(kLayers, kDim, kGptFfn, kGptCtx, kVocab, "transformer.");
  specs.push_back({"lm_head.weight", {kVocab, kDim}});  // tied: ignored
  WriteHfWeights(dir, MakeTensors(specs, "F32"));
  auto w = LoadHfModel(dir);
  ASSERT_TRUE(w.ok()) << w.status();
  const ModelConfig& c = (*w)->config;
  EXPECT_EQ(c.arch, Architecture::kGpt2);
  EXPECT_EQ(c.ffn_dim, kGptFfn);
  EXPECT_EQ((*w)->Find("blk.0.attn_qkv.weight")->shape, (std::vector<int64_t>{3 * kDim, kDim}));
  EXPECT_EQ((*w)->Find("blk.1.ffn_up.weight")->shape, (std::vector<int64_t>{kGptFfn, kDim}));
  EXPECT_EQ((*w)->Find("blk.1.ffn_down.weight")->shape, (std::vector<int64_t>{kDim, kGptFfn}));
  ExpectGpt2Values(**w, "transformer.", DType::kF32);
}

TEST(HfModelTest, Gpt2WithoutPrefixShardedF16) {
  const std::string dir = NewDir("gpt2_noprefix");
  WriteConfig(dir, Gpt2Config());
  WriteHfWeights(dir, MakeTensors(::llmserve::testing::Gpt2HfSpecs(kLayers, kDim, kGptFfn, kGptCtx, kVocab, ""), "F16"),
                 2);
  auto w = LoadHfModel(dir);
  ASSERT_TRUE(w.ok()) << w.status();
  ExpectGpt2Values(**w, "", DType::kF16);
}

TEST(HfModelTest, MapHfTensorName) {
  EXPECT_EQ(MapHfTensorName(Architecture::kLlama, "model.layers.12.mlp.down_proj.weight")->canonical,
            "blk.12.ffn_down.weight");
  EXPECT_FALSE(MapHfTensorName(Architecture::kLlama, "model.layers.01.mlp.down_proj.weight"));
  EXPECT_FALSE(MapHfTensorName(Architecture::kLlama, "model.layers.x.mlp.down_proj.weight"));
  EXPECT_FALSE(MapHfTensorName(Architecture::kLlama, "model.layers.1.mlp.down_proj.scale"));
  EXPECT_FALSE(MapHfTensorName(Architecture::kLlama, "model.layers.1"));
  EXPECT_FALSE(MapHfTensorName(Architecture::kGpt2, "h.0.attn.bias"));
  EXPECT_FALSE(MapHfTensorName(Architecture::kGpt2, "h.0.attn.masked_bias"));
  auto qkv = MapHfTensorName(Architecture::kGpt2, "transformer.h.3.attn.c_attn.weight");
  ASSERT_TRUE(qkv);
  EXPECT_EQ(qkv->canonical, "blk.3.attn_qkv.weight");
  EXPECT_TRUE(qkv->transpose);
  EXPECT_FALSE(MapHfTensorName(Architecture::kGpt2, "h.3.attn.c_attn.bias")->transpose);
}

// Expects `dir` to be rejected with `code` and a message containing every needle.
void ExpectRejected(const std::string& dir, absl::StatusCode code, const std::vector<std::string>& needles) {
  auto w = LoadHfModel(dir);
  ASSERT_FALSE(w.ok()) << dir << " loaded";
  EXPECT_EQ(w.status().code(), code) << w.status();
  for (const std::string& n : needles) EXPECT_NE(w.status().message().find(n), std::string::npos) << w.status();
}

// A valid untied Llama dir whose tensors are altered by `edit` before writing.
template <typename Edit>
std::string LlamaDirWith(const std::string& name, Edit edit, int shards = 1) {
  const std::string dir = NewDir(name);
  WriteConfig(dir, LlamaFamilyConfig("LlamaForCausalLM", false));
  std::vector<StTensor> t = MakeTensors(LlamaSpecs(true), "F32");
  edit(t);
  WriteHfWeights(dir, t, shards);
  return dir;
}

StTensor* FindTensor(std::vector<StTensor>& t, const std::string& name) {
  for (StTensor& x : t) {
    if (x.name == name) return &x;
  }
  ADD_FAILURE() << "no tensor " << name;
  return &t[0];
}

TEST(HfModelTest, RejectsBadTensors) {
  std::string dir = LlamaDirWith("f64", [](auto& t) {
    StTensor* e = FindTensor(t, "model.embed_tokens.weight");
    e->dtype = "F64";
    e->data += e->data;  // 8 bytes per element
  });
  ExpectRejected(dir, absl::StatusCode::kUnimplemented, {dir + "/model.safetensors", "F64", "embed_tokens"});
  dir = LlamaDirWith("q4", [](auto& t) { FindTensor(t, "model.layers.1.self_attn.v_proj.weight")->dtype = "Q4_X"; });
  ExpectRejected(dir, absl::StatusCode::kUnimplemented, {dir + "/model.safetensors", "Q4_X"});
  dir = LlamaDirWith("missing", [](auto& t) {
    t.erase(t.begin() + (FindTensor(t, "model.layers.1.mlp.up_proj.weight") - t.data()));
  });
  ExpectRejected(dir, absl::StatusCode::kInvalidArgument, {dir + "/model.safetensors", "blk.1.ffn_up.weight"});
  dir = LlamaDirWith("no_lm_head", [](auto& t) { t.erase(t.begin() + (FindTensor(t, "lm_head.weight") - t.data())); });
  ExpectRejected(dir, absl::StatusCode::kInvalidArgument, {dir + "/model.safetensors", "output.weight"});
  dir = LlamaDirWith("shape", [](auto& t) { FindTensor(t, "model.layers.0.self_attn.k_proj.weight")->shape = {kDim, 8}; });
  ExpectRejected(dir, absl::StatusCode::kInvalidArgument, {dir + "/model.safetensors", "blk.0.attn_k.weight"});
  dir = LlamaDirWith("size", [](auto& t) { FindTensor(t, "model.norm.weight")->data.pop_back(); });
  ExpectRejected(dir, absl::StatusCode::kInvalidArgument, {dir + "/model.safetensors", "model.norm.weight"});
  dir = LlamaDirWith("sharded_missing", [](auto& t) { t.pop_back(); }, 2);
  ExpectRejected(dir, absl::StatusCode::kInvalidArgument, {dir + "/model.safetensors.index.json", "missing tensor"});
}

TEST(HfModelTest, RejectsBadGpt2Tensors) {
  const std::string dir = NewDir("gpt2_bad");
  WriteConfig(dir, Gpt2Config());
  auto specs = ::llmserve::testing::Gpt2HfSpecs(kLayers, kDim, kGptFfn, kGptCtx, kVocab, "transformer.");
  specs.push_back({"wte.weight", {kVocab, kDim}});  // also maps to token_embd.weight
  WriteHfWeights(dir, MakeTensors(specs, "F32"));
  ExpectRejected(dir, absl::StatusCode::kInvalidArgument, {dir + "/model.safetensors", "duplicate", "token_embd"});
  specs.pop_back();
  for (HfSpec& s : specs) {
    if (s.name == "transformer.h.1.mlp.c_fc.weight") s.shape = {kDim * kGptFfn};  // not a matrix
  }
  WriteHfWeights(dir, MakeTensors(specs, "F32"));
  ExpectRejected(dir, absl::StatusCode::kInvalidArgument, {dir + "/model.safetensors", "c_fc"});
}

TEST(HfModelTest, RejectsBadIndexFiles) {
  const std::string dir = LlamaDirWith("index", [](auto&) {}, 2);
  const std::string index = dir + "/model.safetensors.index.json";
  const json good = json::parse(ReadFileBytes(index));
  ASSERT_TRUE(LoadHfModel(dir).ok());

  json j = good;
  j["weight_map"]["model.norm.weight"] = "model-00009-of-00009.safetensors";
  WriteFileBytes(index, j.dump());
  ExpectRejected(dir, absl::StatusCode::kNotFound, {index, "model-00009-of-00009.safetensors"});
  for (const char* shard : {"../model-00001-of-00002.safetensors", "sub/model.safetensors", "/etc/passwd", "..", ""}) {
    j = good;
    j["weight_map"]["model.norm.weight"] = shard;
    WriteFileBytes(index, j.dump());
    ExpectRejected(dir, absl::StatusCode::kInvalidArgument, {index});
  }
  j = good;
  j["weight_map"]["model.norm.weight"] = 3;
  WriteFileBytes(index, j.dump());
  ExpectRejected(dir, absl::StatusCode::kInvalidArgument, {index, "model.norm.weight"});
  j = good;  // the named shard exists but does not hold the tensor
  const std::string other = j["weight_map"]["model.embed_tokens.weight"] == "model-00001-of-00002.safetensors"
                                ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
  j["weight_map"]["model.embed_tokens.weight"] = other;
  WriteFileBytes(index, j.dump());
  ExpectRejected(dir, absl::StatusCode::kInvalidArgument, {index, "model.embed_tokens.weight", other});
  j = good;
  j.erase("weight_map");
  WriteFileBytes(index, j.dump());
  ExpectRejected(dir, absl::StatusCode::kInvalidArgument, {index, "weight_map"});
  for (const char* text : {"", "{", "[]", "{\"weight_map\": []}"}) {
    WriteFileBytes(index, text);
    ExpectRejected(dir, absl::StatusCode::kInvalidArgument, {index});
  }
}

TEST(HfModelTest, RejectsMissingOrCorruptFiles) {
  std::string dir = NewDir("empty");
  ExpectRejected(dir, absl::StatusCode::kNotFound, {dir + "/config.json"});
  WriteConfig(dir, LlamaFamilyConfig("LlamaForCausalLM", false));
  ExpectRejected(dir, absl::StatusCode::kNotFound, {dir, "model.safetensors"});

  dir = LlamaDirWith("truncated", [](auto&) {});
  const std::string file = dir + "/model.safetensors";
  const std::string full = ReadFileBytes(file);
  for (size_t len : {size_t{0}, size_t{7}, size_t{8}, size_t{100}, full.size() / 2, full.size() - 1}) {
    WriteFileBytes(file, full.substr(0, len));
    ExpectRejected(dir, absl::StatusCode::kInvalidArgument, {file});
  }
  WriteFileBytes(file, full);
  WriteFileBytes(dir + "/config.json", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": \"16\"}");
  ExpectRejected(dir, absl::StatusCode::kInvalidArgument, {dir + "/config.json", "hidden_size"});
  WriteConfig(dir, {{"architectures", {"MixtralForCausalLM"}}});
  ExpectRejected(dir, absl::StatusCode::kUnimplemented, {dir + "/config.json", "MixtralForCausalLM"});
}

}  // namespace
}  // namespace llmserve
