// Linear (oneDNN matmul over packed weights) against a naive double-precision loop:
// f32 and bf16 compute, f32/f16/bf16 source weights at unaligned addresses, odd shapes,
// with and without bias, many M values (primitive cache eviction), and bad inputs.
//
// Source weights are drawn from values exactly representable in their dtype (so the
// reference needs no conversion code of ours): k·2^-10 with |k| <= 1024 for f16/f32,
// k·2^-7 with |k| <= 128 for bf16, encoded to bytes by hand below.
#include "model/ops/linear.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "model/ops/dnn_context.h"
#include "model/ops/gemv.h"
#include "model/ops/linear_convert.h"
#include "model/ops/small_gemm.h"

namespace llmserve {
namespace {

constexpr double kU = 1.0 / (1 << 24);  // float unit roundoff

// Exact encodings of values with few significant bits (|v| in [2^-14, 65504] or 0).
uint16_t EncodeBf16(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  EXPECT_EQ(u & 0xffffu, 0u) << v << " is not a bf16 value";
  return static_cast<uint16_t>(u >> 16);
}

uint16_t EncodeF16(float v) {
  if (v == 0.0f) return 0;
  uint16_t sign = v < 0 ? 0x8000 : 0;
  int exp;
  const double m = std::frexp(std::fabs(double(v)), &exp);  // v = m·2^exp, m in [0.5, 1)
  const double mant = (m * 2 - 1) * 1024;                   // 10 fraction bits
  EXPECT_EQ(mant, std::floor(mant)) << v << " is not an f16 value";
  EXPECT_GE(exp - 1 + 15, 1) << v << " is subnormal in f16";
  return static_cast<uint16_t>(sign | ((exp - 1 + 15) << 10) | static_cast<uint16_t>(mant));
}

// bf16 rounding (nearest, ties to even) from first principles: keep 8 significant bits.
float RoundToBf16(float v) {
  if (v == 0.0f) return v;
  int exp;
  const double m = std::frexp(double(v), &exp);               // |m| in [0.5, 1)
  return static_cast<float>(std::ldexp(std::nearbyint(std::ldexp(m, 8)), exp - 8));  // FE_TONEAREST
}

struct Source {
  std::vector<float> values;      // [out, in] exact values
  std::vector<uint8_t> storage;   // encoded bytes at offset `offset` (unaligned on purpose)
  TensorView view;
};

Source MakeWeights(DType dtype, int64_t out, int64_t in, uint32_t seed, size_t offset = 1) {
  std::mt19937 rng(seed);
  const int range = dtype == DType::kBF16 ? 128 : 1024;
  const double step = dtype == DType::kBF16 ? 1.0 / 128 : 1.0 / 1024;
  std::uniform_int_distribution<int> d(-range, range);
  Source s;
  s.values.resize(out * in);
  for (float& v : s.values) {
    int k = d(rng);
    if (dtype == DType::kF16 && k != 0 && std::abs(k) < 16) k = 16;  // keep f16 normal (>= 2^-6)
    v = static_cast<float>(k * step);
  }
  const size_t esize = DTypeSize(dtype);
  s.storage.assign(offset + s.values.size() * esize, 0);
  for (size_t i = 0; i < s.values.size(); ++i) {
    uint8_t* p = s.storage.data() + offset + i * esize;
    if (dtype == DType::kF32) {
      std::memcpy(p, &s.values[i], 4);
    } else {
      const uint16_t h = dtype == DType::kBF16 ? EncodeBf16(s.values[i]) : EncodeF16(s.values[i]);
      std::memcpy(p, &h, 2);
    }
  }
  s.view.name = "test.weight";
  s.view.dtype = dtype;
  s.view.shape = {out, in};
  s.view.data = s.storage.data() + offset;
  s.view.nbytes = s.values.size() * esize;
  return s;
}

std::vector<float> RandomFloats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = d(rng);
  return v;
}

class LinearTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ctx = DnnContext::Create();
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    ctx_ = std::move(*ctx);
  }

  // Checks y against sum_k x[k]·w[n,k] + b[n] computed in double from `x_eff`/`w_eff`
  // (the values the matmul is meant to multiply). `rel` is the allowed error relative to
  // sum_k |x w| (+|b|).
  static void Check(const std::vector<float>& x_eff, const std::vector<float>& w_eff, const float* bias, int64_t m,
                    int64_t in, int64_t out, const std::vector<float>& y, double rel, const std::string& what) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t n = 0; n < out; ++n) {
        double acc = bias != nullptr ? bias[n] : 0.0, mag = bias != nullptr ? std::fabs(bias[n]) : 0.0;
        for (int64_t k = 0; k < in; ++k) {
          const double p = double(x_eff[i * in + k]) * w_eff[n * in + k];
          acc += p;
          mag += std::fabs(p);
        }
        ASSERT_NEAR(y[i * out + n], acc, rel * mag + 1e-30) << what << " row " << i << " col " << n;
      }
    }
  }

  std::unique_ptr<DnnContext> ctx_;
};

// f32 accumulation of `in` products and a bias: at most (in + 1)·u of sum |x w| + |b|
// (the worst-case bound of any summation order; oneDNN may block K).
double F32Tol(int64_t in) { return (in + 2) * kU; }

TEST_F(LinearTest, F32MatchesNaiveLoop) {
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{172, 64}, {3, 5}, {64, 128}, {1, 1}};
  for (DType src : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (auto [out, in] : shapes) {
      Source w = MakeWeights(src, out, in, 7 + out + in);
      const std::vector<float> bias = RandomFloats(out, 9);
      for (bool with_bias : {false, true}) {
        TensorView bias_view{"test.bias", DType::kF32, {out}, reinterpret_cast<const uint8_t*>(bias.data()),
                             bias.size() * 4};
        auto lin = Linear::Create(*ctx_, w.view, with_bias ? &bias_view : nullptr, DType::kF32);
        ASSERT_TRUE(lin.ok()) << lin.status();
        EXPECT_EQ((*lin)->in_features(), in);
        EXPECT_EQ((*lin)->out_features(), out);
        EXPECT_GE((*lin)->weight_bytes(), static_cast<size_t>(out * in * 4));
        for (int64_t m : {1, 2, 7, 64, 300}) {
          const std::vector<float> x = RandomFloats(m * in, 100 + m);
          std::vector<float> y(m * out, std::nanf(""));
          (*lin)->Forward(x.data(), m, y.data());
          Check(x, w.values, with_bias ? bias.data() : nullptr, m, in, out, y, F32Tol(in),
                std::string(DTypeName(src)) + " " + std::to_string(out) + "x" + std::to_string(in) +
                    (with_bias ? " bias" : "") + " M=" + std::to_string(m));
        }
      }
    }
  }
}

TEST_F(LinearTest, Bf16ComputeMatchesRoundedInputs) {
  const int64_t out = 172, in = 64;
  for (DType src : {DType::kF32, DType::kF16, DType::kBF16}) {
    // Weights with more significant bits than bf16 holds when the source is f32, so the
    // conversion's rounding is exercised.
    Source w = MakeWeights(src, out, in, 77);
    std::vector<float> w_exact = w.values;
    if (src == DType::kF32) {
      w_exact = RandomFloats(out * in, 78);
      std::memcpy(w.storage.data() + 1, w_exact.data(), w_exact.size() * 4);
    }
    const std::vector<float> bias = RandomFloats(out, 79);
    TensorView bias_view{"test.bias", DType::kF32, {out}, reinterpret_cast<const uint8_t*>(bias.data()),
                         bias.size() * 4};
    auto lin = Linear::Create(*ctx_, w.view, &bias_view, DType::kBF16);
    ASSERT_TRUE(lin.ok()) << lin.status();
    EXPECT_GE((*lin)->weight_bytes(), static_cast<size_t>(out * in * 2));
    EXPECT_LT((*lin)->weight_bytes(), static_cast<size_t>(out * in * 4));  // really 2-byte elements
    std::vector<float> w_bf16(w_exact.size());
    for (size_t i = 0; i < w_exact.size(); ++i) w_bf16[i] = RoundToBf16(w_exact[i]);
    for (int64_t m : {1, 2, 7, 64, 300}) {
      const std::vector<float> x = RandomFloats(m * in, 200 + m);
      std::vector<float> x_bf16(x.size());
      for (size_t i = 0; i < x.size(); ++i) x_bf16[i] = RoundToBf16(x[i]);
      std::vector<float> y(m * out);
      (*lin)->Forward(x.data(), m, y.data());
      // Against the bf16-rounded operands: only f32 accumulation error remains.
      Check(x_bf16, w_bf16, bias.data(), m, in, out, y, F32Tol(in), "bf16 vs rounded, M=" + std::to_string(m));
      // Against the exact operands: each product is off by at most 2·2^-9 relative.
      Check(x, w_exact, bias.data(), m, in, out, y, F32Tol(in) + 2.0 / 512 + 1.0 / (1 << 18),
            "bf16 vs exact, M=" + std::to_string(m));
    }
  }
}

TEST_F(LinearTest, ManyMValuesEvictAndRebuildPrimitives) {
  const int64_t out = 40, in = 24;
  Source w = MakeWeights(DType::kF32, out, in, 5, 0);
  const std::vector<float> bias = RandomFloats(out, 6);
  TensorView bias_view{"test.bias", DType::kF32, {out}, reinterpret_cast<const uint8_t*>(bias.data()), out * 4};
  for (DType compute : {DType::kF32, DType::kBF16}) {
    auto lin = Linear::Create(*ctx_, w.view, &bias_view, compute);
    ASSERT_TRUE(lin.ok()) << lin.status();
    // 1..150 then back down: more distinct M than the cache holds, so early entries are
    // evicted and must be rebuilt correctly.
    std::vector<int64_t> ms;
    for (int64_t m = 1; m <= 150; ++m) ms.push_back(m);
    for (int64_t m = 150; m >= 1; m -= 7) ms.push_back(m);
    for (int64_t m : ms) {
      const std::vector<float> x = RandomFloats(m * in, 300 + m);
      std::vector<float> y(m * out);
      (*lin)->Forward(x.data(), m, y.data());
      if (compute == DType::kF32) {
        Check(x, w.values, bias.data(), m, in, out, y, F32Tol(in), "M=" + std::to_string(m));
      } else {
        Check(x, w.values, bias.data(), m, in, out, y, F32Tol(in) + 2.0 / 512 + 1.0 / (1 << 18),
              "bf16 M=" + std::to_string(m));
      }
    }
  }
}

TEST_F(LinearTest, RowsAreIndependent) {
  // Row i of a batched call equals the same row computed alone (f32).
  const int64_t out = 172, in = 64, m = 33;
  Source w = MakeWeights(DType::kF32, out, in, 15);
  auto lin = Linear::Create(*ctx_, w.view, nullptr, DType::kF32);
  ASSERT_TRUE(lin.ok()) << lin.status();
  const std::vector<float> x = RandomFloats(m * in, 16);
  std::vector<float> y(m * out), y1(out);
  (*lin)->Forward(x.data(), m, y.data());
  for (int64_t i = 0; i < m; ++i) {
    (*lin)->Forward(x.data() + i * in, 1, y1.data());
    for (int64_t n = 0; n < out; ++n) {
      double mag = 0;
      for (int64_t k = 0; k < in; ++k) mag += std::fabs(double(x[i * in + k]) * w.values[n * in + k]);
      // Each is within F32Tol of the exact value.
      EXPECT_NEAR(y[i * out + n], y1[n], 2 * F32Tol(in) * mag + 1e-30) << i << "," << n;
    }
  }
}

TEST_F(LinearTest, GemvPathMatchesOneDnnPath) {
  // M <= kGemvMaxRows runs the GEMV over oneDNN's packed copy; the same weight built
  // without the GEMV runs oneDNN's matmul. Both approximate the same product of the same
  // (rounded) operands, so they agree within twice the f32 accumulation bound. Larger M
  // never takes the GEMV: its results do not depend on it at all.
  const Isa isa = CpuFeatures::Detect().isa();
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{172, 64}, {50, 33}, {3, 5}, {1000, 300}, {130, 2049}};
  for (DType compute : {DType::kF32, DType::kBF16}) {
    if (!GemvSupported(compute, isa)) continue;  // nothing to compare on this CPU
    // The GEMV for M <= kGemvMaxRows (with the bf16 FMA kernel, the default dispatch sends
    // those to the small-batch kernel, tested in small_gemm_test).
    LinearOptions with_gemv = DefaultLinearOptions(compute);
    with_gemv.dense.small_gemm_min_rows = kSmallGemmMinRows;
    LinearOptions without = with_gemv;
    without.dense.gemv = false;
    for (auto [out, in] : shapes) {
      Source w = MakeWeights(DType::kF32, out, in, 21 + out + in);
      const std::vector<float> bias = RandomFloats(out, 22);
      TensorView bias_view{"test.bias", DType::kF32, {out}, reinterpret_cast<const uint8_t*>(bias.data()),
                           bias.size() * 4};
      for (bool with_bias : {false, true}) {
        auto lin = Linear::Create(*ctx_, w.view, with_bias ? &bias_view : nullptr, with_gemv);
        ASSERT_TRUE(lin.ok()) << lin.status();
        auto onednn = Linear::Create(*ctx_, w.view, with_bias ? &bias_view : nullptr, without);
        ASSERT_TRUE(onednn.ok()) << onednn.status();
        // On AVX-512 oneDNN packs in the GEMV's layout; if this fails the GEMV never runs.
        ASSERT_TRUE((*lin)->uses_gemv()) << DTypeName(compute) << " " << out << "x" << in;
        EXPECT_FALSE((*onednn)->uses_gemv());
        for (int64_t m = 1; m <= kGemvMaxRows + 1; ++m) {
          const std::vector<float> x = RandomFloats(m * in, 23 + m);
          std::vector<float> y_gemv(m * out, std::nanf("")), y_dnn(m * out, std::nanf(""));
          (*lin)->Forward(x.data(), m, y_gemv.data());
          (*onednn)->Forward(x.data(), m, y_dnn.data());
          const std::string what = std::string(DTypeName(compute)) + " " + std::to_string(out) + "x" +
                                   std::to_string(in) + (with_bias ? " bias" : "") + " M=" + std::to_string(m);
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t n = 0; n < out; ++n) {
              double mag = with_bias ? std::fabs(bias[n]) : 0.0;
              for (int64_t k = 0; k < in; ++k) mag += std::fabs(double(x[i * in + k]) * w.values[n * in + k]);
              const double gemv = y_gemv[i * out + n], dnn = y_dnn[i * out + n];
              if (m > kGemvMaxRows) {
                ASSERT_EQ(gemv, dnn) << what << " row " << i << " col " << n << ": same path both times (small GEMM up to its limit, oneDNN above)";
              } else {
                ASSERT_NEAR(gemv, dnn, 2 * F32Tol(in) * mag + 1e-30) << what << " row " << i << " col " << n;
              }
            }
          }
        }
      }
    }
  }
}

TEST_F(LinearTest, RejectsBadInputs) {
  Source w = MakeWeights(DType::kF32, 4, 3, 1, 0);
  auto expect_invalid = [&](const TensorView& weight, const TensorView* bias, DType compute, const char* needle) {
    auto lin = Linear::Create(*ctx_, weight, bias, compute);
    ASSERT_FALSE(lin.ok());
    EXPECT_EQ(lin.status().code(), absl::StatusCode::kInvalidArgument) << lin.status();
    EXPECT_NE(lin.status().message().find(needle), absl::string_view::npos) << lin.status();
  };
  expect_invalid(w.view, nullptr, DType::kF16, "compute dtype");
  TensorView rank1 = w.view;
  rank1.shape = {12};
  expect_invalid(rank1, nullptr, DType::kF32, "rank");
  TensorView short_bytes = w.view;
  short_bytes.nbytes -= 4;
  expect_invalid(short_bytes, nullptr, DType::kF32, "bytes");
  TensorView zero = w.view;
  zero.shape = {0, 3};
  expect_invalid(zero, nullptr, DType::kF32, "empty");
  const std::vector<float> bias(3, 0.0f);
  TensorView bad_bias{"test.bias", DType::kF32, {3}, reinterpret_cast<const uint8_t*>(bias.data()), 12};
  expect_invalid(w.view, &bad_bias, DType::kF32, "bias");
}


// ---- The conversions behind Linear, on every instruction-set path. ----

// Each test runs on every path this CPU has: AVX512_BF16, AVX-512 alone, scalar.
class ConvertTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (isa() > CpuFeatures::Detect().isa()) GTEST_SKIP() << "this CPU has no " << IsaName(isa());
  }
  Isa isa() const { return GetParam(); }
};

INSTANTIATE_TEST_SUITE_P(Paths, ConvertTest, ::testing::Values(Isa::kAvx512Bf16, Isa::kAvx512, Isa::kScalar),
                         [](const auto& info) {
                           switch (info.param) {
                             case Isa::kAvx512Bf16: return "Avx512Bf16";
                             case Isa::kAvx512: return "Avx512";
                             default: return "Scalar";
                           }
                         });

float Bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float Bf16Value(uint16_t h) { return Bits(static_cast<uint32_t>(h) << 16); }

TEST_P(ConvertTest, F32ToBf16RoundsToNearestEven) {
  std::vector<float> x = RandomFloats(100000, 61, -1e6f, 1e6f);
  const float inf = std::numeric_limits<float>::infinity();
  // Ties (low half exactly 0x8000) to even and odd, just above/below a tie, extremes.
  for (uint32_t u : {0x3f808000u, 0x3f818000u, 0x3f808001u, 0x3f807fffu, 0xbf818000u, 0x7f7fffffu, 0x00800000u}) {
    x.push_back(Bits(u));
  }
  for (float v : {0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, 3.0e38f, -3.0e38f, 1e-30f}) x.push_back(v);
  for (size_t n : {size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{33}, x.size()}) {
    std::vector<uint16_t> y(n + 1, 0xabcd);
    ConvertF32ToBf16(isa(), x.data(), n, y.data());
    for (size_t i = 0; i < n; ++i) {
      const float expect = RoundToBf16(x[i]);
      ASSERT_EQ(Bf16Value(y[i]), expect) << "x " << x[i] << " n " << n;
      ASSERT_EQ(std::signbit(Bf16Value(y[i])), std::signbit(x[i])) << x[i];
    }
    EXPECT_EQ(y[n], 0xabcd) << "wrote past the end, n " << n;
  }
  const float nan_in[3] = {std::nanf(""), -std::nanf(""), Bits(0x7f800001u)};  // incl. a signaling NaN
  uint16_t nan_out[3];
  ConvertF32ToBf16(isa(), nan_in, 3, nan_out);
  for (uint16_t h : nan_out) EXPECT_TRUE(std::isnan(Bf16Value(h))) << std::hex << h;
}

TEST_P(ConvertTest, RowSharesTogetherConvertEveryRow) {
  // The threads' shares of ConvertRowsToBf16 (whole rows, or slices of every row when
  // there are fewer rows than threads) cover each row once: the union equals the whole
  // conversion, with the zero after an odd `in` and the stride's padding untouched.
  for (int64_t in : {1, 31, 33, 64, 1001, 2048}) {
    const int64_t ys = (in + 31) / 32 * 32 + 32;
    for (int64_t m : {1, 2, 3, 8}) {
      const std::vector<float> x = RandomFloats(static_cast<size_t>(m * in), static_cast<uint32_t>(in + m), -4, 4);
      for (int nt : {1, 2, 3, 5}) {
        std::vector<uint16_t> y(static_cast<size_t>(m * ys), 0xabcd);
        for (int t = 0; t < nt; ++t) ConvertRowsToBf16(isa(), x.data(), m, in, y.data(), ys, t, nt);
        const std::string what = "in " + std::to_string(in) + " m " + std::to_string(m) + " nt " + std::to_string(nt);
        for (int64_t r = 0; r < m; ++r) {
          for (int64_t i = 0; i < in; ++i) {
            ASSERT_EQ(Bf16Value(y[static_cast<size_t>(r * ys + i)]), RoundToBf16(x[static_cast<size_t>(r * in + i)]))
                << what << " row " << r << " element " << i;
          }
          const int64_t pad = in % 2 != 0 ? in + 1 : in;  // the odd k's zero partner
          if (pad > in) {
            ASSERT_EQ(y[static_cast<size_t>(r * ys + in)], 0) << what << " row " << r;
          }
          for (int64_t i = pad; i < ys; ++i) ASSERT_EQ(y[static_cast<size_t>(r * ys + i)], 0xabcd) << what;
        }
      }
    }
  }
}

TEST_P(ConvertTest, WeightsFromEveryDType) {
  const int64_t out = 37, in = 19;  // odd sizes: tails of every vector loop
  for (DType src : {DType::kF32, DType::kF16, DType::kBF16}) {
    Source w = MakeWeights(src, out, in, 71, 3);  // 3 bytes off alignment
    const size_t n = w.values.size();
    std::vector<float> f32(n);
    ConvertWeights(isa(), src, w.view.data, n, DType::kF32, f32.data());
    EXPECT_EQ(f32, w.values) << DTypeName(src);
    std::vector<uint16_t> bf16(n);
    ConvertWeights(isa(), src, w.view.data, n, DType::kBF16, bf16.data());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(Bf16Value(bf16[i]), RoundToBf16(w.values[i])) << DTypeName(src) << " " << i;
  }
  // f16 subnormals, signed zero, infinity: 0x0001 = 2^-24, 0x03ff = 1023·2^-24, 0x8000 = -0.
  const uint16_t halves[] = {0x0001, 0x03ff, 0x8000, 0x7c00, 0xfc00, 0x3c00, 0xc000, 0x7bff};
  const float expect[] = {std::ldexp(1.0f, -24), 1023 * std::ldexp(1.0f, -24), -0.0f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          1.0f, -2.0f, 65504.0f};
  std::vector<uint16_t> many;
  for (int rep = 0; rep < 5; ++rep) many.insert(many.end(), std::begin(halves), std::end(halves));  // > 16: vector path
  std::vector<float> got(many.size());
  ConvertWeights(isa(), DType::kF16, many.data(), many.size(), DType::kF32, got.data());
  for (size_t i = 0; i < many.size(); ++i) {
    EXPECT_EQ(got[i], expect[i % 8]) << std::hex << many[i];
    EXPECT_EQ(std::signbit(got[i]), std::signbit(expect[i % 8])) << std::hex << many[i];
  }
}

TEST_P(ConvertTest, Bf16LinearOnThisPath) {
  // The bf16 matmul path end to end with this path's conversions (weights at load, the
  // activations of each call): a layer built for this Isa.
  auto ctx = DnnContext::Create();
  ASSERT_TRUE(ctx.ok());
  Source w = MakeWeights(DType::kF16, 50, 33, 81);
  LinearOptions options = DefaultLinearOptions(DType::kBF16);
  options.isa = isa();
  auto lin = Linear::Create(**ctx, w.view, nullptr, options);
  ASSERT_TRUE(lin.ok()) << lin.status();
  const int64_t m = 9;
  const std::vector<float> x = RandomFloats(m * 33, 82);
  std::vector<float> y(m * 50);
  (*lin)->Forward(x.data(), m, y.data());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t n = 0; n < 50; ++n) {
      double acc = 0, mag = 0;
      for (int64_t k = 0; k < 33; ++k) {
        const double p = double(RoundToBf16(x[i * 33 + k])) * RoundToBf16(w.values[n * 33 + k]);
        acc += p;
        mag += std::fabs(p);
      }
      ASSERT_NEAR(y[i * 50 + n], acc, F32Tol(33) * mag + 1e-30) << i << "," << n;
    }
  }
}

}  // namespace
}  // namespace llmserve
