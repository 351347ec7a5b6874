// Test helpers for the quantized formats: random ggml blocks of every type (random quant
// bits and scale codes, f16 scales of a realistic size) and small tensor views of them.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "model/dtype.h"
#include "model/model_weights.h"
#include "model/quant/quant_type.h"

namespace llmserve::test_util {

// Byte offsets of a block's f16 fields (d first, then m / dmin where the type has one).
inline std::vector<int> HalfFieldOffsets(QuantType t) {
  switch (t) {
    case QuantType::kQ4_0: case QuantType::kQ5_0: case QuantType::kQ8_0: return {0};
    case QuantType::kQ4_1: case QuantType::kQ5_1: case QuantType::kQ4_K: case QuantType::kQ5_K: return {0, 2};
    case QuantType::kQ6_K: return {208};
    case QuantType::kNone: break;
  }
  return {};
}

// `rows` rows of `cols` (a multiple of the block) of random blocks of type `t`.
inline std::vector<uint8_t> RandomQuantRows(QuantType t, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t bb = QuantBlockBytes(t), blocks = rows * cols / QuantBlockElems(t);
  std::vector<uint8_t> out(static_cast<size_t>(blocks * bb));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.5e-3f, 4e-3f);
  for (uint8_t& b : out) b = static_cast<uint8_t>(byte(rng));
  for (int64_t i = 0; i < blocks; ++i) {
    for (int off : HalfFieldOffsets(t)) {
      const uint16_t h = F32ToF16(scale(rng));
      std::memcpy(out.data() + i * bb + off, &h, 2);
    }
  }
  return out;
}

// A quantized [rows, cols] view of `bytes`.
inline TensorView QuantView(const std::string& name, QuantType t, int64_t rows, int64_t cols,
                            const std::vector<uint8_t>& bytes) {
  TensorView v;
  v.name = name;
  v.quant = t;
  v.shape = {rows, cols};
  v.data = bytes.data();
  v.nbytes = bytes.size();
  return v;
}

}  // namespace llmserve::test_util
