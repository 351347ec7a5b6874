// The AVX-512 VNNI kernel of quant_gemm.h (same values as quant_gemm_ref.cc, bit for bit).
//
// A tile is R activation rows × P groups (16 outputs each): R · P f32 accumulators stay in
// registers over the whole k range. For every sub-block, each group's 8 k-quad vectors
// are unpacked once in registers (nibbles masked / shifted, high bits merged with one
// ternary-logic op) and used by all R rows: per row 8 vpdpbusd, each broadcasting 4 of
// the row's int8 activations to the 16 lanes, then one convert, one multiply and one or
// two FMAs apply the scales. Rows are processed R at a time over the same P groups, so
// the weights are read from memory by the first row tile only (later tiles find them in
// L2); the first tile also prefetches its streams a fixed distance ahead.
#include <cstring>

#include "model/ops/simd_math.h"
#include "model/quant/quant_gemm.h"

namespace llmserve::quant_internal {
namespace {

#define LLMSERVE_TARGET_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

constexpr int kTileGroups = 4;  // P: groups per tile
constexpr int kTileRows = 4;    // R: activation rows per tile
// The first row tile prefetches its stream this far ahead into L2 (into L1, or less far,
// the stream keeps fewer misses in flight: bench/quant_gemm_bench's read_fraction).
constexpr int64_t kPrefetchBytes = 32768;

constexpr int SubBlocks(QuantType t) { return UnitLayoutOf(t).elems / 32; }
constexpr bool Is5Bit(QuantType t) {
  return t == QuantType::kQ5_0 || t == QuantType::kQ5_1 || t == QuantType::kQ5_K;
}
// log2 of the fixed offset (value = scale · (q − offset)), -1 for formats with a min.
constexpr int OffsetShift(QuantType t) {
  switch (t) {
    case QuantType::kQ8_0: return 7;
    case QuantType::kQ4_0: return 3;
    case QuantType::kQ5_0: return 4;
    case QuantType::kQ6_K: return 5;
    default: return -1;
  }
}

// The 8 k-quad vectors of sub-block s of a unit.
template <QuantType T>
LLMSERVE_TARGET_VNNI inline void Unpack(const uint8_t* unit, int s, __m512i (&wq)[8]) {
  constexpr UnitLayout L = UnitLayoutOf(T);
  if constexpr (T == QuantType::kQ8_0) {
    for (int i = 0; i < 8; ++i) wq[i] = _mm512_loadu_si512(unit + 64 * i);
    return;
  } else {
    const __m512i lo4 = _mm512_set1_epi8(0x0F);
    const uint8_t* nib = unit + 256 * s;
    for (int v = 0; v < 4; ++v) {
      const __m512i raw = _mm512_loadu_si512(nib + 64 * v);
      wq[2 * v] = _mm512_and_si512(raw, lo4);
      wq[2 * v + 1] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), lo4);
    }
    if constexpr (Is5Bit(T)) {
      const __m512i bit4 = _mm512_set1_epi8(0x10);
      const __m512i hb = _mm512_loadu_si512(unit + L.high + 64 * s);
      // Bit i of each byte goes to bit 4 (shifts within 32-bit lanes; no neighbouring
      // byte reaches bit 4 for these shift counts).
      wq[0] = _mm512_ternarylogic_epi32(wq[0], _mm512_slli_epi32(hb, 4), bit4, 0xF8);
      wq[1] = _mm512_ternarylogic_epi32(wq[1], _mm512_slli_epi32(hb, 3), bit4, 0xF8);
      wq[2] = _mm512_ternarylogic_epi32(wq[2], _mm512_slli_epi32(hb, 2), bit4, 0xF8);
      wq[3] = _mm512_ternarylogic_epi32(wq[3], _mm512_slli_epi32(hb, 1), bit4, 0xF8);
      wq[4] = _mm512_ternarylogic_epi32(wq[4], hb, bit4, 0xF8);
      wq[5] = _mm512_ternarylogic_epi32(wq[5], _mm512_srli_epi32(hb, 1), bit4, 0xF8);
      wq[6] = _mm512_ternarylogic_epi32(wq[6], _mm512_srli_epi32(hb, 2), bit4, 0xF8);
      wq[7] = _mm512_ternarylogic_epi32(wq[7], _mm512_srli_epi32(hb, 3), bit4, 0xF8);
    }
    if constexpr (T == QuantType::kQ6_K) {
      const __m512i bits45 = _mm512_set1_epi8(0x30);
      for (int h = 0; h < 2; ++h) {
        const __m512i hb = _mm512_loadu_si512(unit + L.high + 128 * s + 64 * h);
        // Bits 2i, 2i+1 of each byte go to bits 4, 5.
        wq[4 * h + 0] = _mm512_ternarylogic_epi32(wq[4 * h + 0], _mm512_slli_epi32(hb, 4), bits45, 0xF8);
        wq[4 * h + 1] = _mm512_ternarylogic_epi32(wq[4 * h + 1], _mm512_slli_epi32(hb, 2), bits45, 0xF8);
        wq[4 * h + 2] = _mm512_ternarylogic_epi32(wq[4 * h + 2], hb, bits45, 0xF8);
        wq[4 * h + 3] = _mm512_ternarylogic_epi32(wq[4 * h + 3], _mm512_srli_epi32(hb, 2), bits45, 0xF8);
      }
    }
  }
}

LLMSERVE_TARGET_VNNI inline __m512 HalfVec(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

LLMSERVE_TARGET_VNNI inline __m512 U8Vec(const uint8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

LLMSERVE_TARGET_VNNI inline __m512 I8Vec(const uint8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// Four int8 activations as one 32-bit lane pattern (folded into vpdpbusd's broadcast).
using AliasedInt = int32_t __attribute__((may_alias, aligned(1)));
LLMSERVE_TARGET_VNNI inline __m512i Bcast4(const int8_t* p) {
  return _mm512_set1_epi32(*reinterpret_cast<const AliasedInt*>(p));
}

// Integer dot product of k-quads [0, N) with one row's activations at xq, as two
// independent chains of vpdpbusd (integer sums: the same result in any order).
template <int N>
LLMSERVE_TARGET_VNNI inline __m512i Dot(__m512i init, const __m512i* wq, const int8_t* xq) {
  __m512i a = init, b = _mm512_setzero_si512();
#pragma GCC unroll 8
  for (int i = 0; i < N; i += 2) {
    a = _mm512_dpbusd_epi32(a, wq[i], Bcast4(xq + 4 * i));
    b = _mm512_dpbusd_epi32(b, wq[i + 1], Bcast4(xq + 4 * i + 4));
  }
  return _mm512_add_epi32(a, b);
}

// One row tile: rows [r0, r0 + R) of `a`, groups [g, g + P) of `w`, whose unit 0 is at
// `first` and unit u of group g + p at first + u · unit_stride + p · unit bytes (P groups
// of one panel, interleaved: packed_layout.h).
template <QuantType T, int R, int P>
LLMSERVE_TARGET_VNNI void Tile(const PackedQuantMatrix& w, int64_t g, const uint8_t* first, int64_t unit_stride,
                               const QuantizedActs& a, int64_t r0, bool prefetch, const float* bias, float* y,
                               int64_t ldy) {
  constexpr UnitLayout L = UnitLayoutOf(T);
  constexpr int kSubs = SubBlocks(T);
  constexpr int kShift = OffsetShift(T);
  constexpr bool kBlockMin = T == QuantType::kQ4_1 || T == QuantType::kQ5_1;
  constexpr bool kSubMin = T == QuantType::kQ4_K || T == QuantType::kQ5_K;
  const int64_t lines = unit_stride / 64;  // cache lines of the stream per unit
  __m512 acc[R][P];
  for (int r = 0; r < R; ++r) {
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  }
  const int64_t xs = a.cols, bs = a.blocks;
  const int8_t* xq = a.q + r0 * xs;
  const float* xd = a.d + r0 * bs;
  const float* xdsum = a.dsum + r0 * bs;
  const int32_t* n32 = a.nsum32 + r0 * bs;
  const int32_t* n16 = a.nsum16 + r0 * 2 * bs;

  for (int64_t u = 0; u < w.units; ++u) {
    const uint8_t* units = first + u * unit_stride;
    for (int s = 0; s < kSubs; ++s) {
      const int64_t blk = u * kSubs + s;
      if (prefetch) {
        for (int64_t c = s * lines / kSubs; c < (s + 1) * lines / kSubs; ++c) {
          _mm_prefetch(reinterpret_cast<const char*>(units) + kPrefetchBytes + 64 * c, _MM_HINT_T1);
        }
      }
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) {
        const uint8_t* unit = units + p * L.bytes;
        __m512i wq[8];
        Unpack<T>(unit, s, wq);
        if constexpr (T == QuantType::kQ6_K) {
          const __m512 dv = HalfVec(unit + L.d);
          const __m512 s0 = _mm512_mul_ps(dv, I8Vec(unit + L.scales + 32 * s));
          const __m512 s1 = _mm512_mul_ps(dv, I8Vec(unit + L.scales + 32 * s + 16));
#pragma GCC unroll 4
          for (int r = 0; r < R; ++r) {
            const int8_t* x = xq + r * xs + 32 * blk;
            const __m512 d = _mm512_set1_ps(xd[r * bs + blk]);
            const __m512i i0 = Dot<4>(_mm512_slli_epi32(_mm512_set1_epi32(n16[r * 2 * bs + 2 * blk]), kShift), wq, x);
            const __m512i i1 =
                Dot<4>(_mm512_slli_epi32(_mm512_set1_epi32(n16[r * 2 * bs + 2 * blk + 1]), kShift), wq + 4, x + 16);
            acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(i0), d), s0, acc[r][p]);
            acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(i1), d), s1, acc[r][p]);
          }
        } else {
          __m512 sv;
          [[maybe_unused]] __m512 mn;
          if constexpr (IsKQuant(T)) {
            sv = _mm512_mul_ps(HalfVec(unit + L.d), U8Vec(unit + L.scales + 16 * s));
            mn = _mm512_mul_ps(HalfVec(unit + L.m), U8Vec(unit + L.mins + 16 * s));
          } else {
            sv = HalfVec(unit + L.d);
            if constexpr (kBlockMin) mn = HalfVec(unit + L.m);
          }
#pragma GCC unroll 4
          for (int r = 0; r < R; ++r) {
            __m512i i0;
            if constexpr (kShift >= 0) {
              i0 = _mm512_slli_epi32(_mm512_set1_epi32(n32[r * bs + blk]), kShift);
            } else {
              i0 = _mm512_setzero_si512();
            }
            i0 = Dot<8>(i0, wq, xq + r * xs + 32 * blk);
            const __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(i0), _mm512_set1_ps(xd[r * bs + blk]));
            acc[r][p] = _mm512_fmadd_ps(v, sv, acc[r][p]);
            if constexpr (kBlockMin) {
              acc[r][p] = _mm512_fmadd_ps(mn, _mm512_set1_ps(xdsum[r * bs + blk]), acc[r][p]);
            } else if constexpr (kSubMin) {
              acc[r][p] = _mm512_fnmadd_ps(mn, _mm512_set1_ps(xdsum[r * bs + blk]), acc[r][p]);
            }
          }
        }
      }
    }
  }
  for (int p = 0; p < P; ++p) {
    const int64_t col = (g + p) * kQuantGroupRows;
    const __mmask16 mask = simd::TailMask(w.rows - col);
    const __m512 b = bias != nullptr ? _mm512_maskz_loadu_ps(mask, bias + col) : _mm512_setzero_ps();
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(y + (r0 + r) * ldy + col, mask, _mm512_add_ps(acc[r][p], b));
  }
}

// All rows of `a` for groups [g, g + P) (see Tile), R rows at a time; the first tile
// streams the weights from memory (and prefetches), the others find them in L2.
template <QuantType T, int P>
LLMSERVE_TARGET_VNNI void Groups(const PackedQuantMatrix& w, int64_t g, const uint8_t* first, int64_t unit_stride,
                                 const QuantizedActs& a, const float* bias, float* y, int64_t ldy) {
  int64_t r0 = 0;
  for (; r0 + kTileRows <= a.m; r0 += kTileRows) {
    Tile<T, kTileRows, P>(w, g, first, unit_stride, a, r0, r0 == 0, bias, y, ldy);
  }
  const bool pf = r0 == 0;
  switch (a.m - r0) {
    case 1: Tile<T, 1, P>(w, g, first, unit_stride, a, r0, pf, bias, y, ldy); break;
    case 2: Tile<T, 2, P>(w, g, first, unit_stride, a, r0, pf, bias, y, ldy); break;
    case 3: Tile<T, 3, P>(w, g, first, unit_stride, a, r0, pf, bias, y, ldy); break;
    default: break;
  }
  static_assert(kTileRows == 4, "the tail switch covers 1..3 rows");
}

template <QuantType T>
void GemmOf(const PackedQuantMatrix& w, int64_t g0, int64_t g1, const QuantizedActs& a, const float* bias, float* y,
            int64_t ldy) {
  static_assert(kTileGroups == kQuantPanelGroups, "a tile is one panel");
  for (int64_t g = g0; g < g1;) {
    const int64_t pg = w.panel_groups(g);
    const int64_t stride = pg * w.unit_bytes;
    if (g % kQuantPanelGroups == 0 && pg == kQuantPanelGroups && g + pg <= g1) {
      Groups<T, kTileGroups>(w, g, w.unit(g, 0), stride, a, bias, y, ldy);
      g += pg;
    } else {
      Groups<T, 1>(w, g, w.unit(g, 0), stride, a, bias, y, ldy);
      ++g;
    }
  }
}

}  // namespace

LLMSERVE_TARGET_VNNI void QuantizeActsAvx512(const float* x, int64_t in, int64_t r0, int64_t r1,
                                             const QuantizedActs& a) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * in;
    int8_t* q = a.q + r * a.cols;
    for (int64_t b = 0; b < a.blocks; ++b) {
      const int64_t k0 = 32 * b;
      const __mmask16 m0 = k0 < in ? simd::TailMask(in - k0) : 0;
      const __mmask16 m1 = k0 + 16 < in ? simd::TailMask(in - k0 - 16) : 0;
      const __m512 x0 = _mm512_maskz_loadu_ps(m0, xr + k0);
      const __m512 x1 = _mm512_maskz_loadu_ps(m1, xr + k0 + 16);
      const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, _mm512_set1_ps(id)));
      const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, _mm512_set1_ps(id)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + k0), _mm512_cvtepi32_epi8(q0));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + k0 + 16), _mm512_cvtepi32_epi8(q1));
      const int32_t s0 = _mm512_reduce_add_epi32(q0), s1 = _mm512_reduce_add_epi32(q1);
      const size_t i = static_cast<size_t>(r * a.blocks + b);
      a.d[i] = d;
      a.dsum[i] = d * static_cast<float>(s0 + s1);
      a.nsum32[i] = -(s0 + s1);
      a.nsum16[2 * i] = -s0;
      a.nsum16[2 * i + 1] = -s1;
    }
  }
}

void QuantGemmAvx512(const PackedQuantMatrix& w, int64_t g0, int64_t g1, const QuantizedActs& a, const float* bias,
                     float* y, int64_t ldy) {
  switch (w.type) {
    case QuantType::kQ4_0: return GemmOf<QuantType::kQ4_0>(w, g0, g1, a, bias, y, ldy);
    case QuantType::kQ4_1: return GemmOf<QuantType::kQ4_1>(w, g0, g1, a, bias, y, ldy);
    case QuantType::kQ5_0: return GemmOf<QuantType::kQ5_0>(w, g0, g1, a, bias, y, ldy);
    case QuantType::kQ5_1: return GemmOf<QuantType::kQ5_1>(w, g0, g1, a, bias, y, ldy);
    case QuantType::kQ8_0: return GemmOf<QuantType::kQ8_0>(w, g0, g1, a, bias, y, ldy);
    case QuantType::kQ4_K: return GemmOf<QuantType::kQ4_K>(w, g0, g1, a, bias, y, ldy);
    case QuantType::kQ5_K: return GemmOf<QuantType::kQ5_K>(w, g0, g1, a, bias, y, ldy);
    case QuantType::kQ6_K: return GemmOf<QuantType::kQ6_K>(w, g0, g1, a, bias, y, ldy);
    case QuantType::kNone: return;
  }
}

}  // namespace llmserve::quant_internal
