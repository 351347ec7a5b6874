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
// V load.
//
// A bf16 cache is read in 32-bit words: K words hold a token's dim pair, V words the same
// dim of a token pair (the cache's layouts). Where the CPU has AVX512_BF16, the queries
// and the probabilities are rounded to bf16 pairs too and each word takes one vdpbf16ps
// (two products, f32 sums): half the arithmetic instructions of widening, as the bf16
// matmuls do with their activations. Without it the words are widened to f32. The tiles
// (where their tokens are, and their widening once per task) are in paged_attention_tile.h.
#include <limits>
#include <utility>
#include <vector>

#include "model/ops/paged_attention_internal.h"
#include "model/ops/paged_attention_prefetch.h"
#include "model/ops/paged_attention_tile.h"
#include "model/ops/simd_math.h"  // <immintrin.h> without GCC 12's false warnings

namespace llmserve::attention {

namespace {

constexpr int kQBlock = 4;               // queries sharing each load
constexpr int kDBlock = 4;               // value vectors per accumulation pass
// Query blocks from which a task over a bf16 cache widened to f32 (Bf16Math::kWiden)
// widens each tile once, into f32 scratch the f32 kernels then read (WidenTile), instead
// of in every query block's passes. Widening a tile (64 tokens of K and V: 256 loads and
// 512 stores) costs about as many instructions as two or three query blocks' in-pass
// widening, so from four on it saves work. Same products, same order: the same bits.
constexpr int64_t kWideMinQueryBlocks = 4;
constexpr float kLog2e = 1.44269504088896341f;

// Arithmetic on a bf16 cache: widened to f32, or vdpbf16ps on bf16 pairs.
enum class Bf16Math { kWiden, kDot };

// Per-thread state, grown on demand and then reused: no allocation in steady state.
struct Scratch {
  std::vector<float> q, acc, p, m, l, corr, wk, wv;
  std::vector<uint32_t> qw, pw;
  KvPrefetchStream stream;
};

// Buffers of one task, sized for nq queries with rows of hdp floats. qw, pw: the bf16
// pair words of the queries (hdp / 2 per query) and of a tile's probabilities (kPairRow
// per query).
struct Buffers {
  float *q, *acc, *p, *m, *l, *corr;
  float *wk, *wv;  // a widened tile: K (4 vectors of hdp dims x 16 tokens), V (64 rows of hdp)
  uint32_t *qw, *pw;
  KvPrefetchStream* stream;  // the thread's prefetch stream
};

// Pair words per query of a tile: one vector of 16 tokens converts to 8 words, and the
// last vector's store may run 8 words past the tile's at most 32 pairs + 4 odd ones.
constexpr int kPairRow = kTile / 2 + kTileVecs + 8;

template <typename T>
T* Grow(std::vector<T>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
  return v.data();
}

// The calling thread's buffers (compiled for the default target, like all library
// code the AVX-512 section below uses: no template of the standard library gets
// instantiated there).
Scratch& ThreadScratch() {
  thread_local Scratch sc;
  return sc;
}

Buffers ThreadBuffers(int64_t nq, int64_t hdp) {
  Scratch& sc = ThreadScratch();
  return Buffers{Grow(sc.q, nq * hdp),      Grow(sc.acc, nq * hdp), Grow(sc.p, nq * kTile),
                 Grow(sc.m, nq),            Grow(sc.l, nq),         Grow(sc.corr, nq),
                 Grow(sc.wk, kTileVecs * hdp * kVec), Grow(sc.wv, kTile * hdp),
                 Grow(sc.qw, nq * hdp / 2), Grow(sc.pw, nq * kPairRow), &sc.stream};
}

constexpr float kInf = std::numeric_limits<float>::infinity();

}  // namespace

const KvPrefetchStream& ThreadPrefetchStream() { return ThreadScratch().stream; }

// Everything below is compiled for AVX-512 (lambdas included, which a target attribute
// does not reach). Only internal functions live here, and no standard-library template
// is used, so no inline function shared with other files can get AVX-512 code.
//
// The section targets AVX512_BF16 too, for the kDot instantiations; the other
// instantiations use no BF16 intrinsic (the compiler emits BF16 instructions only for
// those), so they run on any AVX-512 CPU.
#ifdef __clang__  // clang's form of GCC's target section (the fuzz build uses clang)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16")
#endif

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


// s[qb][j] = q[qb] · K[token j of the tile], for QB queries (rows of q, stride q_stride)
// and the tile's TV token vectors. kstep: bytes between dims (f32) / dim pairs (bf16).
// kPrefetch: also prefetch the next tile's keys (`next`, 4 vectors), a line per load,
// so that the scattered blocks stream in while this tile computes.
template <int QB, int TV, bool kBf16, bool kPrefetch>
void Scores(const float* q, int64_t q_stride, int64_t hd, const TokenVec* tv, int64_t kstep, float* s,
            const TokenVec* next, KvPrefetchStream* stream) {
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
      stream->Step();
      Unroll<QB>([&](auto b) {
        const __m512 qd = _mm512_set1_ps(q[b * q_stride + d]);
        Unroll<TV>([&](auto v) { acc[b][v] = _mm512_fmadd_ps(qd, k[v], acc[b][v]); });
      });
    }
  } else {
    for (int64_t d = 0; d < hd; d += 2) {
      __m512 ke[TV], ko[TV];
      Unroll<TV>([&](auto v) {
        simd::WidenBf16Pairs(_mm512_maskz_loadu_epi32(mask[v], kp[v] + (d / 2) * kstep), ke[v], ko[v]);
      });
      prefetch((d / 2) * kstep);
      stream->Step();
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

// Scores of a bf16 cache by vdpbf16ps: qw holds each query's bf16 dim pairs (one word
// each, rows of qw_stride words); otherwise as Scores. (Its set-up and compacting store
// repeat Scores' on purpose: moved into a shared struct, GCC 12 kept the accumulators in
// memory and the 8 × 192 decode took 1.5–2x as long.)
template <int QB, int TV, bool kPrefetch>
void ScoresDot(const uint32_t* qw, int64_t qw_stride, int64_t hd, const TokenVec* tv, int64_t kstep, float* s,
               const TokenVec* next, KvPrefetchStream* stream) {
  __m512 acc[QB][TV];
  __mmask16 mask[TV];
  const uint8_t* kp[TV];
  Unroll<TV>([&](auto v) {
    mask[v] = FirstLanes(tv[v].n);
    kp[v] = tv[v].k;
    Unroll<QB>([&](auto b) { acc[b][v] = _mm512_setzero_ps(); });
  });
  for (int64_t j = 0; j < hd / 2; ++j) {
    __m512i k[TV];
    Unroll<TV>([&](auto v) { k[v] = _mm512_maskz_loadu_epi32(mask[v], kp[v] + j * kstep); });
    if constexpr (kPrefetch) {
      Unroll<kTileVecs>(
          [&](auto v) { _mm_prefetch(reinterpret_cast<const char*>(next[v].k + j * kstep), _MM_HINT_T0); });
    }
    stream->Step();
    Unroll<QB>([&](auto b) {
      const __m512bh qj = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(qw[b * qw_stride + j])));
      Unroll<TV>([&](auto v) { acc[b][v] = _mm512_dpbf16_ps(acc[b][v], reinterpret_cast<__m512bh>(k[v]), qj); });
    });
  }
  Unroll<QB>([&](auto b) {
    Unroll<TV>([&](auto v) { _mm512_mask_storeu_ps(s + b * kTile + (tv[v].start - tv[0].start), mask[v], acc[b][v]); });
  });
}

// acc[qb][d0 .. d0+16·DV) = acc · corr[qb] + Σ_j p[qb][j] · V[j][d0 ..], over the tile's
// first `limit` tokens (V rows at vrows[j]). acc rows are padded to whole vectors.
// kPrefetch: also prefetch the same part of the next tile's rows (next_rows).
template <int QB, int DV, bool kBf16, bool kPrefetch>
void AccumulateV(float* acc, int64_t acc_stride, const float* corr, const float* p, const uint8_t* const* vrows,
                 int64_t limit, int64_t d0, int64_t hd, const uint8_t* const* next_rows, KvPrefetchStream* stream) {
  static_assert(!kBf16, "a bf16 cache goes through AccumulatePairs");
  constexpr int64_t kElem = 4;
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
    stream->Step();
    __m512 x[DV];
    Unroll<DV>([&](auto j) { x[j] = _mm512_maskz_loadu_ps(dmask[j], row + j * kVec * 4); });
    Unroll<QB>([&](auto b) {
      const __m512 w = _mm512_set1_ps(p[b * kTile + t]);
      Unroll<DV>([&](auto j) { a[b][j] = _mm512_fmadd_ps(w, x[j], a[b][j]); });
    });
  }
  Unroll<QB>(
      [&](auto b) { Unroll<DV>([&](auto j) { _mm512_storeu_ps(acc + b * acc_stride + d0 + j * kVec, a[b][j]); }); });
}

// The same over a bf16 cache's token pair rows: rows [0, npairs) of the tile (vrows,
// first, single as in Tile). A row's 32-bit words are dim d of its two tokens; a single
// row's second token is not used (its half is cleared, whatever the slot holds).
//   kWiden: p[qb][token] in f32, each word widened to two f32 products;
//   kDot:   pw[qb][pair] the two tokens' probabilities as one bf16 pair word (pw rows of
//           kPairRow words), one vdpbf16ps per word.
template <int QB, int DV, Bf16Math kMath, bool kPrefetch>
void AccumulatePairs(float* acc, int64_t acc_stride, const float* corr, const float* p, const uint32_t* pw,
                     const Tile& tile, int64_t npairs, int64_t d0, int64_t hd, const uint8_t* const* next_rows,
                     KvPrefetchStream* stream) {
  constexpr int kLines = (DV * kVec * 4 + 63) / 64;
  __m512 a[QB][DV];
  __mmask16 dmask[DV];
  Unroll<DV>([&](auto j) { dmask[j] = FirstLanes(hd - d0 - j * kVec); });
  Unroll<QB>([&](auto b) {
    const __m512 c = _mm512_set1_ps(corr[b]);
    Unroll<DV>([&](auto j) { a[b][j] = _mm512_mul_ps(_mm512_loadu_ps(acc + b * acc_stride + d0 + j * kVec), c); });
  });
  const __m512i low = _mm512_set1_epi32(0xffff);
  for (int64_t i = 0; i < npairs; ++i) {
    const uint8_t* row = tile.vrows[i] + d0 * 4;
    if constexpr (kPrefetch) {
      const char* nr = reinterpret_cast<const char*>(next_rows[i] + d0 * 4);
      Unroll<kLines>([&](auto l) { _mm_prefetch(nr + 64 * l, _MM_HINT_T0); });
    }
    stream->Step();
    __m512i w[DV];
    Unroll<DV>([&](auto j) { w[j] = _mm512_maskz_loadu_epi32(dmask[j], row + j * kVec * 4); });
    const bool single = tile.single[i];
    if (single) Unroll<DV>([&](auto j) { w[j] = _mm512_and_si512(w[j], low); });
    if constexpr (kMath == Bf16Math::kDot) {
      Unroll<QB>([&](auto b) {
        const __m512bh pp = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(pw[b * kPairRow + i])));
        Unroll<DV>([&](auto j) { a[b][j] = _mm512_dpbf16_ps(a[b][j], reinterpret_cast<__m512bh>(w[j]), pp); });
      });
    } else {
      const int64_t t = tile.first[i];
      __m512 x0[DV], x1[DV];
      Unroll<DV>([&](auto j) { simd::WidenBf16Pairs(w[j], x0[j], x1[j]); });
      Unroll<QB>([&](auto b) {
        const __m512 p0 = _mm512_set1_ps(p[b * kTile + t]);
        Unroll<DV>([&](auto j) { a[b][j] = _mm512_fmadd_ps(p0, x0[j], a[b][j]); });
        if (!single) {
          const __m512 p1 = _mm512_set1_ps(p[b * kTile + t + 1]);
          Unroll<DV>([&](auto j) { a[b][j] = _mm512_fmadd_ps(p1, x1[j], a[b][j]); });
        }
      });
    }
  }
  Unroll<QB>(
      [&](auto b) { Unroll<DV>([&](auto j) { _mm512_storeu_ps(acc + b * acc_stride + d0 + j * kVec, a[b][j]); }); });
}

using ScoresFn = void (*)(const float*, int64_t, int64_t, const TokenVec*, int64_t, float*, const TokenVec*,
                          KvPrefetchStream*);
using ScoresDotFn = void (*)(const uint32_t*, int64_t, int64_t, const TokenVec*, int64_t, float*, const TokenVec*,
                             KvPrefetchStream*);
using AccumulateFn = void (*)(float*, int64_t, const float*, const float*, const uint8_t* const*, int64_t, int64_t,
                              int64_t, const uint8_t* const*, KvPrefetchStream*);
using PairsFn = void (*)(float*, int64_t, const float*, const float*, const uint32_t*, const Tile&, int64_t, int64_t,
                         int64_t, const uint8_t* const*, KvPrefetchStream*);

// The kernels, as templates over (query block, vectors, prefetch) for the tables below.
template <bool kBf16>
struct ScoresK {
  using Fn = ScoresFn;
  template <int QB, int N, bool P>
  static constexpr Fn fn = Scores<QB, N, kBf16, P>;
};
struct ScoresDotK {
  using Fn = ScoresDotFn;
  template <int QB, int N, bool P>
  static constexpr Fn fn = ScoresDot<QB, N, P>;
};
struct AccumulateK {
  using Fn = AccumulateFn;
  template <int QB, int N, bool P>
  static constexpr Fn fn = AccumulateV<QB, N, false, P>;
};
template <Bf16Math kMath>
struct PairsK {
  using Fn = PairsFn;
  template <int QB, int N, bool P>
  static constexpr Fn fn = AccumulatePairs<QB, N, kMath, P>;
};

// Kernel tables indexed [prefetch][QB - 1][N - 1] (N: token vectors of a tile, or value
// vectors of a pass; both at most 4).
static_assert(kTileVecs == 4 && kDBlock == 4 && kQBlock == 4);
template <typename K, bool P, int QB>
constexpr typename K::Fn kRow[4] = {K::template fn<QB, 1, P>, K::template fn<QB, 2, P>, K::template fn<QB, 3, P>,
                                    K::template fn<QB, 4, P>};
template <typename K, bool P>
constexpr const typename K::Fn* kTable[4] = {kRow<K, P, 1>, kRow<K, P, 2>, kRow<K, P, 3>, kRow<K, P, 4>};
template <typename K>
constexpr const typename K::Fn* const* kKernel[2] = {kTable<K, false>, kTable<K, true>};

// kBf16: the cache's dtype; kMath: how a bf16 cache is computed with (ignored for f32).
template <bool kBf16, Bf16Math kMath>
void RunTask(const Args& a, const Task& t, const Task* successor) {
  constexpr bool kDot = kBf16 && kMath == Bf16Math::kDot;
  const KvCache& cache = *a.cache;
  const KvCacheConfig& c = cache.config();
  const AttentionSeq& s = a.seqs[t.seq];
  const int64_t hd = c.head_dim, bs = c.block_size, g = a.group;
  const int64_t hdp = (hd + kVec - 1) / kVec * kVec;  // padded row of q and acc
  const int64_t pos0 = int64_t{s.context} - s.rows;   // position of the sequence's row 0
  const int64_t first_pos = pos0 + t.row_begin;       // position of the task's row 0
  const int64_t nq = int64_t{t.row_end - t.row_begin} * g;
  const int64_t n_tok = pos0 + t.row_end;  // tokens the task's last row sees
  const int64_t tok0 = TaskFirstToken(a, t);  // first token read (block-aligned)
  const int64_t window = a.window;
  const int64_t kstep = bs * 4;            // bytes between K dims / dim pairs
  const int64_t vrow = hd * 4;             // bytes of a V row: an f32 token's, a bf16 token pair's

  const Buffers buf = ThreadBuffers(nq, hdp);
  float *qs = buf.q, *acc = buf.acc, *p = buf.p, *m = buf.m, *l = buf.l, *corr = buf.corr;
  uint32_t *qw = buf.qw, *pw = buf.pw;

  // Queries qi = row * g + j (row-major, so positions never decrease with qi), pre-scaled
  // into base-2 logits (kDot: as bf16 dim pairs).
  const __m512 qscale = _mm512_set1_ps(a.scale * kLog2e);
  for (int64_t qi = 0; qi < nq; ++qi) {
    const int64_t row = s.row_start + t.row_begin + qi / g, head = t.kv_head * g + qi % g;
    const float* src = a.q + row * a.q_stride + head * hd;
    for (int64_t d = 0; d < hdp; d += kVec) {
      const __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(FirstLanes(hd - d), src + d), qscale);
      if constexpr (kDot) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(qw + (qi * hdp + d) / 2),
                            reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(x)));
      } else {
        _mm512_storeu_ps(qs + qi * hdp + d, x);
      }
      _mm512_storeu_ps(acc + qi * hdp + d, _mm512_setzero_ps());
    }
    m[qi] = -kInf;
    l[qi] = 0.0f;
  }

  // The prefetch stream, paced by the kernels' inner-loop iterations: per tile and query
  // block, the score pass's dims (pairs) and each value pass's tokens (pairs). Exact for
  // decode; for prefill rows (which skip tiles past their position) an over-estimate,
  // so the stream may end short: the loss is prefetches, never results.
  const int64_t n_tiles = (n_tok - tok0 + kTile - 1) / kTile;
  const int64_t q_blocks = (nq + kQBlock - 1) / kQBlock;
  // Widen each tile once for all query blocks (kWideMinQueryBlocks).
  const bool wide = kBf16 && !kDot && q_blocks >= kWideMinQueryBlocks;
  WideTile wt;
  const int64_t value_passes = (hd + kDBlock * kVec - 1) / (kDBlock * kVec);
  const int64_t per_tile = kBf16 ? hd / 2 + value_passes * (kTile / 2) : hd + value_passes * kTile;
  buf.stream->Plan(a, t, successor, n_tiles * q_blocks * per_tile);

  Tile tiles[2];
  Tile successor_first;  // the successor task's first tile: prefetched during the last tile
  BuildTile<kBf16>(cache, a.layer, t.kv_head, s.block_table.data(), vrow, tok0, n_tok, tiles[0]);
  for (int64_t i = 0; tiles[i % 2].n > 0; ++i) {
    const Tile& tile = tiles[i % 2];
    Tile& next = tiles[(i + 1) % 2];
    BuildTile<kBf16>(cache, a.layer, t.kv_head, s.block_table.data(), vrow, tile.start + tile.n, n_tok, next);
    const Tile* ahead = &next;
    if (next.n == 0 && successor != nullptr) {
      const AttentionSeq& ss = a.seqs[successor->seq];
      BuildTile<kBf16>(cache, a.layer, successor->kv_head, ss.block_table.data(), vrow,
                       TaskFirstToken(a, *successor), int64_t{ss.context} - ss.rows + successor->row_end,
                       successor_first);
      ahead = &successor_first;
    }
    const bool pf = ahead->n > 0;  // the first query block's passes prefetch the tile ahead
    const int64_t t0 = tile.start, tile_n = tile.n;
    const TokenVec* tv = tile.tv;
    const int ntv = tile.ntv;
    // Rows at positions < t0 see nothing of this tile (nor of later ones).
    const int64_t q_first = Max(0, t0 - first_pos) * g;
    if (wide) WidenTile(tile, hd, kstep, buf.wk, buf.wv, *ahead, wt);

    for (int64_t b0 = q_first; b0 < nq; b0 += kQBlock) {
      const int64_t qb = Min(kQBlock, nq - b0);
      const bool pfb = pf && b0 == q_first;
      if constexpr (kDot) {
        kKernel<ScoresDotK>[pfb][qb - 1][ntv - 1](qw + b0 * hdp / 2, hdp / 2, hd, tv, kstep, p + b0 * kTile,
                                                   ahead->tv, buf.stream);
      } else if (wide) {
        kKernel<ScoresK<false>>[false][qb - 1][ntv - 1](qs + b0 * hdp, hdp, hd, wt.tv, kVec * 4, p + b0 * kTile, wt.tv,
                                                        buf.stream);
      } else {
        kKernel<ScoresK<kBf16>>[pfb][qb - 1][ntv - 1](qs + b0 * hdp, hdp, hd, tv, kstep, p + b0 * kTile, ahead->tv,
                                                      buf.stream);
      }
    }

    for (int64_t qi = q_first; qi < nq; ++qi) {
      const int64_t visible = first_pos + qi / g - t0 + 1;  // >= 1
      // With a window, tile tokens j < hidden are before it (j + t0 <= position - window).
      const int64_t hidden = window > 0 ? first_pos + qi / g - window + 1 - t0 : 0;
      float* pr = p + qi * kTile;
      // Scores are compact (token j at pr[j]): whole vectors of 16 with a tail mask.
      const int64_t nvec = (tile_n + kVec - 1) / kVec;
      __mmask16 mask[kTileVecs];
      __m512 mx = _mm512_set1_ps(-kInf);
      for (int v = 0; v < nvec; ++v) {
        mask[v] = FirstLanes(Min(tile_n, visible) - v * kVec);
        if (hidden > v * kVec) mask[v] = static_cast<__mmask16>(mask[v] & ~FirstLanes(hidden - v * kVec));
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
      // 0 on the first tile the query sees (m = -inf); before it (a window's start not
      // reached: nothing seen yet, m_new = -inf) acc and l stay 0.
      corr[qi] = m_new == -kInf ? 0.0f : __builtin_exp2f(m[qi] - m_new);
      l[qi] = l[qi] * corr[qi] + _mm512_reduce_add_ps(sum);
      m[qi] = m_new;
      if constexpr (kDot) {
        // Each token vector's probabilities as bf16 pair words (a vector starts at an
        // even slot; lanes past its tokens are 0, so an odd vector's last word has a zero
        // second half). Vectors in order: a store's spill past the vector's pairs is
        // overwritten by the next one.
        uint32_t* wr = pw + qi * kPairRow;
        for (int v = 0; v < ntv; ++v) {
          const int64_t j0 = tv[v].start - t0;
          const __m512 x = _mm512_maskz_loadu_ps(FirstLanes(tv[v].n), pr + j0);
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(wr + tile.pair_base[v]),
                              reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(x)));
        }
      }
    }

    for (int64_t b0 = q_first; b0 < nq; b0 += kQBlock) {
      const int64_t qb = Min(kQBlock, nq - b0);
      const bool pfb = pf && b0 == q_first;
      // The block's last query has the highest position: it bounds the tokens used.
      const int64_t limit = Min(tile_n, first_pos + (b0 + qb - 1) / g - t0 + 1);
      int64_t npairs = 0;  // bf16: the pairs whose first token is below the limit
      if constexpr (kBf16) {
        while (npairs < tile.nrows && tile.first[npairs] < limit) ++npairs;
      }
      for (int64_t d0 = 0; d0 < hd; d0 += kDBlock * kVec) {
        const int64_t dv = Min(kDBlock, (hd - d0 + kVec - 1) / kVec);
        if (wide) {
          kKernel<AccumulateK>[false][qb - 1][dv - 1](acc + b0 * hdp, hdp, corr + b0, p + b0 * kTile, wt.vrows, limit,
                                                      d0, hd, wt.vrows, buf.stream);
        } else if constexpr (kBf16) {
          kKernel<PairsK<kMath>>[pfb][qb - 1][dv - 1](acc + b0 * hdp, hdp, corr + b0, p + b0 * kTile,
                                                        pw + b0 * kPairRow, tile, npairs, d0, hd, ahead->vrows,
                                                        buf.stream);
        } else {
          kKernel<AccumulateK>[pfb][qb - 1][dv - 1](acc + b0 * hdp, hdp, corr + b0, p + b0 * kTile, tile.vrows, limit,
                                                    d0, hd, ahead->vrows, buf.stream);
        }
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

#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

void RunTaskAvx512(const Args& a, const Task& t, const Task* successor) {
  if (a.cache->config().dtype != DType::kBF16) {
    RunTask<false, Bf16Math::kWiden>(a, t, successor);
  } else if (a.bf16_dot) {
    RunTask<true, Bf16Math::kDot>(a, t, successor);
  } else {
    RunTask<true, Bf16Math::kWiden>(a, t, successor);
  }
}

}  // namespace llmserve::attention
