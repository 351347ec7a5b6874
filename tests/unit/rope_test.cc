// RoPE: inverse frequencies (plain, linear and Llama 3 scaling) against the formulas
// evaluated in double here, the rotation in both layouts against a double implementation
// of the equations, and the interleaved layout bit for bit against llama2.c's run.c loop.
#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "model/model_config.h"
#include "model/ops/kernels.h"
#include "model/runtime_config.h"

namespace llmserve {
namespace {

constexpr double kU = 1.0 / (1 << 24);  // float unit roundoff

// The rotation these tests run: the best this CPU has (Avx512EqualsScalarBitForBit pins
// the AVX-512 rotation to the scalar one).
const Isa kIsa = CpuFeatures::Detect().isa();

ModelConfig RopeConfig(int64_t head_dim, int64_t rope_dim, float theta) {
  ModelConfig c;
  c.head_dim = head_dim;
  c.rope_dim = rope_dim;
  c.rope_theta = theta;
  return c;
}

// theta^(-2i/d) in double.
double BaseInvFreq(double theta, int64_t i, int64_t d) { return std::pow(theta, -2.0 * i / d); }

// Relative error bound of the float inv_freq: the float exponent 2i/d is off by u
// relative, which scales theta^e by e·ln(theta)·u; powf and the reciprocal add 2u.
double InvFreqTol(double theta, int64_t i, int64_t d) { return (2.0 * i / d * std::log(theta) + 2.0) * kU; }

TEST(RopeInvFreqTest, NoScalingMatchesFormula) {
  for (auto [head_dim, rope_dim, theta] : {std::tuple{64, 64, 10000.0f}, {48, 48, 10000.0f}, {128, 128, 500000.0f},
                                           {96, 32, 1000000.0f}}) {
    const std::vector<float> inv = RopeInvFreq(RopeConfig(head_dim, rope_dim, theta));
    ASSERT_EQ(inv.size(), static_cast<size_t>(rope_dim / 2));
    for (int64_t i = 0; i < rope_dim / 2; ++i) {
      const double ref = BaseInvFreq(theta, i, rope_dim);
      EXPECT_NEAR(inv[i], ref, InvFreqTol(theta, i, rope_dim) * ref) << "d " << rope_dim << " i " << i;
    }
  }
  // rope_dim 0 means the whole head.
  EXPECT_EQ(RopeInvFreq(RopeConfig(64, 0, 10000.0f)).size(), 32u);
}

TEST(RopeInvFreqTest, LinearScalingDividesByFactor) {
  ModelConfig c = RopeConfig(64, 64, 10000.0f);
  c.rope_scaling.kind = RopeScalingKind::kLinear;
  c.rope_scaling.factor = 4.0f;
  const std::vector<float> inv = RopeInvFreq(c);
  for (int64_t i = 0; i < 32; ++i) {
    const double ref = BaseInvFreq(10000.0, i, 64) / 4.0;
    EXPECT_NEAR(inv[i], ref, (InvFreqTol(10000.0, i, 64) + kU) * ref) << i;
  }
}

TEST(RopeInvFreqTest, Llama3ScalingMatchesFormula) {
  // Llama 3.1's published rope_scaling: factor 8, low 1, high 4, original context 8192.
  ModelConfig c = RopeConfig(128, 128, 500000.0f);
  c.rope_scaling = {RopeScalingKind::kLlama3, 8.0f, 1.0f, 4.0f, 8192};
  const std::vector<float> inv = RopeInvFreq(c);
  ASSERT_EQ(inv.size(), 64u);
  const double factor = 8, low = 1, high = 4, orig = 8192;
  int kept = 0, divided = 0, smoothed = 0;
  for (int64_t i = 0; i < 64; ++i) {
    const double base = BaseInvFreq(500000.0, i, 128);
    const double wavelen = 2 * std::numbers::pi / base;
    double ref;
    double tol = InvFreqTol(500000.0, i, 128);
    if (wavelen < orig / high) {  // high frequency: unchanged
      ref = base;
      ++kept;
    } else if (wavelen > orig / low) {  // low frequency: divided by factor
      ref = base / factor;
      ++divided;
    } else {  // between: interpolate
      const double smooth = (orig / wavelen - low) / (high - low);
      ref = (1 - smooth) * base / factor + smooth * base;
      ++smoothed;
      // A relative error d in base moves smooth by at most high/(high-low)·d, which moves
      // the result by base(1 - 1/factor)·that: at most factor·high/(high-low) times d relative.
      tol *= 1 + factor * high / (high - low);
    }
    EXPECT_NEAR(inv[i], ref, (tol + 4 * kU) * ref) << "i " << i << " wavelen " << wavelen;
  }
  // All three regimes occur for these parameters.
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(smoothed, 0);
}

// llama2.c run.c's RoPE loop, transcribed literally (one vector, all heads).
void RunCRope(float* vec, int dim, int head_size, int pos) {
  for (int i = 0; i < dim; i += 2) {
    int head_dim = i % head_size;
    float freq = 1.0f / powf(10000.0f, head_dim / (float)head_size);
    float val = pos * freq;
    float fcr = cosf(val);
    float fci = sinf(val);
    float v0 = vec[i];
    float v1 = vec[i + 1];
    vec[i] = v0 * fcr - v1 * fci;
    vec[i + 1] = v0 * fci + v1 * fcr;
  }
}

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float& f : v) f = d(rng);
  return v;
}

TEST(ApplyRopeTest, InterleavedEqualsRunCBitForBit) {
  for (int head_size : {8, 48, 64}) {
    const int heads = 6, dim = heads * head_size;
    const std::vector<int32_t> positions = {0, 1, 2, 7, 255, 1000, 4095};
    std::vector<float> x = Random(positions.size() * dim, 7 + head_size);
    std::vector<float> expect = x;
    for (size_t r = 0; r < positions.size(); ++r) RunCRope(expect.data() + r * dim, dim, head_size, positions[r]);
    const std::vector<float> inv = RopeInvFreq(RopeConfig(head_size, head_size, 10000.0f));
    ApplyRope(kIsa, x.data(), positions.size(), dim, heads, head_size, head_size, positions.data(), inv,
              RopeLayout::kInterleaved);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], expect[i]) << "head_size " << head_size << " i " << i;
  }
}

// The rotation equations in double: pair (a, b) of frequency i turns by pos·theta^(-2i/d).
void RopeRef(std::vector<double>& v, int64_t heads, int64_t head_dim, int64_t rope_dim, double theta, int pos,
             RopeLayout layout) {
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < rope_dim / 2; ++i) {
      const double angle = pos * BaseInvFreq(theta, i, rope_dim);
      const int64_t a = h * head_dim + (layout == RopeLayout::kInterleaved ? 2 * i : i);
      const int64_t b = h * head_dim + (layout == RopeLayout::kInterleaved ? 2 * i + 1 : i + rope_dim / 2);
      const double v0 = v[a], v1 = v[b];
      v[a] = v0 * std::cos(angle) - v1 * std::sin(angle);
      v[b] = v0 * std::sin(angle) + v1 * std::cos(angle);
    }
  }
}

TEST(ApplyRopeTest, BothLayoutsMatchEquations) {
  const double theta = 10000.0;
  const int64_t heads = 3, head_dim = 48, pad = 5, stride = heads * head_dim + pad;
  for (int64_t rope_dim : {48, 32}) {  // full and partial rotary
    for (RopeLayout layout : {RopeLayout::kInterleaved, RopeLayout::kHalf}) {
      const std::vector<int32_t> positions = {0, 3, 100, 1000};
      const int64_t rows = positions.size();
      const std::vector<float> orig = Random(rows * stride, 99);
      std::vector<float> x = orig;
      const std::vector<float> inv = RopeInvFreq(RopeConfig(head_dim, rope_dim, float(theta)));
      ApplyRope(kIsa, x.data(), rows, stride, heads, head_dim, rope_dim, positions.data(), inv, layout);
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<double> ref(orig.begin() + r * stride, orig.begin() + r * stride + heads * head_dim);
        RopeRef(ref, heads, head_dim, rope_dim, theta, positions[r], layout);
        for (int64_t h = 0; h < heads; ++h) {
          for (int64_t j = 0; j < head_dim; ++j) {
            const int64_t k = h * head_dim + j;
            const float got = x[r * stride + k];
            if (j >= rope_dim) {  // beyond the rotary dims: untouched
              ASSERT_EQ(got, orig[r * stride + k]);
              continue;
            }
            // The float angle pos·inv_freq is off by |angle|·(inv_freq's error + u); cosf,
            // sinf and the 2-term rotation add ~4u times the pair's magnitude (<= 2·sqrt2).
            const int64_t i = layout == RopeLayout::kInterleaved ? j / 2 : j % (rope_dim / 2);
            const double angle = positions[r] * BaseInvFreq(theta, i, rope_dim);
            const double angle_err = angle * (InvFreqTol(theta, i, rope_dim) + kU);
            ASSERT_NEAR(got, ref[k], 3.0 * (angle_err + 4 * kU))
                << "rope_dim " << rope_dim << " layout " << int(layout) << " row " << r << " dim " << k;
          }
        }
        for (int64_t p = heads * head_dim; p < stride; ++p) ASSERT_EQ(x[r * stride + p], orig[r * stride + p]);
      }
    }
  }
}

TEST(ApplyRopeTest, ManyRowsEqualRowByRow) {
  // 40 rows take the OpenMP path; each row must get its own position.
  const int64_t heads = 4, head_dim = 64, rows = 40, dim = heads * head_dim;
  std::vector<int32_t> positions(rows);
  for (int64_t r = 0; r < rows; ++r) positions[r] = static_cast<int32_t>((r * 37) % 500);
  const std::vector<float> inv = RopeInvFreq(RopeConfig(head_dim, head_dim, 10000.0f));
  for (RopeLayout layout : {RopeLayout::kInterleaved, RopeLayout::kHalf}) {
    std::vector<float> all = Random(rows * dim, 5), one = all;
    ApplyRope(kIsa, all.data(), rows, dim, heads, head_dim, head_dim, positions.data(), inv, layout);
    for (int64_t r = 0; r < rows; ++r) {
      ApplyRope(kIsa, one.data() + r * dim, 1, dim, heads, head_dim, head_dim, &positions[r], inv, layout);
    }
    EXPECT_EQ(all, one);
    // A rotation preserves each pair's length.
    const std::vector<float> orig = Random(rows * dim, 5);
    for (int64_t i = 0; i < rows * dim; i += head_dim) {
      const int64_t b = layout == RopeLayout::kInterleaved ? 1 : head_dim / 2;
      const double before = std::hypot(orig[i], orig[i + b]), after = std::hypot(all[i], all[i + b]);
      EXPECT_NEAR(after, before, 8 * kU * before);
    }
  }
}

// The AVX-512 rotation gives the scalar loop's bits in both layouts, for partial rotary
// dims and pair counts that leave vector tails (rope_dim 20 of 48: 10 pairs; 64 of 80).
TEST(ApplyRopeTest, Avx512EqualsScalarBitForBit) {
  if (!CpuHasAvx512()) GTEST_SKIP() << "no AVX-512: only the scalar rotation runs here";
  const int64_t heads = 5, rows = 3;
  const std::vector<int32_t> positions = {0, 77, 1999};
  for (auto [head_dim, rope_dim] : {std::pair<int64_t, int64_t>{48, 20}, {80, 64}, {64, 64}, {8, 8}}) {
    const int64_t dim = heads * head_dim;
    const std::vector<float> inv = RopeInvFreq(RopeConfig(head_dim, rope_dim, 10000.0f));
    for (RopeLayout layout : {RopeLayout::kInterleaved, RopeLayout::kHalf}) {
      std::vector<float> vec = Random(rows * dim, 9), scalar = vec;
      ApplyRope(Isa::kAvx512, vec.data(), rows, dim, heads, head_dim, rope_dim, positions.data(), inv, layout);
      ApplyRope(Isa::kScalar, scalar.data(), rows, dim, heads, head_dim, rope_dim, positions.data(), inv, layout);
      ASSERT_EQ(vec, scalar) << "head_dim " << head_dim << " rope_dim " << rope_dim << " layout "
                             << static_cast<int>(layout);
    }
  }
}

}  // namespace
}  // namespace llmserve
