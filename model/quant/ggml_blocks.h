// Reading ggml's quantized blocks (layouts in quant_type.h): one block decoded into its
// unsigned quant values and scale codes, and rows dequantized to float exactly as ggml's
// dequantize_row_* compute them (the same float operations in the same order).
// This is the scalar reference every quantized path is checked against.
#pragma once

#include <cstdint>

#include "model/quant/quant_type.h"

namespace llmserve {

// One block (32 elements, or a 256-element super-block) of one row, decoded.
struct DecodedBlock {
  // Unsigned quant value of each element: Q4: 0..15, Q5: 0..31, Q6_K: 0..63, Q8_0: the
  // int8 plus 128 (0..255).
  uint8_t q[256];
  uint16_t d = 0;  // f16 bits: the block scale (K-quants: the super-block scale d)
  uint16_t m = 0;  // f16 bits: Q4_1/Q5_1 the block min m; Q4_K/Q5_K the super-block dmin
  // K-quants' sub-block codes: Q4_K/Q5_K 8 six-bit scales and 8 six-bit mins; Q6_K 16
  // int8 scales (their bit patterns, in sc).
  uint8_t sc[16] = {};
  uint8_t mn[8] = {};
};

// Decodes the block at `src` (QuantBlockBytes(t) bytes, any alignment).
void DecodeBlock(QuantType t, const uint8_t* src, DecodedBlock* out);

// Dequantizes `n` elements (a multiple of the block size) starting at the block at `src`.
void DequantizeRow(QuantType t, const uint8_t* src, int64_t n, float* dst);

}  // namespace llmserve
