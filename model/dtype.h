// Element types of model tensors and conversions between them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include "absl/strings/string_view.h"

namespace llmserve {

// Element type of a weight tensor as stored in a model file.
enum class DType : uint8_t { kF32, kF16, kBF16 };

// Bytes per element.
constexpr size_t DTypeSize(DType t) { return t == DType::kF32 ? 4 : 2; }

// "f32", "f16" or "bf16".
absl::string_view DTypeName(DType t);

// IEEE half -> float (handles subnormals, inf, nan).
float F16ToF32(uint16_t h);

// float -> IEEE half, round to nearest even (overflow to inf, nan stays nan).
uint16_t F32ToF16(float f);

// bfloat16 -> float (exact).
inline float BF16ToF32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// float -> bfloat16, round to nearest even (nan stays nan).
uint16_t F32ToBF16(float f);

// Converts `n` elements of type `src_type` at `src` (any alignment) to floats.
void ConvertToF32(DType src_type, const void* src, size_t n, float* dst);

}  // namespace llmserve
