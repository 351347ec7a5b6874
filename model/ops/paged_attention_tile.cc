#include "model/ops/paged_attention_tile.h"

#include <algorithm>

#include "model/ops/simd_math.h"  // <immintrin.h> without GCC 12's false warnings

namespace llmserve::attention {

template <bool kBf16>
void BuildTile(const KvCache& cache, int64_t layer, int64_t head, const int32_t* table, int64_t vrow, int64_t t0,
               int64_t n_tok, Tile& tile) {
  const int64_t bs = cache.config().block_size;
  tile.ntv = 0;
  tile.nrows = 0;
  tile.start = t0;
  int64_t tt = t0;
  while (tile.ntv < kTileVecs && tt < n_tok) {
    const int64_t block = table[tt / bs], off = tt % bs;  // off is a multiple of 16
    const int64_t n = std::min<int64_t>(kVec, std::min<int64_t>(bs - off, n_tok - tt));
    TokenVec& v = tile.tv[tile.ntv];
    if constexpr (kBf16) {
      v = TokenVec{cache.K(layer, block, head) + off * 4, cache.V(layer, block, head) + (off / 2) * vrow, tt, n};
      tile.pair_base[tile.ntv] = tile.nrows;
      for (int64_t i = 0; i < n; i += 2) {
        tile.vrows[tile.nrows] = v.v + (i / 2) * vrow;
        tile.first[tile.nrows] = static_cast<int16_t>(tt - t0 + i);
        tile.single[tile.nrows] = i + 1 == n;
        ++tile.nrows;
      }
    } else {
      v = TokenVec{cache.K(layer, block, head) + off * 4, cache.V(layer, block, head) + off * vrow, tt, n};
      for (int64_t i = 0; i < n; ++i) tile.vrows[tile.nrows++] = v.v + i * vrow;
    }
    ++tile.ntv;
    tt += n;
  }
  tile.n = tt - t0;
  if (tile.n == 0) return;
  for (int v = tile.ntv; v < kTileVecs; ++v) tile.tv[v] = tile.tv[tile.ntv - 1];
  for (int i = tile.nrows; i < kTileRows; ++i) tile.vrows[i] = tile.vrows[tile.nrows - 1];
}

template void BuildTile<false>(const KvCache&, int64_t, int64_t, const int32_t*, int64_t, int64_t, int64_t, Tile&);
template void BuildTile<true>(const KvCache&, int64_t, int64_t, const int32_t*, int64_t, int64_t, int64_t, Tile&);

LLMSERVE_TARGET_AVX512 void WidenTile(const Tile& tile, int64_t hd, int64_t kstep, float* wk, float* wv,
                                      const Tile& ahead, WideTile& out) {
  for (int v = 0; v < tile.ntv; ++v) {
    const TokenVec& src = tile.tv[v];
    float* dst = wk + v * hd * kVec;
    const __mmask16 mask = simd::TailMask(src.n);
    for (int64_t j = 0; j < hd / 2; ++j) {
      __m512 even, odd;
      simd::WidenBf16Pairs(_mm512_maskz_loadu_epi32(mask, src.k + j * kstep), even, odd);
      _mm512_storeu_ps(dst + 2 * j * kVec, even);
      _mm512_storeu_ps(dst + (2 * j + 1) * kVec, odd);
    }
    out.tv[v] = TokenVec{reinterpret_cast<const uint8_t*>(dst), nullptr, src.start, src.n};
  }
  for (int v = tile.ntv; v < kTileVecs; ++v) out.tv[v] = out.tv[tile.ntv - 1];
  for (int i = 0; i < tile.nrows; ++i) {
    const int64_t t = tile.first[i];
    const bool pair = !tile.single[i];
    for (int64_t d = 0; d < hd; d += kVec) {
      const __mmask16 dm = simd::TailMask(hd - d);
      __m512 x0, x1;
      simd::WidenBf16Pairs(_mm512_maskz_loadu_epi32(dm, tile.vrows[i] + d * 4), x0, x1);
      _mm512_mask_storeu_ps(wv + t * hd + d, dm, x0);
      if (pair) _mm512_mask_storeu_ps(wv + (t + 1) * hd + d, dm, x1);
    }
    out.vrows[t] = reinterpret_cast<const uint8_t*>(wv + t * hd);
    if (pair) out.vrows[t + 1] = reinterpret_cast<const uint8_t*>(wv + (t + 1) * hd);
  }
  if (ahead.n == 0) return;
  for (int v = 0; v < ahead.ntv; ++v) {
    for (int64_t j = 0; j < hd / 2; ++j) {
      _mm_prefetch(reinterpret_cast<const char*>(ahead.tv[v].k + j * kstep), _MM_HINT_T1);
    }
  }
  for (int i = 0; i < ahead.nrows; ++i) {
    for (int64_t off = 0; off < hd * 4; off += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(ahead.vrows[i] + off), _MM_HINT_T1);
    }
  }
}

}  // namespace llmserve::attention
