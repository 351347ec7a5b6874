// Norm, activation and residual kernels against double-precision evaluations of their
// defining equations, on both the AVX-512 and the scalar paths. RoPE is in rope_test.cc.
//
// Tolerances are error bounds of float arithmetic, in units of u = 2^-24 (the unit
// roundoff of float): a sum of n terms carries at most (n-1)u relative error per term
// magnitude, each other operation at most u, libm/vector exp a few u.
#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "model/ops/kernels.h"
#include "model/runtime_config.h"

namespace llmserve {
namespace {

constexpr double kU = 1.0 / (1 << 24);  // float unit roundoff

std::vector<float> Random(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = d(rng);
  return v;
}

// Runs each test body once with the best instruction set this CPU has (AVX-512 where
// available) and once with the scalar kernels.
class KernelsTest : public ::testing::TestWithParam<bool> {
 protected:
  Isa isa() const { return GetParam() ? Isa::kScalar : CpuFeatures::Detect().isa(); }
};

INSTANTIATE_TEST_SUITE_P(Paths, KernelsTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Scalar" : "Dispatched"; });

TEST_P(KernelsTest, RmsNormMatchesDefinition) {
  const float eps = 1e-5f;
  for (int64_t dim : {1, 7, 16, 33, 288, 2048}) {
    const int64_t rows = 5;
    std::vector<float> x = Random(rows * dim, -2.0f, 2.0f, 11 + dim);
    const std::vector<float> w = Random(dim, -1.5f, 1.5f, 12 + dim);
    std::vector<float> y(x.size());
    RmsNorm(isa(), x.data(), w.data(), rows, dim, eps, y.data());
    // Sum of squares: (dim-1)u relative (all terms positive); the square root halves it;
    // square, divide, add eps, sqrt, reciprocal and two products add ~6u.
    const double tol = ((dim + 1) / 2.0 + 8) * kU;
    for (int64_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (int64_t j = 0; j < dim; ++j) ss += double(x[r * dim + j]) * x[r * dim + j];
      const double scale = 1.0 / std::sqrt(ss / dim + eps);
      for (int64_t j = 0; j < dim; ++j) {
        const double ref = w[j] * x[r * dim + j] * scale;
        ASSERT_NEAR(y[r * dim + j], ref, tol * std::fabs(ref) + 1e-30) << "dim " << dim << " r " << r << " j " << j;
      }
    }
    // In place gives the same result.
    RmsNorm(isa(), x.data(), w.data(), rows, dim, eps, x.data());
    EXPECT_EQ(x, y);
  }
}

TEST_P(KernelsTest, RmsNormManyRowsParallel) {
  // Enough work for the OpenMP path: each row must still be its own normalization.
  const int64_t rows = 64, dim = 1024;
  std::vector<float> x = Random(rows * dim, -1.0f, 1.0f, 3);
  for (int64_t r = 0; r < rows; ++r) x[r * dim] = float(r + 1) * 10.0f;  // rows differ in scale
  const std::vector<float> w(dim, 1.0f);
  std::vector<float> y(x.size());
  RmsNorm(isa(), x.data(), w.data(), rows, dim, 1e-6f, y.data());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t j = 0; j < dim; ++j) ss += double(y[r * dim + j]) * y[r * dim + j];
    // A normalized row (w = 1) has mean square 1 (up to eps and rounding).
    EXPECT_NEAR(ss / dim, 1.0, 1e-4) << "row " << r;
  }
}

TEST_P(KernelsTest, LayerNormMatchesDefinition) {
  const float eps = 1e-5f;
  for (int64_t dim : {1, 5, 16, 31, 768}) {
    const int64_t rows = 4;
    std::vector<float> x = Random(rows * dim, -1.0f, 1.0f, 21 + dim);
    for (float& v : x) v += 3.0f;  // a mean far from 0 exercises the centering
    const std::vector<float> w = Random(dim, -2.0f, 2.0f, 22 + dim);
    const std::vector<float> b = Random(dim, -0.5f, 0.5f, 23 + dim);
    std::vector<float> y(x.size()), y_nobias(x.size());
    LayerNorm(isa(), x.data(), w.data(), b.data(), rows, dim, eps, y.data());
    LayerNorm(isa(), x.data(), w.data(), nullptr, rows, dim, eps, y_nobias.data());
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x.data() + r * dim;
      double mean = 0, var = 0;
      for (int64_t j = 0; j < dim; ++j) mean += xr[j];
      mean /= dim;
      for (int64_t j = 0; j < dim; ++j) var += (xr[j] - mean) * (xr[j] - mean);
      var /= dim;
      const double rstd = 1.0 / std::sqrt(var + eps);
      double max_abs = 0;
      for (int64_t j = 0; j < dim; ++j) max_abs = std::max(max_abs, std::fabs(double(xr[j])));
      for (int64_t j = 0; j < dim; ++j) {
        const double norm = (xr[j] - mean) * rstd;
        // The float mean is off by at most (dim+2)u·max|x|, which becomes an absolute error
        // of that times rstd in the normalized value; the variance's relative error (dim+4)u
        // is halved by the sqrt; the affine part adds 3u.
        const double norm_tol = (dim + 2) * kU * max_abs * rstd + ((dim + 4) / 2.0 + 4) * kU * std::fabs(norm);
        const double tol = norm_tol * std::fabs(w[j]) + 3 * kU * (std::fabs(norm * w[j]) + std::fabs(b[j]));
        ASSERT_NEAR(y[r * dim + j], norm * w[j] + b[j], tol + 1e-30) << "dim " << dim << " j " << j;
        ASSERT_NEAR(y_nobias[r * dim + j], norm * w[j], tol + 1e-30) << "dim " << dim << " j " << j;
      }
    }
    LayerNorm(isa(), x.data(), w.data(), b.data(), rows, dim, eps, x.data());
    EXPECT_EQ(x, y);
  }
}

double SiluRef(double g) { return g / (1.0 + std::exp(-g)); }

TEST_P(KernelsTest, SiluMulMatchesDefinition) {
  std::vector<float> gate = Random(1000, -30.0f, 30.0f, 31);
  // Special points: zero, exp's clamps and overflow, infinities.
  for (float v : {0.0f, -0.0f, 1e-8f, -1e-8f, 88.0f, -88.0f, 89.0f, -89.0f, 100.0f, -100.0f, 200.0f, -200.0f}) {
    gate.push_back(v);
  }
  const std::vector<float> up = Random(gate.size(), -3.0f, 3.0f, 32);
  std::vector<float> out(gate.size());
  SiluMul(isa(), gate.data(), up.data(), static_cast<int64_t>(gate.size()), out.data());
  for (size_t i = 0; i < gate.size(); ++i) {
    const double ref = SiluRef(gate[i]) * up[i];
    // exp within 2u, 1 + e, the division and the product: 6u. Where exp(-g) overflows
    // float (g < -88.73, as in run.c's formula) the result is 0 while the true value is
    // below 89·e^-88.73·|up| < 1e-36.
    ASSERT_NEAR(out[i], ref, 6 * kU * std::fabs(ref) + 1e-36) << "gate " << gate[i];
  }
  // out may alias gate; n not a multiple of 16; n = 0 touches nothing.
  std::vector<float> g2 = Random(37, -5.0f, 5.0f, 33), u2 = Random(37, -5.0f, 5.0f, 34);
  std::vector<float> expect(37);
  SiluMul(isa(), g2.data(), u2.data(), 37, expect.data());
  SiluMul(isa(), g2.data(), u2.data(), 37, g2.data());
  EXPECT_EQ(g2, expect);
  float sentinel = 42.0f;
  SiluMul(isa(), &sentinel, &sentinel, 0, &sentinel);
  EXPECT_EQ(sentinel, 42.0f);
}

TEST_P(KernelsTest, SiluMulLargeIsParallelAndCorrect) {
  const size_t n = 300000;  // several chunks
  const std::vector<float> gate = Random(n, -8.0f, 8.0f, 35), up = Random(n, -1.0f, 1.0f, 36);
  std::vector<float> out(n);
  SiluMul(isa(), gate.data(), up.data(), n, out.data());
  for (size_t i = 0; i < n; ++i) {
    const double ref = SiluRef(gate[i]) * up[i];
    ASSERT_NEAR(out[i], ref, 6 * kU * std::fabs(ref) + 1e-37) << i;
  }
}

// GPT-2 "gelu_new": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
double GeluRef(double x) {
  const double u = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
  // For u << 0, 1 + tanh(u) cancels in double too; there use the identity
  // 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)).
  if (u > -2.0) return 0.5 * x * (1.0 + std::tanh(u));
  return x / (1.0 + std::exp(-2.0 * u));
}

TEST_P(KernelsTest, GeluTanhMatchesDefinition) {
  std::vector<float> x = Random(2000, -12.0f, 12.0f, 41);
  for (float v : {0.0f, 1e-6f, -1e-6f, 0.5f, -0.5f, 3.0f, -3.0f, 20.0f, -20.0f, 1000.0f, -1000.0f}) x.push_back(v);
  std::vector<float> y = x;
  GeluTanh(isa(), y.data(), static_cast<int64_t>(y.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double ref = GeluRef(x[i]);
    // 8u relative for the vector form x / (1 + exp(-2u)); the scalar form's 1 + tanhf
    // carries tanhf's absolute error (~2u, |tanh| <= 1) times 0.5|x|.
    ASSERT_NEAR(y[i], ref, 8 * kU * std::fabs(ref) + 2 * kU * std::fabs(x[i]) + 1e-37) << "x " << x[i];
  }
}

TEST_P(KernelsTest, AddInPlaceIsExact) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{17}, size_t{100000}}) {
    const std::vector<float> a = Random(n, -1e3f, 1e3f, 51), b = Random(n, -1e3f, 1e3f, 52);
    std::vector<float> y = a;
    AddInPlace(isa(), y.data(), b.data(), static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], a[i] + b[i]) << i;  // float addition, once
  }
}

}  // namespace
}  // namespace llmserve
