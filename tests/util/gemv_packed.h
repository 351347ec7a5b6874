// Test helpers for the GEMV and small-batch kernels: random weights packed in the panel
// layout of model/ops/gemv.h, with the exact values a double-precision reference uses.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

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

}  // namespace llmserve::test_util
