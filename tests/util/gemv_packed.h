// Test helpers for the GEMV and small-batch kernels: random weights packed in the panel
// layout of model/ops/gemv.h, with the exact values a double-precision reference uses.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

#include "model/dtype.h"
#include "model/ops/gemv.h"

namespace llmserve::test_util {

inline constexpr double kU = 1.0 / (1 << 24);  // float unit roundoff

// bf16 rounding (nearest, ties to even) from first principles: keep 8 significant bits.
inline float RoundToBf16(float v) {
  if (v == 0.0f) return v;
  int exp;
  const double m = std::frexp(double(v), &exp);
  return static_cast<float>(std::ldexp(std::nearbyint(std::ldexp(m, 8)), exp - 8));
}

inline uint16_t Bf16Bits(float bf16_value) {
  uint32_t u;
  std::memcpy(&u, &bf16_value, 4);
  return static_cast<uint16_t>(u >> 16);
}

inline std::vector<float> RandomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = d(rng);
  return v;
}

// A weight packed in the GEMV's panel layout (GemvPack), with the values it multiplies by
// (bf16-rounded for bf16).
struct Packed {
  std::vector<float> values;    // [out, in]
  std::vector<uint8_t> panels;  // GemvPack output
  std::vector<float> bias;
  GemvWeights w;
};

inline Packed MakePacked(DType dtype, int64_t out, int64_t in, bool with_bias, uint32_t seed) {
  Packed p;
  p.values = RandomFloats(static_cast<size_t>(out * in), seed);
  std::vector<uint16_t> bits(p.values.size());
  if (dtype == DType::kBF16) {
    for (size_t i = 0; i < p.values.size(); ++i) {
      p.values[i] = RoundToBf16(p.values[i]);
      bits[i] = Bf16Bits(p.values[i]);
    }
  }
  p.panels.assign(GemvPackedElements(dtype, out, in) * DTypeSize(dtype), 0xff);
  GemvPack(dtype, dtype == DType::kBF16 ? static_cast<const void*>(bits.data()) : p.values.data(), out, in,
           p.panels.data());
  if (with_bias) p.bias = RandomFloats(static_cast<size_t>(out), seed + 1);
  p.w.dtype = dtype;
  p.w.in = in;
  p.w.out = out;
  p.w.in_padded = (in + GemvKBlock(dtype) - 1) / GemvKBlock(dtype) * GemvKBlock(dtype);
  p.w.data = p.panels.data();
  p.w.bias = with_bias ? p.bias.data() : nullptr;
  return p;
}

// y = x·Wᵀ + b in double for `rows` rows of x ([rows, in]), two ways: with x rounded as
// the kernel rounds it (bf16 for bf16 weights) and with x exact; plus each output's
// magnitude (|b| + Σ|x·w|), which bounds the f32 accumulation error.
struct Reference {
  std::vector<double> y, y_exact, mag;  // [rows, out]
};

inline Reference ComputeReference(DType dtype, const Packed& p, const std::vector<float>& x, int64_t rows) {
  const int64_t out = p.w.out, in = p.w.in;
  const bool with_bias = !p.bias.empty();
  Reference ref;
  ref.y.resize(static_cast<size_t>(rows * out));
  ref.y_exact.resize(ref.y.size());
  ref.mag.resize(ref.y.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t n = 0; n < out; ++n) {
      double acc = with_bias ? p.bias[n] : 0.0, mag = with_bias ? std::fabs(p.bias[n]) : 0.0, exact = acc;
      for (int64_t k = 0; k < in; ++k) {
        const float xv = x[r * in + k];
        const double prod = double(dtype == DType::kBF16 ? RoundToBf16(xv) : xv) * p.values[n * in + k];
        acc += prod;
        mag += std::fabs(prod);
        exact += double(xv) * p.values[n * in + k];
      }
      ref.y[r * out + n] = acc;
      ref.y_exact[r * out + n] = exact;
      ref.mag[r * out + n] = mag;
    }
  }
  return ref;
}

// Checks the first m rows of y against `ref`, and that y's tail past m·out still holds
// `sentinel` (nothing written past the output). Use with ASSERT_NO_FATAL_FAILURE.
inline void CheckAgainstReference(DType dtype, const std::vector<float>& y, const Reference& ref, int64_t m,
                                  int64_t out, int64_t in, float sentinel, const std::string& what) {
  for (int64_t i = 0; i < m * out; ++i) {
    // Against the operands actually multiplied: only f32 accumulation error
    // ((in + 2)·u of sum |x w| + |b|, any summation order).
    ASSERT_NEAR(y[i], ref.y[i], (in + 2) * kU * ref.mag[i] + 1e-30)
        << what << " row " << i / out << " col " << i % out;
    // Against the unrounded x: bf16 rounding of x adds at most 2^-9 per product.
    const double tol = dtype == DType::kBF16 ? 1.0 / 256 : (in + 2) * kU;
    ASSERT_NEAR(y[i], ref.y_exact[i], tol * ref.mag[i] + 1e-30) << what << " row " << i / out << " col " << i % out;
  }
  for (size_t i = static_cast<size_t>(m * out); i < y.size(); ++i) {
    ASSERT_EQ(y[i], sentinel) << what << ": wrote past y";
  }
}

}  // namespace llmserve::test_util
