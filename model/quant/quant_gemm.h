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
#include <cstring>

#include "model/quant/packed_layout.h"

namespace llmserve {

enum class QuantKernel : uint8_t { kScalar, kAvx512Vnni };

// "scalar" / "avx512-vnni".
const char* QuantKernelName(QuantKernel k);
// True when this CPU can run `k` (AVX-512 F/BW/VL + VNNI for kAvx512Vnni).
bool QuantKernelSupported(QuantKernel k);
// The fastest kernel this CPU supports.
QuantKernel BestQuantKernel();

// x quantized for the kernels: one 64-byte record per (row, 32-block), rows after rows,
// so that a kernel walks each row's blocks with one pointer:
//
//   record: [ q: 32 × int8 | d f32 | d·Σq f32 | −Σq i32 | −Σq first 16 i32 | −Σq last 16 i32 | 0 × 12 ]
//             0              32      36         40        44                 48
struct QuantizedActs {
  static constexpr int64_t kRecordBytes = 64;
  static constexpr int64_t kD = 32, kDsum = 36, kNsum32 = 40, kNsum16 = 44;

  int64_t m = 0;       // rows
  int64_t cols = 0;    // k, a multiple of 32 (zero past x's own width)
  int64_t blocks = 0;  // cols / 32
  uint8_t* data = nullptr;  // [m][blocks] records

  uint8_t* record(int64_t r, int64_t b) const { return data + (r * blocks + b) * kRecordBytes; }
  // The int8 values of row r, k 32b .. 32b + 31.
  const int8_t* q(int64_t r, int64_t b) const { return reinterpret_cast<const int8_t*>(record(r, b)); }
  float d(int64_t r, int64_t b) const { return Get<float>(r, b, kD); }
  float dsum(int64_t r, int64_t b) const { return Get<float>(r, b, kDsum); }
  int32_t nsum32(int64_t r, int64_t b) const { return Get<int32_t>(r, b, kNsum32); }
  // −Σq over half h (0, 1) of block b.
  int32_t nsum16(int64_t r, int64_t b, int h) const { return Get<int32_t>(r, b, kNsum16 + 4 * h); }

 private:
  template <typename T>
  T Get(int64_t r, int64_t b, int64_t off) const {
    T v;
    std::memcpy(&v, record(r, b) + off, sizeof v);
    return v;
  }
};

// Bytes of the buffer MapQuantizedActs lays out for m rows of `cols` (a multiple of 32).
size_t QuantizedActsBytes(int64_t m, int64_t cols);
// The records of m rows of `cols` in `buffer` (64-byte aligned, QuantizedActsBytes bytes).
QuantizedActs MapQuantizedActs(void* buffer, int64_t m, int64_t cols);
// Writes one block's record: its 32 int8 values, scale and sums (the padding zeroed).
void WriteActsRecord(const int8_t* q, float d, uint8_t* record);

// Quantizes rows [r0, r1) of x [a.m, in] (row stride `in`, in <= a.cols) into `a`.
void QuantizeActs(QuantKernel kernel, const float* x, int64_t in, int64_t r0, int64_t r1, const QuantizedActs& a);

// For every row of `a` and the outputs of groups [g0, g1) of `w`: y[r * ldy + o] =
// (x·Wᵀ)[r, o] + bias[o] (bias may be null). `a.cols` must equal w.cols. `scratch`, when
// not null (QuantPanelScratchBytes(w.cols) bytes, 64-byte aligned), lets the SIMD kernel
// unpack each panel once and reuse it for all rows: worth it for many rows (prefill);
// the results are the same either way.
void QuantGemm(QuantKernel kernel, const PackedQuantMatrix& w, int64_t g0, int64_t g1, const QuantizedActs& a,
               uint8_t* scratch, const float* bias, float* y, int64_t ldy);

// The fewest rows from which `kernel` is given a panel scratch for weights of type `t`
// (INT64_MAX: never). Unpacking a panel in registers costs every row tile the nibble
// and high-bit arithmetic; the scratch costs one extra pass over the panel. Where it pays
// depends on how much arithmetic the unpack is (bench/quant_gemm_bench's ScratchAB,
// registers / scratch time on the 1b shapes: Q5_K and Q6_K 1.05-1.12 at 64 rows and
// 1.2-1.3 from 256; Q4_K 0.91-0.98 at 64, 0.96-1.04 at 128, 1.05-1.1 at 512; Q8_0, loads
// only, 0.85 at 64 and 1.0 at 512).
int64_t QuantPanelScratchMinRows(QuantKernel kernel, QuantType t);

// Bytes of the panel scratch QuantGemm can use for weights of `cols` k.
inline constexpr int64_t kQuantScratchEntryBytes = 640;  // per (32 k, group): codes, scales, min
inline size_t QuantPanelScratchBytes(int64_t cols) {
  return static_cast<size_t>(cols / 32 * kQuantPanelGroups * kQuantScratchEntryBytes);
}

namespace quant_internal {
// The kernels behind QuantizeActs / QuantGemm (quant_gemm_ref.cc, quant_gemm_avx512.cc).
void QuantizeActsScalar(const float* x, int64_t in, int64_t r0, int64_t r1, const QuantizedActs& a);
void QuantizeActsAvx512(const float* x, int64_t in, int64_t r0, int64_t r1, const QuantizedActs& a);
void QuantGemmScalar(const PackedQuantMatrix& w, int64_t g0, int64_t g1, const QuantizedActs& a, const float* bias,
                     float* y, int64_t ldy);
void QuantGemmAvx512(const PackedQuantMatrix& w, int64_t g0, int64_t g1, const QuantizedActs& a, uint8_t* scratch,
                     const float* bias, float* y, int64_t ldy);
}  // namespace quant_internal

}  // namespace llmserve
