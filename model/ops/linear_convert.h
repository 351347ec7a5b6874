// Conversions for the linear layers: weights to the compute dtype at load, activations
// f32 -> bf16 per step (AVX-512 paths with runtime dispatch, scalar fallback).
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/dtype.h"

namespace llmserve {

// y[i] = bf16(x[i]) rounded to nearest even, for `n` elements; parallel when large.
// x must be float-aligned (it is an activation buffer).
void ConvertF32ToBf16(const float* x, size_t n, uint16_t* y);

// Converts `n` elements of `src_type` at `src` (any alignment) to `dst_type` (kF32 or
// kBF16) at `dst` (aligned for dst_type). Parallel over chunks.
void ConvertWeights(DType src_type, const void* src, size_t n, DType dst_type, void* dst);

}  // namespace llmserve
