// Rotary position embedding: inverse frequencies (with Llama 3 / linear scaling) and the
// rotation in both pair layouts. Angles are computed in float exactly as llama2.c's
// run.c and HF transformers (float32) do: inv_freq = 1 / powf(theta, 2i / rope_dim),
// angle = (float)pos * inv_freq, cosf/sinf.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "model/fp_contract.h"
#include "model/ops/kernels.h"
#include "model/ops/simd_math.h"

#if defined(__clang__)
#pragma clang fp contract(off)  // see model/fp_contract.h
#endif

namespace llmserve {

namespace {
// Rows below which the rotation stays on the calling thread.
constexpr int64_t kParallelRows = 16;

// One row's heads rotated with AVX-512, bit for bit as the scalar loop: the same
// products, and x·c + (y·(−s)) is x·c − y·s exactly (fp-contract is off, so no FMA
// rounds differently). Interleaved: 8 pairs per vector, cos/sin repeated per pair and
// the pair swapped in-lane; half: 16 dims of each half per vector.
__attribute__((target("avx512f,avx512bw,avx512vl"))) LLMSERVE_FP_CONTRACT_OFF void RotateRowAvx512(
    float* row, int64_t heads, int64_t head_dim, int64_t rope_dim, int64_t half, const float* cos_r,
    const float* sin_r, RopeLayout layout) {
  if (layout == RopeLayout::kInterleaved) {
    // Lane 2j and 2j+1 take cos/sin of pair j; even lanes subtract (x c − y s), odd add.
    const __m512i dup = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    const __m512i sign = _mm512_set1_epi64(static_cast<int64_t>(0x80000000u));  // even lanes' sign bit
    for (int64_t i = 0; i < half; i += 8) {
      const __mmask16 m = simd::TailMask(2 * (half - i));
      const __mmask8 pm = static_cast<__mmask8>(half - i >= 8 ? 0xff : (1u << (half - i)) - 1u);
      const __m512 c = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_maskz_loadu_ps(pm, cos_r + i)));
      const __m512 s = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_maskz_loadu_ps(pm, sin_r + i)));
      const __m512 sn = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(s), sign));  // (−s, s) per pair
      for (int64_t h = 0; h < heads; ++h) {
        float* v = row + h * head_dim + 2 * i;
        const __m512 x = _mm512_maskz_loadu_ps(m, v);
        const __m512 swapped = _mm512_permute_ps(x, 0xB1);  // (y, x) per pair
        _mm512_mask_storeu_ps(v, m, _mm512_add_ps(_mm512_mul_ps(x, c), _mm512_mul_ps(swapped, sn)));
      }
    }
  } else {
    const int64_t off = rope_dim / 2;
    for (int64_t i = 0; i < half; i += 16) {
      const __mmask16 m = simd::TailMask(half - i);
      const __m512 c = _mm512_maskz_loadu_ps(m, cos_r + i);
      const __m512 sn = _mm512_maskz_loadu_ps(m, sin_r + i);
      for (int64_t h = 0; h < heads; ++h) {
        float* v = row + h * head_dim + i;
        const __m512 x = _mm512_maskz_loadu_ps(m, v);
        const __m512 y = _mm512_maskz_loadu_ps(m, v + off);
        _mm512_mask_storeu_ps(v, m, _mm512_sub_ps(_mm512_mul_ps(x, c), _mm512_mul_ps(y, sn)));
        _mm512_mask_storeu_ps(v + off, m, _mm512_add_ps(_mm512_mul_ps(x, sn), _mm512_mul_ps(y, c)));
      }
    }
  }
}
}  // namespace

namespace {

// 1 / (factor[i] · theta^(2i / rope_dim)), as HF's _compute_longrope_parameters (float32).
std::vector<float> LongRopeInvFreq(const ModelConfig& config, const std::vector<float>& factor) {
  const int64_t rope_dim = config.rope_dim > 0 ? config.rope_dim : config.head_dim;
  const int64_t half = std::min<int64_t>(rope_dim / 2, static_cast<int64_t>(factor.size()));
  std::vector<float> inv_freq(static_cast<size_t>(std::max<int64_t>(half, 0)));
  for (int64_t i = 0; i < half; ++i) {
    inv_freq[i] =
        1.0f / (factor[i] * powf(config.rope_theta, static_cast<float>(2 * i) / static_cast<float>(rope_dim)));
  }
  return inv_freq;
}

}  // namespace

RopeFrequencies RopeFrequenciesFor(const ModelConfig& config) {
  RopeFrequencies f;
  f.inv_freq = RopeInvFreq(config);
  const RopeScaling& s = config.rope_scaling;
  if (s.kind == RopeScalingKind::kLongRope) {
    f.long_inv_freq = LongRopeInvFreq(config, s.long_factor);
    f.long_from = s.original_context;  // p + 1 > original  <=>  p >= original
    f.mscale = s.attention_factor;
  }
  return f;
}

std::vector<float> RopeInvFreq(const ModelConfig& config) {
  const int64_t rope_dim = config.rope_dim > 0 ? config.rope_dim : config.head_dim;
  const int64_t half = rope_dim / 2;
  std::vector<float> inv_freq(static_cast<size_t>(std::max<int64_t>(half, 0)));
  for (int64_t i = 0; i < half; ++i) {
    // run.c: 1.0f / powf(10000.0f, head_dim / (float)head_size) with head_dim = 2i.
    inv_freq[i] = 1.0f / powf(config.rope_theta, static_cast<float>(2 * i) / static_cast<float>(rope_dim));
  }
  const RopeScaling& s = config.rope_scaling;
  switch (s.kind) {
    case RopeScalingKind::kNone:
      break;
    case RopeScalingKind::kLongRope:
      return LongRopeInvFreq(config, s.short_factor);
    case RopeScalingKind::kLinear:
      for (float& f : inv_freq) f /= s.factor;
      break;
    case RopeScalingKind::kLlama3: {
      // HF transformers _compute_llama3_parameters: long wavelengths are slowed by
      // `factor`, short ones are kept, the band between is interpolated smoothly.
      const double orig = static_cast<double>(s.original_context);
      const double low_freq_wavelen = orig / s.low_freq_factor;
      const double high_freq_wavelen = orig / s.high_freq_factor;
      for (float& f : inv_freq) {
        const double inv = f;
        const double wavelen = 2.0 * std::numbers::pi / inv;
        double scaled;
        if (wavelen > low_freq_wavelen) {
          scaled = inv / s.factor;
        } else if (wavelen < high_freq_wavelen) {
          scaled = inv;
        } else {
          const double smooth = (orig / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
          scaled = (1.0 - smooth) * inv / s.factor + smooth * inv;
        }
        f = static_cast<float>(scaled);
      }
      break;
    }
  }
  return inv_freq;
}

void RopeTable(const int32_t* positions, int64_t rows, const std::vector<float>& inv_freq, float* table) {
  const int64_t half = static_cast<int64_t>(inv_freq.size());
#pragma omp parallel for schedule(static) if (rows >= kParallelRows)
  for (int64_t r = 0; r < rows; ++r) {
    float* t = table + r * 2 * half;
    const float pos = static_cast<float>(positions[r]);
    for (int64_t i = 0; i < half; ++i) {
      const float angle = pos * inv_freq[i];
      t[i] = cosf(angle);
      t[half + i] = sinf(angle);
    }
  }
}

void RopeTable(const int32_t* positions, int64_t rows, const RopeFrequencies& freqs, float* table) {
  if (freqs.long_inv_freq.empty() && freqs.mscale == 1.0f) {
    RopeTable(positions, rows, freqs.inv_freq, table);
    return;
  }
  const int64_t half = static_cast<int64_t>(freqs.inv_freq.size());
  const bool has_long = static_cast<int64_t>(freqs.long_inv_freq.size()) == half;
  const float mscale = freqs.mscale;
#pragma omp parallel for schedule(static) if (rows >= kParallelRows)
  for (int64_t r = 0; r < rows; ++r) {
    float* t = table + r * 2 * half;
    const float pos = static_cast<float>(positions[r]);
    const std::vector<float>& inv = has_long && positions[r] >= freqs.long_from ? freqs.long_inv_freq : freqs.inv_freq;
    for (int64_t i = 0; i < half; ++i) {
      const float angle = pos * inv[i];
      t[i] = cosf(angle) * mscale;  // HF: cos = emb.cos() * attention_scaling
      t[half + i] = sinf(angle) * mscale;
    }
  }
}

void ApplyRopeTable(Isa isa, float* x, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
                    int64_t rope_dim, const float* table, int64_t table_half, RopeLayout layout) {
  const int64_t half = std::min<int64_t>(rope_dim / 2, table_half);
  const bool avx512 = HasAvx512(isa);
#pragma omp parallel for schedule(static) if (rows >= kParallelRows)
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * row_stride;
    const float* cos_r = table + r * 2 * table_half;
    const float* sin_r = cos_r + table_half;
    if (avx512) {
      RotateRowAvx512(row, heads, head_dim, rope_dim, half, cos_r, sin_r, layout);
      continue;
    }
    for (int64_t i = 0; i < half; ++i) {
      const float fcr = cos_r[i];
      const float fci = sin_r[i];
      // Interleaved: (2i, 2i+1), as run.c. Half: (i, i + rope_dim/2), as HF rotate_half.
      const int64_t a = layout == RopeLayout::kInterleaved ? 2 * i : i;
      const int64_t b = layout == RopeLayout::kInterleaved ? 2 * i + 1 : i + rope_dim / 2;
      for (int64_t h = 0; h < heads; ++h) {
        float* v = row + h * head_dim;
        const float v0 = v[a];
        const float v1 = v[b];
        v[a] = v0 * fcr - v1 * fci;
        v[b] = v0 * fci + v1 * fcr;
      }
    }
  }
}

void ApplyRope(Isa isa, float* x, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
               int64_t rope_dim, const int32_t* positions, const std::vector<float>& inv_freq, RopeLayout layout) {
  thread_local std::vector<float> table;
  const int64_t half = static_cast<int64_t>(inv_freq.size());
  if (table.size() < static_cast<size_t>(rows * 2 * half)) table.resize(static_cast<size_t>(rows * 2 * half));
  RopeTable(positions, rows, inv_freq, table.data());
  ApplyRopeTable(isa, x, rows, row_stride, heads, head_dim, rope_dim, table.data(), half, layout);
}

}  // namespace llmserve
