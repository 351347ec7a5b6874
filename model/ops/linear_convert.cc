#include "model/ops/linear_convert.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "model/ops/simd_math.h"

namespace llmserve {
namespace {

// Elements per parallel chunk, and the size below which one thread does it all.
constexpr size_t kChunk = 8192;
constexpr size_t kParallelMin = size_t{1} << 16;

#define LLMSERVE_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// vcvtne2ps2bf16 rounds to nearest even like F32ToBF16 (NaN stays NaN), except that it
// flushes f32 denormals (below 1.2e-38) to zero, which is harmless for activations.
LLMSERVE_AVX512_BF16 void F32ToBf16Bf16Isa(const float* x, size_t n, uint16_t* y) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512bh r = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
    _mm512_storeu_si512(y + i, (__m512i)r);
  }
  if (i < n) {
    for (; i < n; i += 16) {
      const size_t left = std::min<size_t>(16, n - i);
      const __mmask16 mask = static_cast<__mmask16>((1u << left) - 1u);
      const __m256bh r = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, x + i));
      _mm256_mask_storeu_epi16(y + i, mask, (__m256i)r);
    }
  }
}

// Round-to-nearest-even in integer arithmetic (AVX-512F without the BF16 extension).
LLMSERVE_TARGET_AVX512 void F32ToBf16Avx512(const float* x, size_t n, uint16_t* y) {
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i bias = _mm512_set1_epi32(0x7fff);
  const __m512i quiet = _mm512_set1_epi32(0x40);
  for (size_t i = 0; i < n; i += 16) {
    const size_t left = std::min<size_t>(16, n - i);
    const __mmask16 mask = static_cast<__mmask16>((1u << left) - 1u);
    const __m512 v = _mm512_maskz_loadu_ps(mask, x + i);
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(bias, lsb)), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), quiet);
    _mm256_mask_storeu_epi16(y + i, mask, _mm512_cvtepi32_epi16(r));
  }
}

void F32ToBf16Scalar(const float* x, size_t n, uint16_t* y) {
  for (size_t i = 0; i < n; ++i) y[i] = F32ToBF16(x[i]);
}

void F32ToBf16Dispatch(Isa isa, const float* x, size_t n, uint16_t* y) {
  if (HasAvx512Bf16(isa)) {
    F32ToBf16Bf16Isa(x, n, y);
  } else if (HasAvx512(isa)) {
    F32ToBf16Avx512(x, n, y);
  } else {
    F32ToBf16Scalar(x, n, y);
  }
}

// One chunk of at most kChunk elements: any source dtype (unaligned) to f32.
LLMSERVE_TARGET_AVX512 void F16ToF32Avx512(const unsigned char* src, size_t n, float* dst) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i))));
  }
  if (i < n) ConvertToF32(DType::kF16, src + 2 * i, n - i, dst + i);
}

void ChunkToF32(Isa isa, DType src_type, const unsigned char* src, size_t n, float* dst) {
  if (src_type == DType::kF16 && HasAvx512(isa)) {
    F16ToF32Avx512(src, n, dst);
  } else {
    ConvertToF32(src_type, src, n, dst);
  }
}

void ConvertChunk(Isa isa, DType src_type, const unsigned char* src, size_t n, DType dst_type, unsigned char* dst) {
  if (src_type == dst_type) {
    std::memcpy(dst, src, n * DTypeSize(src_type));
    return;
  }
  if (dst_type == DType::kF32) {
    ChunkToF32(isa, src_type, src, n, reinterpret_cast<float*>(dst));
    return;
  }
  alignas(64) float tmp[kChunk];
  ChunkToF32(isa, src_type, src, n, tmp);
  F32ToBf16Dispatch(isa, tmp, n, reinterpret_cast<uint16_t*>(dst));
}

}  // namespace

void ConvertF32ToBf16(Isa isa, const float* x, size_t n, uint16_t* y) {
  if (n < kParallelMin) {
    F32ToBf16Dispatch(isa, x, n, y);
    return;
  }
  const int64_t chunks = static_cast<int64_t>((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t begin = static_cast<size_t>(c) * kChunk;
    F32ToBf16Dispatch(isa, x + begin, std::min(kChunk, n - begin), y + begin);
  }
}

namespace {

// y[i] = the f32 value of bf16 bits x[i].
LLMSERVE_TARGET_AVX512 void Bf16ToF32Avx512(const uint16_t* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 mask = simd::TailMask(n - i);
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, x + i));
    _mm512_mask_storeu_ps(y + i, mask, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
  }
}

void Bf16ToF32Dispatch(Isa isa, const uint16_t* x, int64_t n, float* y) {
  if (HasAvx512(isa)) return Bf16ToF32Avx512(x, n, y);
  for (int64_t j = 0; j < n; ++j) {
    const uint32_t f = uint32_t{x[j]} << 16;
    std::memcpy(y + j, &f, sizeof(f));
  }
}

// Calls row(r, begin, end) for thread t's share of an [m, in] matrix's rows (see
// ConvertRowsToBf16).
template <class Row>
void ForThreadShare(int64_t m, int64_t in, int t, int nt, Row row) {
  if (m >= nt) {
    for (int64_t r = m * t / nt; r < m * (t + 1) / nt; ++r) row(r, int64_t{0}, in);
    return;
  }
  const int64_t groups = (in + 31) / 32;
  const int64_t begin = std::min(in, groups * t / nt * 32), end = std::min(in, groups * (t + 1) / nt * 32);
  for (int64_t r = 0; r < m; ++r) row(r, begin, end);
}

}  // namespace

void ConvertRowsToBf16(Isa isa, const float* x, int64_t m, int64_t in, uint16_t* y, int64_t ys, int t, int nt) {
  ForThreadShare(m, in, t, nt, [&](int64_t r, int64_t begin, int64_t end) {
    if (end <= begin) return;
    F32ToBf16Dispatch(isa, x + r * in + begin, static_cast<size_t>(end - begin), y + r * ys + begin);
    if (end == in && in % 2 != 0) y[r * ys + in] = 0;
  });
}

void RoundRowsToBf16(Isa isa, const float* x, int64_t m, int64_t in, float* y, int64_t ys, int t, int nt) {
  ForThreadShare(m, in, t, nt, [&](int64_t r, int64_t begin, int64_t end) {
    constexpr int64_t kPiece = 256;
    uint16_t bits[kPiece];
    for (int64_t i = begin; i < end; i += kPiece) {
      const int64_t n = std::min(kPiece, end - i);
      F32ToBf16Dispatch(isa, x + r * in + i, static_cast<size_t>(n), bits);
      Bf16ToF32Dispatch(isa, bits, n, y + r * ys + i);
    }
    if (end == in && in % 2 != 0) y[r * ys + in] = 0.0f;
  });
}

void ConvertWeights(Isa isa, DType src_type, const void* src, size_t n, DType dst_type, void* dst) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  const size_t ssize = DTypeSize(src_type);
  const size_t dsize = DTypeSize(dst_type);
  const int64_t chunks = static_cast<int64_t>((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t begin = static_cast<size_t>(c) * kChunk;
    ConvertChunk(isa, src_type, s + begin * ssize, std::min(kChunk, n - begin), dst_type, d + begin * dsize);
  }
}

}  // namespace llmserve
