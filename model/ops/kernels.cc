// Norms, activations and residual add (RoPE is in kernels_rope.cc). Each kernel has an
// AVX-512 version and a scalar one; the caller's Isa picks.
#include "model/ops/kernels.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "model/ops/simd_math.h"

namespace llmserve {
namespace {

using simd::TailMask;

// Work (floats) below which a kernel stays on the calling thread: an OpenMP fork/join
// costs a few microseconds, more than normalizing a handful of rows.
constexpr int64_t kParallelWork = int64_t{1} << 15;
// Elementwise kernels split their range into chunks of this many floats.
constexpr int64_t kChunk = 4096;

// ---- RMSNorm: as llama2.c's rmsnorm: ss = mean(x^2) + eps; y = w * (x / sqrt(ss)). ----

void RmsNormRowScalar(const float* x, const float* w, int64_t dim, float eps, float* y) {
  float ss = 0.0f;
  for (int64_t j = 0; j < dim; ++j) ss += x[j] * x[j];
  ss /= static_cast<float>(dim);
  ss += eps;
  ss = 1.0f / std::sqrt(ss);
  for (int64_t j = 0; j < dim; ++j) y[j] = w[j] * (ss * x[j]);
}

LLMSERVE_TARGET_AVX512 void RmsNormRowAvx512(const float* x, const float* w, int64_t dim, float eps, float* y) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + 32 <= dim; j += 32) {
    const __m512 a = _mm512_loadu_ps(x + j), b = _mm512_loadu_ps(x + j + 16);
    acc0 = _mm512_fmadd_ps(a, a, acc0);
    acc1 = _mm512_fmadd_ps(b, b, acc1);
  }
  for (; j < dim; j += 16) {
    const __m512 a = _mm512_maskz_loadu_ps(TailMask(dim - j), x + j);
    acc0 = _mm512_fmadd_ps(a, a, acc0);
  }
  float ss = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
  ss /= static_cast<float>(dim);
  ss += eps;
  ss = 1.0f / std::sqrt(ss);
  const __m512 s = _mm512_set1_ps(ss);
  for (j = 0; j < dim; j += 16) {
    const __mmask16 m = TailMask(dim - j);
    const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, w + j), _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, x + j)));
    _mm512_mask_storeu_ps(y + j, m, v);
  }
}

// ---- LayerNorm (GPT-2): biased variance, two passes. ----

void LayerNormRowScalar(const float* x, const float* w, const float* b, int64_t dim, float eps, float* y) {
  float sum = 0.0f;
  for (int64_t j = 0; j < dim; ++j) sum += x[j];
  const float mean = sum / static_cast<float>(dim);
  float var = 0.0f;
  for (int64_t j = 0; j < dim; ++j) var += (x[j] - mean) * (x[j] - mean);
  var /= static_cast<float>(dim);
  const float rstd = 1.0f / std::sqrt(var + eps);
  for (int64_t j = 0; j < dim; ++j) y[j] = (x[j] - mean) * rstd * w[j] + (b != nullptr ? b[j] : 0.0f);
}

LLMSERVE_TARGET_AVX512 void LayerNormRowAvx512(const float* x, const float* w, const float* b, int64_t dim,
                                               float eps, float* y) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t j = 0; j < dim; j += 16) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(TailMask(dim - j), x + j));
  const float mean = _mm512_reduce_add_ps(acc) / static_cast<float>(dim);
  const __m512 vmean = _mm512_set1_ps(mean);
  acc = _mm512_setzero_ps();
  for (int64_t j = 0; j < dim; j += 16) {
    const __mmask16 m = TailMask(dim - j);
    const __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, x + j), vmean);
    acc = _mm512_fmadd_ps(d, d, acc);
  }
  const float var = _mm512_reduce_add_ps(acc) / static_cast<float>(dim);
  const __m512 rstd = _mm512_set1_ps(1.0f / std::sqrt(var + eps));
  for (int64_t j = 0; j < dim; j += 16) {
    const __mmask16 m = TailMask(dim - j);
    const __m512 d = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), vmean), rstd);
    const __m512 bias = b != nullptr ? _mm512_maskz_loadu_ps(m, b + j) : _mm512_setzero_ps();
    _mm512_mask_storeu_ps(y + j, m, _mm512_fmadd_ps(d, _mm512_maskz_loadu_ps(m, w + j), bias));
  }
}

// ---- Elementwise. ----

// silu(g) * u = g / (1 + exp(-g)) * u.
void SiluMulScalar(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

LLMSERVE_TARGET_AVX512 void SiluMulAvx512(const float* gate, const float* up, int64_t n, float* out) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 e = simd::Exp(_mm512_sub_ps(_mm512_setzero_ps(), g));
    const __m512 s = _mm512_div_ps(g, _mm512_add_ps(one, e));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, up + i)));
  }
}

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

void GeluTanhScalar(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v)));
  }
}

// 0.5 x (1 + tanh(u)) == x / (1 + exp(-2u)): one exp, no cancellation near u = 0.
LLMSERVE_TARGET_AVX512 void GeluTanhAvx512(float* x, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 c = _mm512_set1_ps(kGeluCubic);
  const __m512 minus_2k = _mm512_set1_ps(-2.0f * kSqrt2OverPi);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __m512 inner = _mm512_fmadd_ps(_mm512_mul_ps(c, v), _mm512_mul_ps(v, v), v);  // v + c v^3
    const __m512 e = simd::Exp(_mm512_mul_ps(minus_2k, inner));
    _mm512_mask_storeu_ps(x + i, m, _mm512_div_ps(v, _mm512_add_ps(one, e)));
  }
}

void AddScalar(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

LLMSERVE_TARGET_AVX512 void AddAvx512(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + i), _mm512_maskz_loadu_ps(m, x + i)));
  }
}

// Runs fn(begin, count) over [0, n) in chunks, in parallel when n is large.
template <typename Fn>
void ForChunks(int64_t n, Fn fn) {
  if (n < kParallelWork) {
    if (n > 0) fn(0, n);
    return;
  }
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) fn(c * kChunk, std::min(kChunk, n - c * kChunk));
}

}  // namespace

void RmsNormHeads(Isa isa, float* x, int64_t rows, int64_t row_stride, int64_t heads, int64_t dim, const float* w,
                  float eps) {
  const auto row = HasAvx512(isa) ? RmsNormRowAvx512 : RmsNormRowScalar;
#pragma omp parallel for schedule(static) if (rows > 1 && rows * heads * dim >= kParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x + r * row_stride + h * dim;
      row(v, w, dim, eps, v);
    }
  }
}

void RmsNorm(Isa isa, const float* x, const float* w, int64_t rows, int64_t dim, float eps, float* y) {
  const auto row = HasAvx512(isa) ? RmsNormRowAvx512 : RmsNormRowScalar;
#pragma omp parallel for schedule(static) if (rows > 1 && rows * dim >= kParallelWork)
  for (int64_t r = 0; r < rows; ++r) row(x + r * dim, w, dim, eps, y + r * dim);
}

void LayerNorm(Isa isa, const float* x, const float* w, const float* b, int64_t rows, int64_t dim, float eps,
               float* y) {
  const auto row = HasAvx512(isa) ? LayerNormRowAvx512 : LayerNormRowScalar;
#pragma omp parallel for schedule(static) if (rows > 1 && rows * dim >= kParallelWork)
  for (int64_t r = 0; r < rows; ++r) row(x + r * dim, w, b, dim, eps, y + r * dim);
}

void SiluMul(Isa isa, const float* gate, const float* up, int64_t n, float* out) {
  const auto fn = HasAvx512(isa) ? SiluMulAvx512 : SiluMulScalar;
  ForChunks(n, [&](int64_t i, int64_t k) { fn(gate + i, up + i, k, out + i); });
}

void GeluTanh(Isa isa, float* x, int64_t n) {
  const auto fn = HasAvx512(isa) ? GeluTanhAvx512 : GeluTanhScalar;
  ForChunks(n, [&](int64_t i, int64_t k) { fn(x + i, k); });
}

void AddInPlace(Isa isa, float* y, const float* x, int64_t n) {
  const auto fn = HasAvx512(isa) ? AddAvx512 : AddScalar;
  ForChunks(n, [&](int64_t i, int64_t k) { fn(y + i, x + i, k); });
}

}  // namespace llmserve
