// The AVX-512 VNNI kernel of quant_gemm.h (same values as quant_gemm_ref.cc, bit for bit).
//
// A tile is R activation rows × P groups (16 outputs each): R · P f32 accumulators stay in
// registers over the whole k range. For every sub-block, each group's 8 k-quad vectors
// are unpacked once in registers (nibbles masked / shifted, high bits merged with one
// ternary-logic op) and used by all R rows: per row 8 vpdpbusd, each broadcasting 4 of
// the row's int8 activations to the 16 lanes, then one convert, one multiply and one or
// two FMAs apply the scales. Rows are processed R at a time over the same P groups, so
// the weights are read from memory by the first row tile only (later tiles find them in
// L2); the first tile also prefetches its stream a fixed distance ahead.
#include <algorithm>
#include <cstring>
#include <utility>

#include "model/ops/simd_math.h"
#include "model/quant/quant_gemm.h"

// Everything below is compiled for AVX-512 VNNI (lambdas included, which a function's
// target attribute would not reach); it runs only where QuantKernelSupported says so.
#ifdef __clang__  // clang's form of GCC's target section (the fuzz build uses clang)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni")
#endif

namespace llmserve::quant_internal {
namespace {

#define LLMSERVE_TARGET_VNNI

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

// A row's record (QuantizedActs: its 32 int8 activations, their scale and sums) is read by
// broadcast memory operands, written in asm with the record's address in a register and
// the field's offset as a displacement. Left to itself, the compiler keeps the broadcasts
// in registers across the tile's groups, or gives every (row, field) address its own
// induction variable; either way it runs out of registers and spills the accumulators.
// The asm reads memory its operands do not declare: nothing inside a tile writes the
// records (QuantizeActs fills them before the tile is called), and it is volatile so that
// the compiler neither drops nor merges the identical reads of a tile's groups.

// acc += the unsigned codes w · the 4 int8 activations at rec + kOff broadcast to every lane.
template <int kOff>
LLMSERVE_TARGET_VNNI inline __m512i DotStep(__m512i acc, __m512i w, const uint8_t* rec) {
  __asm__ volatile("vpdpbusd %c3(%2)%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "r"(rec), "i"(kOff));
  return acc;
}
// v · the float at rec + kOff in every lane.
template <int kOff>
LLMSERVE_TARGET_VNNI inline __m512 MulBcast(__m512 v, const uint8_t* rec) {
  __m512 r;
  __asm__ volatile("vmulps %c3(%2)%{1to16%}, %1, %0" : "=v"(r) : "v"(v), "r"(rec), "i"(kOff));
  return r;
}
// acc − v · the float at rec + kOff in every lane.
template <int kOff>
LLMSERVE_TARGET_VNNI inline __m512 FnmaddBcast(__m512 acc, __m512 v, const uint8_t* rec) {
  __asm__ volatile("vfnmadd231ps %c3(%2)%{1to16%}, %1, %0" : "+v"(acc) : "v"(v), "r"(rec), "i"(kOff));
  return acc;
}
// acc + v · the float at rec + kOff in every lane.
template <int kOff>
LLMSERVE_TARGET_VNNI inline __m512 FmaddBcast(__m512 acc, __m512 v, const uint8_t* rec) {
  __asm__ volatile("vfmadd231ps %c3(%2)%{1to16%}, %1, %0" : "+v"(acc) : "v"(v), "r"(rec), "i"(kOff));
  return acc;
}
// The int32 at rec + kOff shifted left by kShift, in every lane.
template <int kOff, int kShift>
LLMSERVE_TARGET_VNNI inline __m512i ShiftBcast(const uint8_t* rec) {
  __m512i r;
  __asm__ volatile("vpslld %3, %c2(%1)%{1to16%}, %0" : "=v"(r) : "r"(rec), "i"(kOff), "i"(kShift));
  return r;
}

// Integer dot product of k-quads [0, N) with the activations at rec + kOff (k-quad i at
// rec + kOff + 4i), as two independent chains of vpdpbusd (integer sums: the same result
// in any order).
template <int N, int kOff>
LLMSERVE_TARGET_VNNI inline __m512i Dot(__m512i init, const __m512i* wq, const uint8_t* rec) {
  __m512i a = init, b = _mm512_setzero_si512();
  [&]<int... i>(std::integer_sequence<int, i...>) __attribute__((always_inline)) {
    ((a = DotStep<kOff + 8 * i>(a, wq[2 * i], rec), b = DotStep<kOff + 8 * i + 4>(b, wq[2 * i + 1], rec)), ...);
  }(std::make_integer_sequence<int, N / 2>{});
  return _mm512_add_epi32(a, b);
}

constexpr bool HasBlockMin(QuantType t) { return t == QuantType::kQ4_1 || t == QuantType::kQ5_1; }
constexpr bool HasSubMin(QuantType t) { return t == QuantType::kQ4_K || t == QuantType::kQ5_K; }

// One sub-block (32 k) of one group, ready for the dot products: the 8 k-quad code
// vectors, the scale of each integer sum (s1: Q6_K's second half), the min where the
// format has one.
struct SubWeights {
  __m512i wq[8];
  __m512 s0, s1, mn;
};

// Sub-blocks read from the packed layout and unpacked in registers.
template <QuantType T>
struct PackedSource {
  static constexpr UnitLayout L = UnitLayoutOf(T);
  const uint8_t* first;  // unit 0 of the tile's first group
  int64_t unit_stride;   // bytes from unit u to u + 1 of a group (the panel's groups interleave)
  int64_t lead = kPrefetchBytes;  // how far ahead of unit u Prefetch reaches

  // Lines of unit u's stream prefetched per share, when its prefetch is spread over `parts`
  // shares (the unit's sub-block steps × groups, so that they go out evenly between the loads).
  int64_t PrefetchShare(int parts) const { return (unit_stride / 64 + parts - 1) / parts; }
  // Share `part` (of PrefetchShare(parts) lines) of unit u's prefetch.
  LLMSERVE_TARGET_VNNI void Prefetch(int64_t u, int part, int64_t share) const {
    const char* at = reinterpret_cast<const char*>(first + u * unit_stride) + lead;
    const int64_t end = std::min(unit_stride / 64, (part + 1) * share);
    for (int64_t c = part * share; c < end; ++c) _mm_prefetch(at + 64 * c, _MM_HINT_T1);
  }

  LLMSERVE_TARGET_VNNI void Get(int64_t u, int s, int p, SubWeights& w) const {
    const uint8_t* unit = first + u * unit_stride + p * L.bytes;
    Unpack<T>(unit, s, w.wq);
    if constexpr (T == QuantType::kQ6_K) {
      const __m512 dv = HalfVec(unit + L.d);
      w.s0 = _mm512_mul_ps(dv, I8Vec(unit + L.scales + 32 * s));
      w.s1 = _mm512_mul_ps(dv, I8Vec(unit + L.scales + 32 * s + 16));
    } else if constexpr (IsKQuant(T)) {
      w.s0 = _mm512_mul_ps(HalfVec(unit + L.d), U8Vec(unit + L.scales + 16 * s));
      w.mn = _mm512_mul_ps(HalfVec(unit + L.m), U8Vec(unit + L.mins + 16 * s));
    } else {
      w.s0 = HalfVec(unit + L.d);
      if constexpr (HasBlockMin(T)) w.mn = HalfVec(unit + L.m);
    }
  }
};

// Sub-blocks of a panel unpacked once into a scratch buffer (UnpackPanel), for the many
// row tiles of a prefill: per (unit, sub-block, group) the code vectors, then the scale
// vector(s) and the min vector.
template <QuantType T>
struct ScratchSource {
  static constexpr int kScales = T == QuantType::kQ6_K ? 2 : 1;
  static constexpr int kMins = HasBlockMin(T) || HasSubMin(T) ? 1 : 0;
  static constexpr int64_t kEntry = 64 * (8 + kScales + kMins);  // bytes per (u, s, p)
  const uint8_t* base;
  int groups;  // P of the tiles that read it
  const uint8_t* At(int64_t u, int s, int p) const { return base + ((u * SubBlocks(T) + s) * groups + p) * kEntry; }

  LLMSERVE_TARGET_VNNI void Get(int64_t u, int s, int p, SubWeights& w) const {
    const uint8_t* e = At(u, s, p);
    for (int i = 0; i < 8; ++i) w.wq[i] = _mm512_load_si512(e + 64 * i);
    w.s0 = _mm512_load_ps(e + 512);
    if constexpr (kScales == 2) w.s1 = _mm512_load_ps(e + 576);
    if constexpr (kMins == 1) w.mn = _mm512_load_ps(e + 512 + 64 * kScales);
  }

  // Writes what `src` reads for groups [0, groups) of its panel into the scratch.
  LLMSERVE_TARGET_VNNI void Fill(const PackedSource<T>& src, int64_t units) const {
    for (int64_t u = 0; u < units; ++u) {
      for (int s = 0; s < SubBlocks(T); ++s) {
        for (int p = 0; p < groups; ++p) {
          SubWeights w;
          src.Get(u, s, p, w);
          uint8_t* e = const_cast<uint8_t*>(At(u, s, p));
          for (int i = 0; i < 8; ++i) _mm512_store_si512(e + 64 * i, w.wq[i]);
          _mm512_store_ps(e + 512, w.s0);
          if constexpr (kScales == 2) _mm512_store_ps(e + 576, w.s1);
          if constexpr (kMins == 1) _mm512_store_ps(e + 512 + 64 * kScales, w.mn);
        }
      }
    }
  }
};

// One row tile: rows [r0, r0 + R) of `a` times P groups (outputs from col0, 16 a group)
// whose sub-blocks `src` provides; while it runs it prefetches the stream `pf` (null: none),
// unit by unit as it walks its own units.
template <QuantType T, int R, int P, typename Source>
LLMSERVE_TARGET_VNNI void Tile(const Source& src, int64_t units, const QuantizedActs& a, int64_t r0,
                               const PackedSource<T>* pf, int64_t rows, int64_t col0, const float* bias, float* y,
                               int64_t ldy) {
  constexpr int kSubs = SubBlocks(T);
  constexpr int kShift = OffsetShift(T);
  __m512 acc[R][P];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  }
  using QA = QuantizedActs;
  const uint8_t* rows_x[R];  // each row's record of block 0
  for (int r = 0; r < R; ++r) rows_x[r] = a.record(r0 + r, 0);

  const int64_t share = pf != nullptr ? pf->PrefetchShare(kSubs * P) : 0;
  for (int64_t u = 0; u < units; ++u) {
    for (int s = 0; s < kSubs; ++s) {
      const int64_t blk = u * kSubs + s;
      // Group p, row r: p and r are compile-time constants (index sequences, not loops),
      // so that the accumulators stay in registers.
      auto row = [&]<int p, int r>(const SubWeights& w) __attribute__((always_inline)) {
        const uint8_t* rec = rows_x[r] + blk * QA::kRecordBytes;
        if constexpr (T == QuantType::kQ6_K) {
          const __m512i i0 = Dot<4, 0>(ShiftBcast<QA::kNsum16, kShift>(rec), w.wq, rec);
          const __m512i i1 = Dot<4, 16>(ShiftBcast<QA::kNsum16 + 4, kShift>(rec), w.wq + 4, rec);
          acc[r][p] = _mm512_fmadd_ps(MulBcast<QA::kD>(_mm512_cvtepi32_ps(i0), rec), w.s0, acc[r][p]);
          acc[r][p] = _mm512_fmadd_ps(MulBcast<QA::kD>(_mm512_cvtepi32_ps(i1), rec), w.s1, acc[r][p]);
        } else {
          __m512i i0;
          if constexpr (kShift >= 0) {
            i0 = ShiftBcast<QA::kNsum32, kShift>(rec);
          } else {
            i0 = _mm512_setzero_si512();
          }
          i0 = Dot<8, 0>(i0, w.wq, rec);
          acc[r][p] = _mm512_fmadd_ps(MulBcast<QA::kD>(_mm512_cvtepi32_ps(i0), rec), w.s0, acc[r][p]);
          if constexpr (HasBlockMin(T)) {
            acc[r][p] = FmaddBcast<QA::kDsum>(acc[r][p], w.mn, rec);
          } else if constexpr (HasSubMin(T)) {
            acc[r][p] = FnmaddBcast<QA::kDsum>(acc[r][p], w.mn, rec);
          }
        }
      };
      auto group = [&]<int p>() __attribute__((always_inline)) {
        if (pf != nullptr) pf->Prefetch(u, s * P + p, share);
        SubWeights w;
        src.Get(u, s, p, w);
        [&]<int... r>(std::integer_sequence<int, r...>) __attribute__((always_inline)) {
          (row.template operator()<p, r>(w), ...);
        }(
            std::make_integer_sequence<int, R>{});
      };
      [&]<int... p>(std::integer_sequence<int, p...>) __attribute__((always_inline)) {
        (group.template operator()<p>(), ...);
      }(
          std::make_integer_sequence<int, P>{});
    }
  }
  auto store = [&]<int p>() __attribute__((always_inline)) {
    const int64_t col = col0 + p * kQuantGroupRows;
    const __mmask16 mask = simd::TailMask(rows - col);
    const __m512 b = bias != nullptr ? _mm512_maskz_loadu_ps(mask, bias + col) : _mm512_setzero_ps();
    [&]<int... r>(std::integer_sequence<int, r...>) __attribute__((always_inline)) {
      (_mm512_mask_storeu_ps(y + (r0 + r) * ldy + col, mask, _mm512_add_ps(acc[r][p], b)), ...);
    }(std::make_integer_sequence<int, R>{});
  };
  [&]<int... p>(std::integer_sequence<int, p...>) __attribute__((always_inline)) {
    (store.template operator()<p>(), ...);
  }(
      std::make_integer_sequence<int, P>{});
}

// The rows left after the full tiles: one tile of n < RT rows.
template <QuantType T, int P, int RT, typename Source>
LLMSERVE_TARGET_VNNI void TailRows(int64_t n, const Source& src, int64_t units, const QuantizedActs& a, int64_t r0,
                                   const PackedSource<T>* pf, int64_t rows, int64_t col0, const float* bias, float* y,
                                   int64_t ldy) {
  if constexpr (RT > 1) {
    if (n == RT - 1) {
      Tile<T, RT - 1, P>(src, units, a, r0, pf, rows, col0, bias, y, ldy);
    } else {
      TailRows<T, P, RT - 1>(n, src, units, a, r0, pf, rows, col0, bias, y, ldy);
    }
  }
}

// All rows of `a`, RT at a time, for P groups that `src` provides (outputs from group g);
// the first tile prefetches `pf` (may be null).
template <QuantType T, int P, int RT, typename Source>
LLMSERVE_TARGET_VNNI void AllRows(const Source& src, const PackedSource<T>* pf, const PackedQuantMatrix& w, int64_t g,
                                  const QuantizedActs& a, const float* bias, float* y, int64_t ldy) {
  const int64_t col0 = g * kQuantGroupRows;
  int64_t r0 = 0;
  for (; r0 + RT <= a.m; r0 += RT) Tile<T, RT, P>(src, w.units, a, r0, r0 == 0 ? pf : nullptr, w.rows, col0, bias, y, ldy);
  if (r0 < a.m) TailRows<T, P, RT>(a.m - r0, src, w.units, a, r0, r0 == 0 ? pf : nullptr, w.rows, col0, bias, y, ldy);
}

// Groups [g, g + P) of one panel: from the packed layout for few rows (the first tile
// streams the weights, the others find them in L2), or, with `scratch` for many rows,
// unpacked once into it and read from there by every tile.
template <QuantType T, int P>
LLMSERVE_TARGET_VNNI void Groups(const PackedQuantMatrix& w, int64_t g, const QuantizedActs& a, uint8_t* scratch,
                                 const float* bias, float* y, int64_t ldy) {
  const PackedSource<T> packed{w.unit(g, 0), w.panel_groups(g) * w.unit_bytes};
  if (scratch == nullptr) {
    AllRows<T, P, kTileRows>(packed, &packed, w, g, a, bias, y, ldy);
    return;
  }
  const ScratchSource<T> unpacked{scratch, P};
  unpacked.Fill(packed, w.units);
  AllRows<T, P, kTileRows>(unpacked, nullptr, w, g, a, bias, y, ldy);
}

template <QuantType T>
void GemmOf(const PackedQuantMatrix& w, int64_t g0, int64_t g1, const QuantizedActs& a, uint8_t* scratch,
            const float* bias, float* y, int64_t ldy) {
  static_assert(kTileGroups == kQuantPanelGroups, "a tile is one panel");
  for (int64_t g = g0; g < g1;) {
    const int64_t pg = w.panel_groups(g);
    if (g % kQuantPanelGroups == 0 && pg == kQuantPanelGroups && g + pg <= g1) {
      Groups<T, kTileGroups>(w, g, a, scratch, bias, y, ldy);
      g += pg;
    } else {
      Groups<T, 1>(w, g, a, scratch, bias, y, ldy);
      ++g;
    }
  }
}

}  // namespace

LLMSERVE_TARGET_VNNI void QuantizeActsAvx512(const float* x, int64_t in, int64_t r0, int64_t r1,
                                             const QuantizedActs& a) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * in;
    for (int64_t b = 0; b < a.blocks; ++b) {
      uint8_t* rec = a.record(r, b);
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
      _mm_storeu_si128(reinterpret_cast<__m128i*>(rec), _mm512_cvtepi32_epi8(q0));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(rec + 16), _mm512_cvtepi32_epi8(q1));
      const int32_t s0 = _mm512_reduce_add_epi32(q0), s1 = _mm512_reduce_add_epi32(q1);
      const float dsum = d * static_cast<float>(s0 + s1);
      const int32_t n[3] = {-(s0 + s1), -s0, -s1};
      std::memcpy(rec + QuantizedActs::kD, &d, 4);
      std::memcpy(rec + QuantizedActs::kDsum, &dsum, 4);
      std::memcpy(rec + QuantizedActs::kNsum32, n, 12);
      std::memset(rec + 52, 0, QuantizedActs::kRecordBytes - 52);
    }
  }
}

static_assert(ScratchSource<QuantType::kQ4_K>::kEntry == kQuantScratchEntryBytes &&
                  ScratchSource<QuantType::kQ6_K>::kEntry == kQuantScratchEntryBytes &&
                  ScratchSource<QuantType::kQ5_1>::kEntry <= kQuantScratchEntryBytes,
              "QuantPanelScratchBytes covers every type");

void QuantGemmAvx512(const PackedQuantMatrix& w, int64_t g0, int64_t g1, const QuantizedActs& a, uint8_t* scratch,
                     const float* bias, float* y, int64_t ldy) {
  switch (w.type) {
    case QuantType::kQ4_0: return GemmOf<QuantType::kQ4_0>(w, g0, g1, a, scratch, bias, y, ldy);
    case QuantType::kQ4_1: return GemmOf<QuantType::kQ4_1>(w, g0, g1, a, scratch, bias, y, ldy);
    case QuantType::kQ5_0: return GemmOf<QuantType::kQ5_0>(w, g0, g1, a, scratch, bias, y, ldy);
    case QuantType::kQ5_1: return GemmOf<QuantType::kQ5_1>(w, g0, g1, a, scratch, bias, y, ldy);
    case QuantType::kQ8_0: return GemmOf<QuantType::kQ8_0>(w, g0, g1, a, scratch, bias, y, ldy);
    case QuantType::kQ4_K: return GemmOf<QuantType::kQ4_K>(w, g0, g1, a, scratch, bias, y, ldy);
    case QuantType::kQ5_K: return GemmOf<QuantType::kQ5_K>(w, g0, g1, a, scratch, bias, y, ldy);
    case QuantType::kQ6_K: return GemmOf<QuantType::kQ6_K>(w, g0, g1, a, scratch, bias, y, ldy);
    case QuantType::kNone: return;
  }
}

}  // namespace llmserve::quant_internal

#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
