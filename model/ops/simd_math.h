// Internal helpers of the ops: AVX-512 target attributes, masks and a vector exp (which
// kernel runs is the caller's Isa argument, model/ops/isa.h). Only included by model/ops/*.cc.
#pragma once

// GCC 12's AVX-512 headers pass _mm512_undefined_ps() to masked builtins, which trips
// -Wuninitialized where they are inlined (GCC bug 105593); the state applies to the header text.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <cstdint>

namespace llmserve::simd {

// Functions compiled for AVX-512 (F/BW/VL); call only when the Isa allows it (HasAvx512).
#define LLMSERVE_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

// Mask of the first `left` lanes (1..16) of a 16-lane vector.
LLMSERVE_TARGET_AVX512 inline __mmask16 TailMask(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
}

// 16 words of two bf16 values each, widened to f32: the low halves and the high halves.
LLMSERVE_TARGET_AVX512 inline void WidenBf16Pairs(__m512i w, __m512& low, __m512& high) {
  low = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  high = _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}

// exp(x) for 16 floats, within ~2 ulp over the whole float range: Cephes' expf
// (range reduction by ln 2 in two parts, degree-5 minimax polynomial) with scalef for
// 2^n, so overflow gives +inf, underflow 0, and NaN stays NaN.
LLMSERVE_TARGET_AVX512 inline __m512 Exp(__m512 x) {
  // Beyond these bounds exp is inf / 0 in float; clamping keeps n finite (max_ps/min_ps
  // with x as the second operand return x when x is NaN).
  x = _mm512_min_ps(_mm512_set1_ps(88.8f), x);
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 r2 = _mm512_mul_ps(r, r);
  p = _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

}  // namespace llmserve::simd
