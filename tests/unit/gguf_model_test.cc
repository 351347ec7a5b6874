// LoadGgufModel: synthetic tiny llama / gpt2 files and the shared llama-2-tiny-random.gguf.
#include "model/formats/gguf_model.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/gguf_tiny_models.h"
#include "tests/util/gguf_writer.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

using ::llmserve::testing::GgufWriter;
using ::llmserve::testing::TinyGpt2;
using ::llmserve::testing::TinyGpt2Writer;
using ::llmserve::testing::TinyLlama;
using ::llmserve::testing::TinyLlamaOptions;
using ::llmserve::testing::TinyLlamaWriter;
using ::llmserve::testing::TinyValue;

std::string WriteFile(const GgufWriter& w, const std::string& name) {
  return ::llmserve::testing::WriteGgufToScratch(w, "gguf_model", name);
}

// Element `k` (row-major) of a loaded tensor, as float.
float Element(const TensorView& t, int64_t k) {
  float out;
  ConvertToF32(t.dtype, t.data + k * DTypeSize(t.dtype), 1, &out);
  return out;
}

TEST(GgufModelTest, TinyLlamaConfigAndTensors) {
  for (uint32_t version : {2u, 3u}) {
    SCOPED_TRACE(version);
    TinyLlamaOptions o;
    o.version = version;
    const std::string path = WriteFile(TinyLlamaWriter(o), "llama_v" + std::to_string(version) + ".gguf");
    auto w = LoadGgufModel(path);
    ASSERT_TRUE(w.ok()) << w.status();
    const ModelConfig& c = (*w)->config;
    EXPECT_EQ(c.format, "gguf");
    EXPECT_EQ(c.name, "tiny-llama");
    EXPECT_EQ(c.arch, Architecture::kLlama);
    EXPECT_EQ(c.vocab_size, TinyLlama::kVocab);  // from tokenizer.ggml.tokens
    EXPECT_EQ(c.hidden_size, 16);
    EXPECT_EQ(c.num_layers, 2);
    EXPECT_EQ(c.num_heads, 4);
    EXPECT_EQ(c.num_kv_heads, 2);
    EXPECT_EQ(c.head_dim, 4);
    EXPECT_EQ(c.ffn_dim, 32);
    EXPECT_EQ(c.context_length, 64);
    EXPECT_EQ(c.norm, NormKind::kRmsNorm);
    EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
    EXPECT_EQ(c.position, PositionKind::kRope);
    EXPECT_EQ(c.rope_layout, RopeLayout::kInterleaved);
    EXPECT_EQ(c.rope_theta, 500000.0f);
    EXPECT_EQ(c.rope_dim, 4);  // default: head_dim
    EXPECT_EQ(c.rope_scaling.kind, RopeScalingKind::kNone);
    EXPECT_EQ(c.activation, Activation::kSilu);
    EXPECT_FALSE(c.qkv_bias);
    EXPECT_FALSE(c.tied_embeddings);
    EXPECT_EQ(c.bos_id, 1);
    EXPECT_EQ(c.eos_id, 2);

    const TensorView* embd = (*w)->Find("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    EXPECT_EQ(embd->dtype, DType::kF16);
    EXPECT_EQ(embd->shape, (std::vector<int64_t>{12, 16}));
    // Row 3, column 5 is element 3*16+5 of what the writer stored.
    EXPECT_EQ(Element(*embd, 3 * 16 + 5), TinyValue("token_embd.weight", 3 * 16 + 5));
    EXPECT_EQ(Element(*embd, 191), TinyValue("token_embd.weight", 191));

    const TensorView* k = (*w)->Find("blk.1.attn_k.weight");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->dtype, DType::kBF16);
    EXPECT_EQ(k->shape, (std::vector<int64_t>{8, 16}));  // [kv_heads*head_dim, dim]
    for (int64_t e : {0, 17, 127}) EXPECT_EQ(Element(*k, e), TinyValue("blk.1.attn_k.weight", e)) << e;

    const TensorView* q = (*w)->Find("blk.0.attn_q.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->dtype, DType::kF32);
    EXPECT_EQ(Element(*q, 255), TinyValue("blk.0.attn_q.weight", 255));

    const TensorView* down = (*w)->Find("blk.1.ffn_down.weight");
    ASSERT_NE(down, nullptr);
    EXPECT_EQ(down->shape, (std::vector<int64_t>{16, 32}));  // [dim, ffn]
    EXPECT_EQ(Element(*down, 16 * 32 - 1), TinyValue("blk.1.ffn_down.weight", 16 * 32 - 1));

    const TensorView* out = (*w)->Find("output.weight");
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(out->dtype, DType::kBF16);
    EXPECT_EQ(Element(*out, 100), TinyValue("output.weight", 100));
  }
}

TEST(GgufModelTest, TiedEmbeddingsWhenOutputAbsent) {
  TinyLlamaOptions o;
  o.tied = true;
  auto w = LoadGgufModel(WriteFile(TinyLlamaWriter(o), "tied.gguf"));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE((*w)->config.tied_embeddings);
  EXPECT_EQ((*w)->Find("output.weight"), nullptr);
}

TEST(GgufModelTest, EndOfTurnAndMessageIdsEndGeneration) {
  GgufWriter w = TinyLlamaWriter();
  w.U32("tokenizer.ggml.eot_token_id", 10);
  w.U32("tokenizer.ggml.eom_token_id", 2);  // the same as EOS: listed once
  auto m = LoadGgufModel(WriteFile(w, "eot.gguf"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->config.eos_id, 2);
  EXPECT_EQ((*m)->config.eos_ids, (std::vector<int32_t>{2, 10}));

  GgufWriter bad = TinyLlamaWriter();
  bad.U32("tokenizer.ggml.eot_token_id", 12);  // the vocabulary has 12 tokens
  const absl::Status s = LoadGgufModel(WriteFile(bad, "eot_bad.gguf")).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("eot_token_id"), std::string::npos) << s;
}

TEST(GgufModelTest, VocabSizeFallsBackToEmbeddingRows) {
  TinyLlamaOptions o;
  o.tokenizer = false;
  auto w = LoadGgufModel(WriteFile(TinyLlamaWriter(o), "notok.gguf"));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ((*w)->config.vocab_size, 12);
  EXPECT_EQ((*w)->config.bos_id, -1);
}

TEST(GgufModelTest, TinyGpt2) {
  auto w = LoadGgufModel(WriteFile(TinyGpt2Writer(), "gpt2.gguf"));
  ASSERT_TRUE(w.ok()) << w.status();
  const ModelConfig& c = (*w)->config;
  EXPECT_EQ(c.arch, Architecture::kGpt2);
  EXPECT_EQ(c.name, "tiny-gpt2");
  EXPECT_EQ(c.vocab_size, TinyGpt2::kVocab);
  EXPECT_EQ(c.hidden_size, 8);
  EXPECT_EQ(c.num_heads, 2);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.ffn_dim, 32);
  EXPECT_EQ(c.context_length, 16);
  EXPECT_EQ(c.norm, NormKind::kLayerNorm);
  EXPECT_EQ(c.position, PositionKind::kLearned);
  EXPECT_EQ(c.activation, Activation::kGeluTanh);
  EXPECT_TRUE(c.qkv_bias && c.out_bias && c.mlp_bias && c.norm_bias);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(c.bos_id, 8);
  const TensorView* qkv = (*w)->Find("blk.0.attn_qkv.weight");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->shape, (std::vector<int64_t>{24, 8}));
  EXPECT_EQ(Element(*qkv, 24 * 8 - 1), TinyValue("blk.0.attn_qkv.weight", 24 * 8 - 1));
  const TensorView* pos = (*w)->Find("position_embd.weight");
  ASSERT_NE(pos, nullptr);
  EXPECT_EQ(pos->shape, (std::vector<int64_t>{16, 8}));
  EXPECT_EQ(Element(*pos, 77), TinyValue("position_embd.weight", 77));
}

TEST(GgufModelTest, QuantizedTensorsLoad) {
  TinyLlamaOptions o;
  o.ffn_down_type = 8;
  const std::string path = WriteFile(TinyLlamaWriter(o), "q8.gguf");
  auto w = LoadGgufModel(path);
  ASSERT_TRUE(w.ok()) << w.status();
  const TensorView* t = (*w)->Find("blk.0.ffn_down.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->quant, QuantType::kQ8_0);
}

TEST(GgufModelTest, NeededTensorOfAnUnsupportedTypeIsUnimplemented) {
  for (uint32_t type : {20u, 39u}) {  // IQ4_NL, MXFP4
    SCOPED_TRACE(type);
    TinyLlamaOptions o;
    o.ffn_down_type = type;
    const std::string path = WriteFile(TinyLlamaWriter(o), "iq.gguf");
    auto w = LoadGgufModel(path);
    EXPECT_EQ(w.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_EQ(w.status().message().rfind(path + ": tensor blk.0.ffn_down.weight has type " + GgmlTypeName(type), 0), 0u)
        << w.status();
  }
}

TEST(GgufModelTest, UnsupportedArchitecture) {
  GgufWriter w;
  w.String("general.architecture", "falcon");
  const std::string path = WriteFile(w, "falcon.gguf");
  auto r = LoadGgufModel(path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("falcon"), std::string::npos);
  EXPECT_NE(r.status().message().find(path), std::string::npos);
}

TEST(GgufModelTest, MissingKeyOrTensorIsInvalid) {
  GgufWriter no_arch;
  no_arch.U32("llama.block_count", 1);
  const std::string no_arch_path = WriteFile(no_arch, "noarch.gguf");
  auto a = LoadGgufModel(no_arch_path);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find("general.architecture"), std::string::npos);
  EXPECT_NE(a.status().message().find(no_arch_path), std::string::npos);

  TinyLlamaOptions o;
  o.omit_tensor = "blk.1.ffn_gate.weight";
  const std::string path = WriteFile(TinyLlamaWriter(o), "missing.gguf");
  auto m = LoadGgufModel(path);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("blk.1.ffn_gate.weight"), std::string::npos);
  EXPECT_NE(m.status().message().find(path), std::string::npos);

  // GQA that does not divide: caught by ModelConfig::Validate, reported with the file name.
  GgufWriter bad_kv;
  bad_kv.String("general.architecture", "llama");
  bad_kv.U32("llama.context_length", 64);
  bad_kv.U32("llama.embedding_length", 16);
  bad_kv.U32("llama.block_count", 1);
  bad_kv.U32("llama.feed_forward_length", 32);
  bad_kv.U32("llama.attention.head_count", 4);
  bad_kv.U32("llama.attention.head_count_kv", 3);
  bad_kv.F32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  bad_kv.U32("llama.vocab_size", 12);
  const std::string kv_path = WriteFile(bad_kv, "badkv.gguf");
  auto k = LoadGgufModel(kv_path);
  EXPECT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(k.status().message().find(kv_path), std::string::npos);
  EXPECT_NE(k.status().message().find("num_kv_heads"), std::string::npos);
}

TEST(GgufModelTest, LinearRopeScaling) {
  GgufWriter w = TinyLlamaWriter();
  w.String("llama.rope.scaling.type", "linear");
  w.F32("llama.rope.scaling.factor", 4.0f);
  auto m = LoadGgufModel(WriteFile(w, "linear.gguf"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m.value()->config.rope_scaling.kind, RopeScalingKind::kLinear);
  EXPECT_EQ(m.value()->config.rope_scaling.factor, 4.0f);

  GgufWriter y = TinyLlamaWriter();
  y.String("llama.rope.scaling.type", "yarn");
  EXPECT_EQ(LoadGgufModel(WriteFile(y, "yarn.gguf")).status().code(), absl::StatusCode::kUnimplemented);
}

// Llama 3.1-style factors per rotated pair (HF's _compute_llama3_parameters).
std::vector<float> Llama3Factors(int64_t rope_dim, double theta, double factor, double orig) {
  std::vector<float> f;
  for (int64_t i = 0; i < rope_dim / 2; ++i) {
    const double wavelen = 2 * std::numbers::pi * std::pow(theta, 2.0 * i / rope_dim);
    if (wavelen < orig / 4) {
      f.push_back(1.0f);
    } else if (wavelen > orig / 1) {
      f.push_back(static_cast<float>(factor));
    } else {
      const double smooth = (orig / wavelen - 1) / (4 - 1);
      f.push_back(static_cast<float>(1 / ((1 - smooth) / factor + smooth)));
    }
  }
  return f;
}

TEST(GgufModelTest, Llama3RopeFreqsTensor) {
  // rope_dim 64 spans the three regimes of the formula with theta 500000 and context 8192.
  const auto factors = Llama3Factors(64, 500000.0, 8.0, 8192.0);
  ASSERT_GT(factors.front(), 0.99f);
  ASSERT_EQ(factors.back(), 8.0f);
  // All-ones factors (the tiny model rotates 4 dims) mean no scaling.
  GgufWriter tiny_dim = TinyLlamaWriter();
  tiny_dim.FloatTensor("rope_freqs.weight", DType::kF32, {2}, {1.0f, 1.0f});
  auto ones = LoadGgufModel(WriteFile(tiny_dim, "ones.gguf"));
  ASSERT_TRUE(ones.ok()) << ones.status();
  EXPECT_EQ(ones.value()->config.rope_scaling.kind, RopeScalingKind::kNone);

  // A real-sized head (key_length 64) for the config alone: tensors would not match it.
  GgufWriter big = TinyLlamaWriter();
  big.U32("llama.attention.key_length", 64);
  big.FloatTensor("rope_freqs.weight", DType::kF32, {32}, factors);
  const auto big_bytes = big.Build().bytes;  // must outlive the parsed file
  auto g = GgufFile::ParseBytes(big_bytes, "big.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  auto cfg = GgufModelConfig(**g);
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->head_dim, 64);
  EXPECT_EQ(cfg->rope_dim, 64);
  EXPECT_EQ(cfg->rope_scaling.kind, RopeScalingKind::kLlama3);
  EXPECT_EQ(cfg->rope_scaling.factor, 8.0f);
  EXPECT_EQ(cfg->rope_scaling.low_freq_factor, 1.0f);
  EXPECT_EQ(cfg->rope_scaling.high_freq_factor, 4.0f);
  EXPECT_EQ(cfg->rope_scaling.original_context, 8192);

  auto odd = factors;
  odd[20] *= 1.5f;
  GgufWriter bad = TinyLlamaWriter();
  bad.U32("llama.attention.key_length", 64);
  bad.FloatTensor("rope_freqs.weight", DType::kF32, {32}, odd);
  const auto bad_bytes = bad.Build().bytes;
  auto gb = GgufFile::ParseBytes(bad_bytes, "bad.gguf");
  ASSERT_TRUE(gb.ok());
  EXPECT_EQ(GgufModelConfig(**gb).status().code(), absl::StatusCode::kUnimplemented);
}

TEST(GgufModelTest, SharedTinyRandomLlama) {
  LLMSERVE_REQUIRE_ASSET(path, "models/gguf/llama-2-tiny-random.gguf");
  auto w = LoadGgufModel(path);
  ASSERT_TRUE(w.ok()) << w.status();
  const ModelConfig& c = (*w)->config;
  // Values read from the file's header with an independent Python struct dump.
  EXPECT_EQ(c.arch, Architecture::kLlama);
  EXPECT_EQ(c.name, "LLaMA v2");
  EXPECT_EQ(c.hidden_size, 8);
  EXPECT_EQ(c.num_layers, 1);
  EXPECT_EQ(c.num_heads, 2);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.rope_dim, 4);
  EXPECT_EQ(c.ffn_dim, 32);
  EXPECT_EQ(c.vocab_size, 32000);
  EXPECT_EQ(c.context_length, 4096);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
  EXPECT_EQ(c.rope_theta, 10000.0f);
  EXPECT_EQ(c.bos_id, 1);
  EXPECT_EQ(c.eos_id, 2);
  EXPECT_FALSE(c.tied_embeddings);
  const TensorView* embd = (*w)->Find("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->dtype, DType::kF16);
  EXPECT_EQ(embd->shape, (std::vector<int64_t>{32000, 8}));
  EXPECT_EQ(Element(*embd, 0), 0.0f);  // <unk> row is zero
  EXPECT_EQ(Element(*embd, 8), 0.034088134765625f);
  EXPECT_EQ(Element(*embd, 9), 0.0158843994140625f);
  EXPECT_EQ(Element(*embd, 31999 * 8 + 1), -0.0377197265625f);
  const TensorView* q = (*w)->Find("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dtype, DType::kF16);
  EXPECT_EQ(Element(*q, 0), 0.024261474609375f);
  const TensorView* norm = (*w)->Find("blk.0.attn_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->dtype, DType::kF32);
  EXPECT_EQ(Element(*norm, 7), 1.0f);
  const TensorView* out = (*w)->Find("output.weight");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(Element(*out, 1), 0.03363037109375f);
}

}  // namespace
}  // namespace llmserve
