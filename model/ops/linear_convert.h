// Conversions for the linear layers: weights to the compute dtype at load, activations
// f32 -> bf16 per step. Each has AVX-512 paths and a scalar one; `isa` says which may run
// (all give the same results).
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/dtype.h"
#include "model/ops/isa.h"

namespace llmserve {

// y[i] = bf16(x[i]) rounded to nearest even, for `n` elements; parallel when large.
// x must be float-aligned (it is an activation buffer).
void ConvertF32ToBf16(Isa isa, const float* x, size_t n, uint16_t* y);

// Thread `t` of `nt`'s share of converting the m rows of x [m, in] (f32) to bf16 rows of
// stride `ys` elements in y (at least `in` rounded up to even), with a zero after an odd
// `in` (the partner of the last k in a k pair): whole rows when m >= nt, else a slice of
// every row (starting at a multiple of 32 elements). The decode kernels run it inside
// their parallel region, so that no thread waits for one to convert everything. (0, 1)
// converts it all.
void ConvertRowsToBf16(Isa isa, const float* x, int64_t m, int64_t in, uint16_t* y, int64_t ys, int t, int nt);

// As ConvertRowsToBf16, but the rounded values are written as f32 (bf16 bits in the upper
// half, zeros below), for kernels that multiply bf16 weights with f32 FMAs.
void RoundRowsToBf16(Isa isa, const float* x, int64_t m, int64_t in, float* y, int64_t ys, int t, int nt);

// Converts `n` elements of `src_type` at `src` (any alignment) to `dst_type` (kF32 or
// kBF16) at `dst` (aligned for dst_type). Parallel over chunks.
void ConvertWeights(Isa isa, DType src_type, const void* src, size_t n, DType dst_type, void* dst);

}  // namespace llmserve
