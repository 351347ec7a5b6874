// LongRoPE (Phi-3): the short and long frequencies against HF's formula in double, which
// rows of a RopeTable take the long ones (position p when p + 1 > original context), and
// the attention factor on cos and sin.
#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "model/model_config.h"
#include "model/ops/kernels.h"

namespace llmserve {
namespace {

ModelConfig LongRopeConfig() {
  ModelConfig c;
  c.head_dim = 8;
  c.rope_dim = 6;  // partial rotary: 3 pairs
  c.rope_theta = 10000.0f;
  c.rope_scaling.kind = RopeScalingKind::kLongRope;
  c.rope_scaling.short_factor = {1.0f, 1.5f, 2.0f};
  c.rope_scaling.long_factor = {2.0f, 4.0f, 8.0f};
  c.rope_scaling.original_context = 16;
  c.rope_scaling.attention_factor = 1.25f;
  return c;
}

TEST(LongRopeTest, FrequenciesMatchHf) {
  const ModelConfig c = LongRopeConfig();
  const RopeFrequencies f = RopeFrequenciesFor(c);
  ASSERT_EQ(f.inv_freq.size(), 3u);
  ASSERT_EQ(f.long_inv_freq.size(), 3u);
  EXPECT_EQ(f.long_from, 16);
  EXPECT_EQ(f.mscale, 1.25f);
  for (int64_t i = 0; i < 3; ++i) {
    // HF: 1 / (ext_factor_i * base^(2i / dim)), dim = the rotated dims.
    const double base = std::pow(10000.0, 2.0 * i / 6.0);
    EXPECT_NEAR(f.inv_freq[i], 1.0 / (c.rope_scaling.short_factor[i] * base), 1e-6 / base) << i;
    EXPECT_NEAR(f.long_inv_freq[i], 1.0 / (c.rope_scaling.long_factor[i] * base), 1e-6 / base) << i;
  }
  EXPECT_EQ(RopeInvFreq(c), f.inv_freq);  // the plain entry point gives the short ones
}

TEST(LongRopeTest, TablePicksLongFactorsBeyondTheOriginalContextAndScales) {
  const RopeFrequencies f = RopeFrequenciesFor(LongRopeConfig());
  const std::vector<int32_t> positions = {0, 3, 15, 16, 40};
  std::vector<float> table(positions.size() * 6);
  RopeTable(positions.data(), static_cast<int64_t>(positions.size()), f, table.data());
  for (size_t r = 0; r < positions.size(); ++r) {
    const bool use_long = positions[r] + 1 > 16;
    const std::vector<float>& inv = use_long ? f.long_inv_freq : f.inv_freq;
    for (size_t i = 0; i < 3; ++i) {
      const float angle = static_cast<float>(positions[r]) * inv[i];
      EXPECT_EQ(table[r * 6 + i], cosf(angle) * 1.25f) << positions[r] << " " << i;
      EXPECT_EQ(table[r * 6 + 3 + i], sinf(angle) * 1.25f) << positions[r] << " " << i;
    }
  }
}

TEST(LongRopeTest, PlainModelsKeepTheirTableBits) {
  ModelConfig c = LongRopeConfig();
  c.rope_scaling = RopeScaling{};
  const RopeFrequencies f = RopeFrequenciesFor(c);
  EXPECT_TRUE(f.long_inv_freq.empty());
  EXPECT_EQ(f.mscale, 1.0f);
  const std::vector<int32_t> positions = {0, 7, 100};
  std::vector<float> a(positions.size() * 6), b(a.size());
  RopeTable(positions.data(), 3, f, a.data());
  RopeTable(positions.data(), 3, f.inv_freq, b.data());
  EXPECT_EQ(a, b);
}

TEST(LongRopeTest, ConfigValidation) {
  ModelConfig c = LongRopeConfig();
  c.vocab_size = 10;
  c.hidden_size = 16;
  c.num_layers = 1;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.ffn_dim = 8;
  c.context_length = 64;
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
  ModelConfig short_list = c;
  short_list.rope_scaling.long_factor.pop_back();
  EXPECT_FALSE(short_list.Validate().ok());
  ModelConfig no_orig = c;
  no_orig.rope_scaling.original_context = 0;
  EXPECT_FALSE(no_orig.Validate().ok());
  ModelConfig window = c;
  window.sliding_window = 8;
  window.sliding_layers = {true, false};  // 2 entries for 1 layer
  EXPECT_FALSE(window.Validate().ok());
  window.sliding_layers = {true};
  EXPECT_TRUE(window.Validate().ok()) << window.Validate();
  EXPECT_EQ(window.LayerWindow(0), 8);
}

}  // namespace
}  // namespace llmserve
