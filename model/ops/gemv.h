// Small-M matrix-vector products for decode: y[M, out] = x[M, in] · Wᵀ (+ b) for
// 1 <= M <= kGemvMaxRows, AVX-512 (f32 via FMA, bf16 via vdpbf16ps), over panel-packed
// weights that each thread streams front to back.
//
// The panel layout is oneDNN's blocked matmul layout for weights B[K=in, N=out] on
// AVX-512 ("BA16a64b2a" for bf16, "BA16a64b" for f32), so the GEMV reads the very copy
// the oneDNN matmul (prefill) packed: no second copy of any weight.
//
//   panel p = outputs [64p, 64p + 64), one contiguous run of in_padded × 64 elements:
//
//     bf16: [in_padded / 2][64 outputs][2 adjacent k]    row of 256 bytes per k pair
//             └ 16 outputs × 2 k = one zmm = one vdpbf16ps operand
//     f32:  [in_padded][64 outputs]                      row of 256 bytes per k
//
//   panel p starts at element p · in_padded · 64; panels follow each other.
//   in_padded = in rounded up to GemvKBlock (32 bf16, 16 f32); out padded to 64.
//   Padding holds zeros (oneDNN's reorder and GemvPack both zero it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/dtype.h"
#include "model/ops/isa.h"

namespace llmserve {

// Largest M (rows of x) the GEMV serves; larger M goes to the small-batch kernel of
// model/ops/small_gemm.h (up to its dispatch limit), then to oneDNN's matmul.
inline constexpr int64_t kGemvMaxRows = 4;
// Outputs per panel.
inline constexpr int64_t kGemvPanel = 64;

// The k block of the layout (the granule `in` is padded to): 32 for bf16, 16 for f32.
int64_t GemvKBlock(DType dtype);

// A weight in the panel layout (not owned).
struct GemvWeights {
  DType dtype = DType::kF32;      // kF32 or kBF16
  int64_t in = 0, out = 0;        // logical K and N
  int64_t in_padded = 0;          // `in` rounded up to GemvKBlock(dtype)
  const void* data = nullptr;     // panels; (out rounded up to 64) · in_padded elements
  const float* bias = nullptr;    // [out], or null
};

// Elements (of dtype) of the packed panels for an [out, in] weight.
size_t GemvPackedElements(DType dtype, int64_t out, int64_t in);

// Packs a plain row-major [out, in] weight of `dtype` (kF32/kBF16) into the panel layout
// at `dst` (GemvPackedElements elements), zeroing the padding. Used by tests and benches.
void GemvPack(DType dtype, const void* plain, int64_t out, int64_t in, void* dst);

// True when the GEMV for `dtype` can run with `isa`: AVX-512 for f32, and AVX512_BF16 too
// for bf16.
bool GemvSupported(DType dtype, Isa isa);

// uint16 elements of scratch Gemv needs for `m` rows (0 for f32 weights).
size_t GemvScratchElements(const GemvWeights& w, int64_t m);

// y = x · Wᵀ + b for m (1..kGemvMaxRows) rows; x [m, in] and y [m, out] f32 row-major.
// bf16 weights: x is rounded to bf16 (nearest even) into `scratch` first, as oneDNN's
// bf16 matmul does. Parallel over panels with the OpenMP threads in effect (each thread
// one contiguous range). Call only when GemvSupported(w.dtype, the Isa in use).
void Gemv(const GemvWeights& w, const float* x, int64_t m, float* y, uint16_t* scratch);

}  // namespace llmserve
