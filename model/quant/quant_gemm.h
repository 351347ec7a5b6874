// Matrix products with quantized weights: y[M, N] = x[M, K] · Wᵀ (+ b) for W in the
// packed layout of packed_layout.h, on int8-quantized activations.
//
// The arithmetic, the same in every kernel and for every M (so a row's result never
// depends on the batch it is in, or on which kernel ran it):
//   1. each row of x is quantized per 32 k: d = max|x| / 127, q = round-to-even(x / d)
//      as int8 (QuantizeActs);
//   2. for every output and every sub-block of the weight format (32 k; 16 for Q6_K),
//      the integer dot product of the unsigned weight codes with the int8 activations,
//      minus offset · Σq for the formats with a fixed offset (Q8_0 128, Q4_0 8, Q5_0 16,
//      Q6_K 32) — exact in int32;
//   3. in k order, one f32 accumulator per output takes, with single-rounding FMAs,
//        acc = fma(float(isum) · d_x, s, acc)          s = the sub-block's weight scale
//        acc = fma(±min, d_x · Σq_x, acc)               Q4_1/Q5_1 (+m), Q4_K/Q5_K (−dmin·m_s)
//      with s = d (Q4_0 ... Q8_0) or d · sc_s (K-quants), each a single f32 product;
//   4. y = acc + b.
// QuantKernel::kScalar is the reference (plain C++, std::fma); kAvx512Vnni computes the
// same values bit for bit with vpdpbusd over 16 rows × 4 k per instruction.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/quant/packed_layout.h"

namespace llmserve {

enum class QuantKernel : uint8_t { kScalar, kAvx512Vnni };

// "scalar" / "avx512-vnni".
const char* QuantKernelName(QuantKernel k);
// True when this CPU can run `k` (AVX-512 F/BW/VL + VNNI for kAvx512Vnni).
bool QuantKernelSupported(QuantKernel k);
// The fastest kernel this CPU supports.
QuantKernel BestQuantKernel();

// x quantized for the kernels (views into one buffer; see MapQuantizedActs).
struct QuantizedActs {
  int64_t m = 0;       // rows
  int64_t cols = 0;    // k, a multiple of 32 (zero past x's own width)
  int64_t blocks = 0;  // cols / 32
  int8_t* q = nullptr;         // [m][cols]
  float* d = nullptr;          // [m][blocks] scale of each 32-block
  float* dsum = nullptr;       // [m][blocks] d · Σq over the block
  int32_t* nsum32 = nullptr;   // [m][blocks] −Σq over the block
  int32_t* nsum16 = nullptr;   // [m][2 blocks] −Σq over each half block
};

// Bytes of the buffer MapQuantizedActs lays out for m rows of `cols` (a multiple of 32).
size_t QuantizedActsBytes(int64_t m, int64_t cols);
// Lays out the arrays in `buffer` (64-byte aligned, QuantizedActsBytes bytes).
QuantizedActs MapQuantizedActs(void* buffer, int64_t m, int64_t cols);

// Quantizes rows [r0, r1) of x [a.m, in] (row stride `in`, in <= a.cols) into `a`.
void QuantizeActs(QuantKernel kernel, const float* x, int64_t in, int64_t r0, int64_t r1, const QuantizedActs& a);

// For every row of `a` and the outputs of groups [g0, g1) of `w`: y[r * ldy + o] =
// (x·Wᵀ)[r, o] + bias[o] (bias may be null). `a.cols` must equal w.cols.
void QuantGemm(QuantKernel kernel, const PackedQuantMatrix& w, int64_t g0, int64_t g1, const QuantizedActs& a,
               const float* bias, float* y, int64_t ldy);

namespace quant_internal {
// The kernels behind QuantizeActs / QuantGemm (quant_gemm_ref.cc, quant_gemm_avx512.cc).
void QuantizeActsScalar(const float* x, int64_t in, int64_t r0, int64_t r1, const QuantizedActs& a);
void QuantizeActsAvx512(const float* x, int64_t in, int64_t r0, int64_t r1, const QuantizedActs& a);
void QuantGemmScalar(const PackedQuantMatrix& w, int64_t g0, int64_t g1, const QuantizedActs& a, const float* bias,
                     float* y, int64_t ldy);
void QuantGemmAvx512(const PackedQuantMatrix& w, int64_t g0, int64_t g1, const QuantizedActs& a, const float* bias,
                     float* y, int64_t ldy);
}  // namespace quant_internal

}  // namespace llmserve
