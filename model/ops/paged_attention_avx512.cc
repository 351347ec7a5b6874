// The AVX-512 kernel of PagedAttention.
//
// A task (one sequence, one KV head, a range of its rows) walks the sequence's tokens in
// tiles of up to 4 vectors of 16 tokens (a vector never crosses a block). For each tile:
//
//   scores  S[q][t] = (q · K[t]) · scale · log2(e)   K is stored dim-major in the cache, so
//                                                     16 tokens of one dim are one load and
//                                                     each query dim is one broadcast FMA
//   softmax running max m[q], sum l[q] (base 2), P = 2^(S - m) for the tokens q sees
//   values  acc[q] = acc[q] · 2^(m_old - m) + Σ_t P[q][t] · V[t]
//
// Queries are (row, query head) pairs of the task; blocks of 4 queries share every K and
// V load. A bf16 cache is widened to f32 on load (the arithmetic stays f32).
#include <limits>
#include <utility>
#include <vector>

#include "model/ops/paged_attention_internal.h"
#include "model/ops/simd_math.h"  // <immintrin.h> without GCC 12's false warnings

namespace llmserve::attention {

namespace {

constexpr int kVec = 16;                 // floats per vector
constexpr int kTileVecs = 4;             // token vectors per tile
constexpr int kTile = kVec * kTileVecs;  // score row stride
constexpr int kQBlock = 4;               // queries sharing each load
constexpr int kDBlock = 4;               // value vectors per accumulation pass
constexpr float kLog2e = 1.44269504088896341f;

// Up to 16 consecutive tokens of one block.
struct TokenVec {
  const uint8_t* k;  // word of the first token's dim 0 (f32) or dim pair 0 (bf16)
  const uint8_t* v;  // the first token's V row
  int64_t start;     // position of the first token
  int64_t n;         // tokens, 1..16
};

// Per-thread state, grown on demand and then reused: no allocation in steady state.
struct Scratch {
  std::vector<float> q, acc, p, m, l, corr;
};

// Buffers of one task, sized for nq queries with rows of hdp floats.
struct Buffers {
  float *q, *acc, *p, *m, *l, *corr;
};

float* Grow(std::vector<float>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
  return v.data();
}

// The calling thread's buffers (compiled for the default target, like all library
// code the AVX-512 section below uses: no template of the standard library gets
// instantiated there).
Buffers ThreadBuffers(int64_t nq, int64_t hdp) {
  thread_local Scratch sc;
  return Buffers{Grow(sc.q, nq * hdp), Grow(sc.acc, nq * hdp), Grow(sc.p, nq * kTile),
                 Grow(sc.m, nq),       Grow(sc.l, nq),         Grow(sc.corr, nq)};
}

constexpr float kInf = std::numeric_limits<float>::infinity();

}  // namespace

// Everything below is compiled for AVX-512 (lambdas included, which a target attribute
// does not reach). Only internal functions live here, and no standard-library template
// is used, so no inline function shared with other files can get AVX-512 code.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")

namespace {

// Calls f(std::integral_constant<int, i>) for i = 0 .. N-1, unrolled in the source so
// that arrays of vectors indexed by i are scalarized into registers (GCC keeps them in
// memory when a loop indexes them, even a fully unrolled one).
template <int N, typename F>
__attribute__((always_inline)) inline void Unroll(F&& f) {
  auto expand = [&]<int... I>(std::integer_sequence<int, I...>) { (f(std::integral_constant<int, I>{}), ...); };
  expand(std::make_integer_sequence<int, N>{});
}

inline int64_t Min(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t Max(int64_t a, int64_t b) { return a > b ? a : b; }

inline __mmask16 FirstLanes(int64_t n) {
  if (n <= 0) return 0;
  return n >= kVec ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1u);
}

// 2^x for x <= 0 (Cephes exp2f polynomial on [-0.5, 0.5], ~2 ulp); below -127 gives ~0.
inline __m512 Exp2(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-127.0f));
  const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(x, n);
  __m512 p = _mm512_set1_ps(1.535336188319500e-4f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.339887440266574e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.618437357674640e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.550332471162809e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.402264791363012e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931472028550421e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// 16 keys of one dim pair (bf16 words) widened to f32: (even dims, odd dims).
inline void WidenPairs(__m512i w, __m512& even, __m512& odd) {
  even = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  odd = _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}

// The tokens of one tile: up to 4 vectors, and each token's V row.
struct Tile {
  TokenVec tv[kTileVecs];
  const uint8_t* vrows[kTile];
  int ntv = 0;
  int64_t start = 0, n = 0;  // tokens [start, start + n)
};

// The tile of tokens from t0 on (empty when t0 >= n_tok). Unused vectors and rows repeat
// the last used one, so that prefetching from any of them is harmless.
void BuildTile(const KvCache& cache, int64_t layer, int64_t head, const int32_t* table, int64_t vrow, int64_t t0,
               int64_t n_tok, Tile& tile) {
  const int64_t bs = cache.config().block_size;
  tile.ntv = 0;
  tile.start = t0;
  int64_t tt = t0;
  while (tile.ntv < kTileVecs && tt < n_tok) {
    const int64_t block = table[tt / bs], off = tt % bs;
    const int64_t n = Min(kVec, Min(bs - off, n_tok - tt));
    TokenVec& v = tile.tv[tile.ntv++];
    v = TokenVec{cache.K(layer, block, head) + off * 4, cache.V(layer, block, head) + off * vrow, tt, n};
    for (int64_t i = 0; i < n; ++i) tile.vrows[tt - t0 + i] = v.v + i * vrow;
    tt += n;
  }
  tile.n = tt - t0;
  if (tile.n == 0) return;
  for (int v = tile.ntv; v < kTileVecs; ++v) tile.tv[v] = tile.tv[tile.ntv - 1];
  for (int64_t i = tile.n; i < kTile; ++i) tile.vrows[i] = tile.vrows[tile.n - 1];
}

// s[qb][j] = q[qb] · K[token j of the tile], for QB queries (rows of q, stride q_stride)
// and the tile's TV token vectors. kstep: bytes between dims (f32) / dim pairs (bf16).
// kPrefetch: also prefetch the next tile's keys (`next`, 4 vectors), a line per load,
// so that the scattered blocks stream in while this tile computes.
template <int QB, int TV, bool kBf16, bool kPrefetch>
void Scores(const float* q, int64_t q_stride, int64_t hd, const TokenVec* tv, int64_t kstep, float* s,
            const TokenVec* next) {
  auto prefetch = [&](int64_t offset) {
    if constexpr (kPrefetch) {
      Unroll<kTileVecs>([&](auto v) { _mm_prefetch(reinterpret_cast<const char*>(next[v].k + offset), _MM_HINT_T0); });
    }
  };
  __m512 acc[QB][TV];
  __mmask16 mask[TV];
  const uint8_t* kp[TV];
  Unroll<TV>([&](auto v) {
    mask[v] = FirstLanes(tv[v].n);
    kp[v] = tv[v].k;
    Unroll<QB>([&](auto b) { acc[b][v] = _mm512_setzero_ps(); });
  });
  if constexpr (!kBf16) {
    for (int64_t d = 0; d < hd; ++d) {
      __m512 k[TV];
      Unroll<TV>([&](auto v) { k[v] = _mm512_maskz_loadu_ps(mask[v], kp[v] + d * kstep); });
      prefetch(d * kstep);
      Unroll<QB>([&](auto b) {
        const __m512 qd = _mm512_set1_ps(q[b * q_stride + d]);
        Unroll<TV>([&](auto v) { acc[b][v] = _mm512_fmadd_ps(qd, k[v], acc[b][v]); });
      });
    }
  } else {
    for (int64_t d = 0; d < hd; d += 2) {
      __m512 ke[TV], ko[TV];
      Unroll<TV>([&](auto v) { WidenPairs(_mm512_maskz_loadu_epi32(mask[v], kp[v] + (d / 2) * kstep), ke[v], ko[v]); });
      prefetch((d / 2) * kstep);
      Unroll<QB>([&](auto b) {
        const __m512 q0 = _mm512_set1_ps(q[b * q_stride + d]);
        const __m512 q1 = _mm512_set1_ps(q[b * q_stride + d + 1]);
        Unroll<TV>([&](auto v) {
          acc[b][v] = _mm512_fmadd_ps(q0, ke[v], acc[b][v]);
          acc[b][v] = _mm512_fmadd_ps(q1, ko[v], acc[b][v]);
        });
      });
    }
  }
  // Compact: token j of the tile at s[j], whatever the vectors' lengths.
  Unroll<QB>([&](auto b) {
    Unroll<TV>([&](auto v) { _mm512_mask_storeu_ps(s + b * kTile + (tv[v].start - tv[0].start), mask[v], acc[b][v]); });
  });
}

// acc[qb][d0 .. d0+16·DV) = acc · corr[qb] + Σ_j p[qb][j] · V[j][d0 ..], over the tile's
// first `limit` tokens (V rows at vrows[j]). acc rows are padded to whole vectors.
// kPrefetch: also prefetch the same part of the next tile's rows (next_rows).
template <int QB, int DV, bool kBf16, bool kPrefetch>
void AccumulateV(float* acc, int64_t acc_stride, const float* corr, const float* p, const uint8_t* const* vrows,
                 int64_t limit, int64_t d0, int64_t hd, const uint8_t* const* next_rows) {
  constexpr int64_t kElem = kBf16 ? 2 : 4;
  constexpr int kLines = (DV * kVec * static_cast<int>(kElem) + 63) / 64;
  __m512 a[QB][DV];
  __mmask16 dmask[DV];
  Unroll<DV>([&](auto j) { dmask[j] = FirstLanes(hd - d0 - j * kVec); });
  Unroll<QB>([&](auto b) {
    const __m512 c = _mm512_set1_ps(corr[b]);
    Unroll<DV>([&](auto j) { a[b][j] = _mm512_mul_ps(_mm512_loadu_ps(acc + b * acc_stride + d0 + j * kVec), c); });
  });
  for (int64_t t = 0; t < limit; ++t) {
    const uint8_t* row = vrows[t] + d0 * kElem;
    if constexpr (kPrefetch) {
      const char* nr = reinterpret_cast<const char*>(next_rows[t] + d0 * kElem);
      Unroll<kLines>([&](auto i) { _mm_prefetch(nr + 64 * i, _MM_HINT_T0); });
    }
    __m512 x[DV];
    Unroll<DV>([&](auto j) {
      if constexpr (kBf16) {
        const __m256i h = _mm256_maskz_loadu_epi16(dmask[j], row + j * kVec * 2);
        x[j] = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
      } else {
        x[j] = _mm512_maskz_loadu_ps(dmask[j], row + j * kVec * 4);
      }
    });
    Unroll<QB>([&](auto b) {
      const __m512 w = _mm512_set1_ps(p[b * kTile + t]);
      Unroll<DV>([&](auto j) { a[b][j] = _mm512_fmadd_ps(w, x[j], a[b][j]); });
    });
  }
  Unroll<QB>(
      [&](auto b) { Unroll<DV>([&](auto j) { _mm512_storeu_ps(acc + b * acc_stride + d0 + j * kVec, a[b][j]); }); });
}

using ScoresFn = void (*)(const float*, int64_t, int64_t, const TokenVec*, int64_t, float*, const TokenVec*);
using AccumulateFn = void (*)(float*, int64_t, const float*, const float*, const uint8_t* const*, int64_t, int64_t,
                              int64_t, const uint8_t* const*);

// Kernel tables indexed [prefetch][QB - 1][TV - 1] and [prefetch][QB - 1][DV - 1].
template <bool B, bool P, int QB>
constexpr ScoresFn kScoresRow[kTileVecs] = {Scores<QB, 1, B, P>, Scores<QB, 2, B, P>, Scores<QB, 3, B, P>,
                                            Scores<QB, 4, B, P>};
template <bool B, bool P>
constexpr const ScoresFn* kScoresTable[kQBlock] = {kScoresRow<B, P, 1>, kScoresRow<B, P, 2>, kScoresRow<B, P, 3>,
                                                   kScoresRow<B, P, 4>};
template <bool B>
constexpr const ScoresFn* const* kScores[2] = {kScoresTable<B, false>, kScoresTable<B, true>};
template <bool B, bool P, int QB>
constexpr AccumulateFn kAccRow[kDBlock] = {AccumulateV<QB, 1, B, P>, AccumulateV<QB, 2, B, P>, AccumulateV<QB, 3, B, P>,
                                           AccumulateV<QB, 4, B, P>};
template <bool B, bool P>
constexpr const AccumulateFn* kAccTable[kQBlock] = {kAccRow<B, P, 1>, kAccRow<B, P, 2>, kAccRow<B, P, 3>,
                                                    kAccRow<B, P, 4>};
template <bool B>
constexpr const AccumulateFn* const* kAccumulate[2] = {kAccTable<B, false>, kAccTable<B, true>};

template <bool kBf16>
void RunTask(const Args& a, const Task& t, const Task* successor) {
  const KvCache& cache = *a.cache;
  const KvCacheConfig& c = cache.config();
  const AttentionSeq& s = a.seqs[t.seq];
  const int64_t hd = c.head_dim, bs = c.block_size, g = a.group;
  const int64_t hdp = (hd + kVec - 1) / kVec * kVec;  // padded row of q and acc
  const int64_t pos0 = int64_t{s.context} - s.rows;   // position of the sequence's row 0
  const int64_t first_pos = pos0 + t.row_begin;       // position of the task's row 0
  const int64_t nq = int64_t{t.row_end - t.row_begin} * g;
  const int64_t n_tok = pos0 + t.row_end;  // tokens the task's last row sees
  const int64_t kstep = bs * 4;            // bytes between K dims / dim pairs
  const int64_t vrow = hd * (kBf16 ? 2 : 4);

  const Buffers buf = ThreadBuffers(nq, hdp);
  float *qs = buf.q, *acc = buf.acc, *p = buf.p, *m = buf.m, *l = buf.l, *corr = buf.corr;

  // Queries qi = row * g + j (row-major, so positions never decrease with qi), pre-scaled
  // into base-2 logits.
  const __m512 qscale = _mm512_set1_ps(a.scale * kLog2e);
  for (int64_t qi = 0; qi < nq; ++qi) {
    const int64_t row = s.row_start + t.row_begin + qi / g, head = t.kv_head * g + qi % g;
    const float* src = a.q + row * a.q_stride + head * hd;
    for (int64_t d = 0; d < hdp; d += kVec) {
      const __m512 x = _mm512_maskz_loadu_ps(FirstLanes(hd - d), src + d);
      _mm512_storeu_ps(qs + qi * hdp + d, _mm512_mul_ps(x, qscale));
      _mm512_storeu_ps(acc + qi * hdp + d, _mm512_setzero_ps());
    }
    m[qi] = -kInf;
    l[qi] = 0.0f;
  }

  Tile tiles[2];
  Tile successor_first;  // the successor task's first tile: prefetched during the last tile
  BuildTile(cache, a.layer, t.kv_head, s.block_table.data(), vrow, 0, n_tok, tiles[0]);
  for (int64_t i = 0; tiles[i % 2].n > 0; ++i) {
    const Tile& tile = tiles[i % 2];
    Tile& next = tiles[(i + 1) % 2];
    BuildTile(cache, a.layer, t.kv_head, s.block_table.data(), vrow, tile.start + tile.n, n_tok, next);
    const Tile* ahead = &next;
    if (next.n == 0 && successor != nullptr) {
      const AttentionSeq& ss = a.seqs[successor->seq];
      BuildTile(cache, a.layer, successor->kv_head, ss.block_table.data(), vrow, 0,
                int64_t{ss.context} - ss.rows + successor->row_end, successor_first);
      ahead = &successor_first;
    }
    const bool pf = ahead->n > 0;  // the first query block's passes prefetch the tile ahead
    const int64_t t0 = tile.start, tile_n = tile.n;
    const TokenVec* tv = tile.tv;
    const int ntv = tile.ntv;
    // Rows at positions < t0 see nothing of this tile (nor of later ones).
    const int64_t q_first = Max(0, t0 - first_pos) * g;

    for (int64_t b0 = q_first; b0 < nq; b0 += kQBlock) {
      const int64_t qb = Min(kQBlock, nq - b0);
      kScores<kBf16>[pf && b0 == q_first][qb - 1][ntv - 1](qs + b0 * hdp, hdp, hd, tv, kstep, p + b0 * kTile,
                                                             ahead->tv);
    }

    for (int64_t qi = q_first; qi < nq; ++qi) {
      const int64_t visible = first_pos + qi / g - t0 + 1;  // >= 1
      float* pr = p + qi * kTile;
      // Scores are compact (token j at pr[j]): whole vectors of 16 with a tail mask.
      const int64_t nvec = (tile_n + kVec - 1) / kVec;
      __mmask16 mask[kTileVecs];
      __m512 mx = _mm512_set1_ps(-kInf);
      for (int v = 0; v < nvec; ++v) {
        mask[v] = FirstLanes(Min(tile_n, visible) - v * kVec);
        mx = _mm512_mask_max_ps(mx, mask[v], mx, _mm512_maskz_loadu_ps(mask[v], pr + v * kVec));
      }
      const float tile_max = _mm512_reduce_max_ps(mx);
      const float m_new = m[qi] > tile_max ? m[qi] : tile_max;
      const __m512 mv = _mm512_set1_ps(m_new);
      __m512 sum = _mm512_setzero_ps();
      for (int v = 0; v < nvec; ++v) {
        const __m512 x = _mm512_maskz_loadu_ps(mask[v], pr + v * kVec);
        const __m512 e = _mm512_maskz_mov_ps(mask[v], Exp2(_mm512_sub_ps(x, mv)));
        _mm512_storeu_ps(pr + v * kVec, e);  // zero where not visible
        sum = _mm512_add_ps(sum, e);
      }
      corr[qi] = __builtin_exp2f(m[qi] - m_new);  // 0 on the first tile (m = -inf)
      l[qi] = l[qi] * corr[qi] + _mm512_reduce_add_ps(sum);
      m[qi] = m_new;
    }

    for (int64_t b0 = q_first; b0 < nq; b0 += kQBlock) {
      const int64_t qb = Min(kQBlock, nq - b0);
      // The block's last query has the highest position: it bounds the tokens used.
      const int64_t limit = Min(tile_n, first_pos + (b0 + qb - 1) / g - t0 + 1);
      for (int64_t d0 = 0; d0 < hd; d0 += kDBlock * kVec) {
        const int64_t dv = Min(kDBlock, (hd - d0 + kVec - 1) / kVec);
        kAccumulate<kBf16>[pf && b0 == q_first][qb - 1][dv - 1](acc + b0 * hdp, hdp, corr + b0, p + b0 * kTile,
                                                                tile.vrows, limit, d0, hd, ahead->vrows);
      }
    }
  }

  for (int64_t qi = 0; qi < nq; ++qi) {
    const int64_t row = s.row_start + t.row_begin + qi / g, head = t.kv_head * g + qi % g;
    float* dst = a.out + row * a.out_stride + head * hd;
    const __m512 inv = _mm512_set1_ps(1.0f / l[qi]);
    for (int64_t d = 0; d < hd; d += kVec) {
      _mm512_mask_storeu_ps(dst + d, FirstLanes(hd - d), _mm512_mul_ps(_mm512_loadu_ps(acc + qi * hdp + d), inv));
    }
  }
}

}  // namespace

#pragma GCC pop_options

void RunTaskAvx512(const Args& a, const Task& t, const Task* successor) {
  if (a.cache->config().dtype == DType::kBF16) {
    RunTask<true>(a, t, successor);
  } else {
    RunTask<false>(a, t, successor);
  }
}

}  // namespace llmserve::attention
