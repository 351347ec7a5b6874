// LoadGgufModel on llama.cpp's qwen2, qwen3 and phi3 layouts (synthetic tiny files):
// the config each gives (NEOX RoPE, biases, q/k norm, LongRoPE, partial rotary, sliding
// window), and fused tensors split into the canonical row ranges.
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/formats/gguf_model.h"
#include "tests/util/gguf_tiny_models.h"
#include "tests/util/gguf_writer.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

using ::llmserve::testing::GgufWriter;
using ::llmserve::testing::TinyValue;
using ::llmserve::testing::TinyValues;

std::string WriteFile(const GgufWriter& w, const std::string& name) {
  return ::llmserve::testing::WriteGgufToScratch(w, "gguf_arch", name);
}

float Element(const TensorView& t, int64_t k) {
  float out;
  ConvertToF32(t.dtype, t.data + k * DTypeSize(t.dtype), 1, &out);
  return out;
}

// dim 16, 4 heads / 2 KV heads of head_dim 8 (q 32 != dim: Qwen3-style), ffn 24, 2 layers.
constexpr int64_t kDim = 16, kHeads = 4, kKvHeads = 2, kHeadDim = 8, kFfn = 24, kLayers = 2, kVocab = 10;

struct Options {
  std::string arch;
  bool fused_qkv = false;     // blk.N.attn_qkv (phi3)
  bool fused_gate_up = false; // blk.N.ffn_up holding gate | up (phi3)
  bool biases = false;        // q/k/v biases (qwen2)
  bool qk_norm = false;       // attn_q_norm / attn_k_norm (qwen3)
  bool longrope = false;      // rope_factors_long/short.weight (phi3)
  int64_t rope_dim = kHeadDim;
  int64_t factor_pairs = -1;  // longrope factors per tensor (-1: rope_dim / 2)
  uint32_t sliding_window = 0;
};

GgufWriter Writer(const Options& o) {
  GgufWriter w;
  const std::string a = o.arch + ".";
  w.String("general.architecture", o.arch);
  w.U32(a + "context_length", 128);
  w.U32(a + "embedding_length", kDim);
  w.U32(a + "block_count", kLayers);
  w.U32(a + "feed_forward_length", kFfn);
  w.U32(a + "attention.head_count", kHeads);
  w.U32(a + "attention.head_count_kv", kKvHeads);
  w.U32(a + "attention.key_length", kHeadDim);
  w.U32(a + "attention.value_length", kHeadDim);
  w.F32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
  w.F32(a + "rope.freq_base", 1000000.0f);
  w.U32(a + "rope.dimension_count", static_cast<uint32_t>(o.rope_dim));
  w.U32(a + "vocab_size", kVocab);
  if (o.sliding_window > 0) w.U32(a + "attention.sliding_window", o.sliding_window);
  if (o.longrope) {
    w.U32(a + "rope.scaling.original_context_length", 32);
    w.F32(a + "rope.scaling.attn_factor", 1.25f);
    const int64_t pairs = o.factor_pairs >= 0 ? o.factor_pairs : o.rope_dim / 2;
    std::vector<float> lng, shrt;
    for (int64_t i = 0; i < pairs; ++i) {
      shrt.push_back(1.0f + 0.25f * static_cast<float>(i));
      lng.push_back(2.0f * static_cast<float>(i + 1));
    }
    w.FloatTensor("rope_factors_long.weight", DType::kF32, {static_cast<uint64_t>(pairs)}, lng);
    w.FloatTensor("rope_factors_short.weight", DType::kF32, {static_cast<uint64_t>(pairs)}, shrt);
  }
  auto add = [&](const std::string& name, std::vector<uint64_t> dims) {
    int64_t n = 1;
    for (uint64_t d : dims) n *= static_cast<int64_t>(d);
    w.FloatTensor(name, DType::kF32, std::move(dims), TinyValues(name, n));
  };
  const uint64_t d = kDim, q = kHeads * kHeadDim, kv = kKvHeads * kHeadDim, f = kFfn;
  add("token_embd.weight", {d, kVocab});
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", {d});
    if (o.fused_qkv) {
      add(p + "attn_qkv.weight", {d, q + 2 * kv});
    } else {
      add(p + "attn_q.weight", {d, q});
      add(p + "attn_k.weight", {d, kv});
      add(p + "attn_v.weight", {d, kv});
    }
    if (o.biases) {
      add(p + "attn_q.bias", {q});
      add(p + "attn_k.bias", {kv});
      add(p + "attn_v.bias", {kv});
    }
    if (o.qk_norm) {
      add(p + "attn_q_norm.weight", {kHeadDim});
      add(p + "attn_k_norm.weight", {kHeadDim});
    }
    add(p + "attn_output.weight", {q, d});
    add(p + "ffn_norm.weight", {d});
    if (o.fused_gate_up) {
      add(p + "ffn_up.weight", {d, 2 * f});
    } else {
      add(p + "ffn_gate.weight", {d, f});
      add(p + "ffn_up.weight", {d, f});
    }
    add(p + "ffn_down.weight", {f, d});
  }
  add("output_norm.weight", {d});
  return w;
}

TEST(GgufArchTest, Qwen2IsNeoxRopeWithBiases) {
  Options o;
  o.arch = "qwen2";
  o.biases = true;
  auto w = LoadGgufModel(WriteFile(Writer(o), "qwen2.gguf"));
  ASSERT_TRUE(w.ok()) << w.status();
  const ModelConfig& c = (*w)->config;
  EXPECT_EQ(c.arch, Architecture::kQwen2);
  EXPECT_EQ(c.rope_layout, RopeLayout::kHalf);  // unpermuted rows, NEOX rotation
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
}

TEST(GgufArchTest, Qwen3HasQkNormAndItsOwnHeadDim) {
  Options o;
  o.arch = "qwen3";
  o.qk_norm = true;
  auto w = LoadGgufModel(WriteFile(Writer(o), "qwen3.gguf"));
  ASSERT_TRUE(w.ok()) << w.status();
  const ModelConfig& c = (*w)->config;
  EXPECT_EQ(c.arch, Architecture::kQwen3);
  EXPECT_EQ(c.head_dim, kHeadDim);  // key_length, not dim / heads (4)
  EXPECT_EQ(c.rope_layout, RopeLayout::kHalf);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.qkv_bias);
  const TensorView* qn = (*w)->Find("blk.1.attn_q_norm.weight");
  ASSERT_NE(qn, nullptr);
  EXPECT_EQ(qn->shape, (std::vector<int64_t>{kHeadDim}));

  // Without its q/k norm tensors a qwen3 file is incomplete.
  Options missing = o;
  missing.qk_norm = false;
  const std::string path = WriteFile(Writer(missing), "qwen3_nonorm.gguf");
  auto m = LoadGgufModel(path);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("attn_q_norm"), std::string::npos) << m.status();
}

TEST(GgufArchTest, Phi3FusedTensorsLongRopePartialRotaryAndWindow) {
  Options o;
  o.arch = "phi3";
  o.fused_qkv = o.fused_gate_up = o.longrope = true;
  o.rope_dim = 6;  // partial rotary: 3 pairs of 8 dims
  o.sliding_window = 20;
  auto w = LoadGgufModel(WriteFile(Writer(o), "phi3.gguf"));
  ASSERT_TRUE(w.ok()) << w.status();
  const ModelConfig& c = (*w)->config;
  EXPECT_EQ(c.arch, Architecture::kPhi3);
  EXPECT_EQ(c.rope_layout, RopeLayout::kHalf);
  EXPECT_EQ(c.rope_dim, 6);
  EXPECT_EQ(c.context_length, 128);  // the full context, not the window
  EXPECT_EQ(c.sliding_window, 20);
  EXPECT_TRUE(c.sliding_layers.empty());
  EXPECT_EQ(c.LayerWindow(0), 20);
  EXPECT_EQ(c.LayerWindow(1), 20);
  const RopeScaling& rs = c.rope_scaling;
  EXPECT_EQ(rs.kind, RopeScalingKind::kLongRope);
  EXPECT_EQ(rs.original_context, 32);
  EXPECT_FLOAT_EQ(rs.attention_factor, 1.25f);
  EXPECT_EQ(rs.short_factor, (std::vector<float>{1.0f, 1.25f, 1.5f}));
  EXPECT_EQ(rs.long_factor, (std::vector<float>{2.0f, 4.0f, 6.0f}));
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();

  // attn_qkv [q + 2 kv, dim] is viewed as q | k | v rows; ffn_up [2 ffn, dim] as gate | up.
  const int64_t q = kHeads * kHeadDim, kv = kKvHeads * kHeadDim;
  struct Part {
    const char* name;
    const char* fused;
    int64_t rows, first_row;
  };
  for (const Part& part : {Part{"blk.1.attn_q.weight", "blk.1.attn_qkv.weight", q, 0},
                           Part{"blk.1.attn_k.weight", "blk.1.attn_qkv.weight", kv, q},
                           Part{"blk.1.attn_v.weight", "blk.1.attn_qkv.weight", kv, q + kv},
                           Part{"blk.0.ffn_gate.weight", "blk.0.ffn_up.weight", kFfn, 0},
                           Part{"blk.0.ffn_up.weight", "blk.0.ffn_up.weight", kFfn, kFfn}}) {
    SCOPED_TRACE(part.name);
    const TensorView* t = (*w)->Find(part.name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->shape, (std::vector<int64_t>{part.rows, kDim}));
    for (int64_t e : {int64_t{0}, int64_t{5}, part.rows * kDim - 1}) {
      EXPECT_EQ(Element(*t, e), TinyValue(part.fused, part.first_row * kDim + e)) << e;
    }
  }
}

TEST(GgufArchTest, Phi3LongRopeFactorsMustMatchTheRotaryDims) {
  Options o;
  o.arch = "phi3";
  o.fused_qkv = o.fused_gate_up = o.longrope = true;
  o.rope_dim = 6;
  o.factor_pairs = 4;  // not rope_dim / 2
  const std::string path = WriteFile(Writer(o), "phi3_badfactors.gguf");
  auto r = LoadGgufModel(path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("rope_factors_long.weight must be F32 of shape [3]"), std::string::npos)
      << r.status();
}

TEST(GgufArchTest, UnknownArchitectureNamesTheSupportedOnes) {
  Options o;
  o.arch = "gemma2";
  const std::string path = WriteFile(Writer(o), "gemma2.gguf");
  auto r = LoadGgufModel(path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("'gemma2' is not supported"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("qwen3"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("phi3"), std::string::npos) << r.status();
}

TEST(GgufArchTest, SlidingWindowPatternIsUnimplemented) {
  Options o;
  o.arch = "qwen2";
  o.sliding_window = 16;
  GgufWriter w = Writer(o);
  w.U32("qwen2.attention.sliding_window_pattern", 2);
  auto r = LoadGgufModel(WriteFile(w, "pattern.gguf"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented) << r.status();
}

TEST(GgufArchTest, WindowCoveringTheContextIsNoWindow) {
  Options o;
  o.arch = "phi3";
  o.fused_qkv = o.fused_gate_up = true;
  o.sliding_window = 128;  // == context
  auto w = LoadGgufModel(WriteFile(Writer(o), "phi3_wide.gguf"));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ((*w)->config.sliding_window, 0);
  EXPECT_EQ((*w)->config.rope_scaling.kind, RopeScalingKind::kNone);
}

}  // namespace
}  // namespace llmserve
