// Small-batch GEMM kernels (design in small_gemm.h, layout in gemv.h).
//
// Per thread: panels p0..p1 in order; each panel in k blocks of block_steps "steps" (by
// default 256: 64 KiB; a step is one 256-byte row of the panel: one k for f32, one k pair
// for bf16). For each
// block, the M rows run in tiles of <= kTileRows rows; a tile loads its accumulators
// (zero on the first block, else the partial sums parked in y), walks the block's steps
// (4 zmm weight loads + per row one broadcast of x and 4 FMA / vdpbf16ps), and parks or
// finishes (bias, tail mask) its sums in y. The block is read from memory by the first
// tile and from L1/L2 by the others; meanwhile every tile prefetches its share of the
// next block, which is contiguous in memory (the next k block or the next panel).
#include "model/ops/small_gemm.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "model/ops/linear_convert.h"
#include "model/ops/simd_math.h"

namespace llmserve {
namespace {

#define LLMSERVE_TARGET_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// Rows per register tile: kTileRows × 4 accumulators + 4 weight vectors fit in 32 zmm.
constexpr int kTileRows = 6;
// Bytes of one step of a panel.
constexpr int64_t kRowBytes = 256;
// Below this many weight bytes one thread does the whole product (fork/join costs more).
constexpr size_t kParallelMinBytes = size_t{64} << 10;
// Row stride of the bf16 copy of x, in elements (keeps rows 64-byte aligned).
constexpr int64_t kXAlign = 32;
// The bf16 kernels run only where SmallGemmSupported says AVX512_BF16 may run, so they
// round x with it.
constexpr Isa kBf16Isa = Isa::kAvx512Bf16;

int64_t RoundUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// Where a tile's prefetches go: `count` cache lines from `next`, `per_step` per step.
struct PrefetchPlan {
  const unsigned char* next = nullptr;
  int64_t count = 0;
  int64_t per_step = 0;
};

// One tile's view of a block: y/bias at the panel's first column, `cols` valid columns.
struct TileOut {
  float* y = nullptr;
  int64_t ys = 0;  // row stride of y
  int64_t cols = 0;
  const float* bias = nullptr;
  bool first = false, last = false;
};

LLMSERVE_TARGET_AVX512 inline void Prefetch(const PrefetchPlan& pf, int64_t& done) {
  for (int64_t q = 0; q < pf.per_step && done < pf.count; ++q, ++done) {
    _mm_prefetch(reinterpret_cast<const char*>(pf.next + 64 * done), _MM_HINT_T1);
  }
}

LLMSERVE_TARGET_AVX512 inline __mmask16 ColMask(const TileOut& o, int j) {
  return 16 * j < o.cols ? simd::TailMask(o.cols - 16 * j) : static_cast<__mmask16>(0);
}

// Zero, or the partial sums parked in y by the previous block.
template <int R>
LLMSERVE_TARGET_AVX512 inline void LoadAcc(__m512 (&acc)[R][4], const TileOut& o) {
  for (int j = 0; j < 4; ++j) {
    const __mmask16 mask = ColMask(o, j);
    for (int r = 0; r < R; ++r) {
      acc[r][j] = o.first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask, o.y + r * o.ys + 16 * j);
    }
  }
}

// Parks the partial sums in y, or adds the bias and stores the result on the last block.
template <int R>
LLMSERVE_TARGET_AVX512 inline void StoreAcc(const __m512 (&acc)[R][4], const TileOut& o) {
  for (int j = 0; j < 4; ++j) {
    const __mmask16 mask = ColMask(o, j);
    if (mask == 0) break;
    const __m512 b = o.last && o.bias != nullptr ? _mm512_maskz_loadu_ps(mask, o.bias + 16 * j) : _mm512_setzero_ps();
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(o.y + r * o.ys + 16 * j, mask, _mm512_add_ps(acc[r][j], b));
  }
}

// R rows × 64 outputs over `steps` k pairs of a bf16 block; xb at the block's first pair.
template <int R>
LLMSERVE_TARGET_AVX512_BF16 void TileBf16(const unsigned char* w, int64_t steps, const uint16_t* xb, int64_t xs,
                                          const PrefetchPlan& pf, const TileOut& o) {
  __m512 acc[R][4];
  LoadAcc<R>(acc, o);
  int64_t done = 0;
  for (int64_t k = 0; k < steps; ++k) {
    const unsigned char* row = w + k * kRowBytes;
    Prefetch(pf, done);
    __m512bh wv[4];
    for (int j = 0; j < 4; ++j) wv[j] = (__m512bh)_mm512_loadu_si512(row + 64 * j);
    for (int r = 0; r < R; ++r) {
      int32_t pair;
      std::memcpy(&pair, xb + r * xs + 2 * k, sizeof(pair));
      const __m512bh xv = (__m512bh)_mm512_set1_epi32(pair);
      for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], wv[j], xv);
    }
  }
  StoreAcc<R>(acc, o);
}

// As TileBf16, with f32 FMAs: each 16-output × k-pair weight vector is widened into its
// odd-k and even-k halves (a mask and a shift), which are multiplied into the sums in
// that order with x already rounded to bf16 (xf: f32 copy). That is what vdpbf16ps does
// (two fused multiply-adds, the odd k first; bf16 products are exact in f32), so the
// results are bit for bit the same, except that vdpbf16ps also flushes denormals to zero.
// On CPUs that run f32 FMAs at more than twice the rate of vdpbf16ps (Intel's:
// Bf16KernelFor) this is the faster kernel.
template <int R>
LLMSERVE_TARGET_AVX512 void TileBf16Fma(const unsigned char* w, int64_t steps, const float* xf, int64_t xs,
                                        const PrefetchPlan& pf, const TileOut& o) {
  __m512 acc[R][4];
  LoadAcc<R>(acc, o);
  const __m512i odd_mask = _mm512_set1_epi32(static_cast<int32_t>(0xFFFF0000u));
  int64_t done = 0;
  for (int64_t k = 0; k < steps; ++k) {
    const unsigned char* row = w + k * kRowBytes;
    Prefetch(pf, done);
    __m512 xe[R], xo[R];
    for (int r = 0; r < R; ++r) {
      xe[r] = _mm512_set1_ps(xf[r * xs + 2 * k]);
      xo[r] = _mm512_set1_ps(xf[r * xs + 2 * k + 1]);
    }
    for (int j = 0; j < 4; ++j) {
      const __m512i raw = _mm512_loadu_si512(row + 64 * j);
      const __m512 odd = _mm512_castsi512_ps(_mm512_and_si512(raw, odd_mask));
      const __m512 even = _mm512_castsi512_ps(_mm512_slli_epi32(raw, 16));
      for (int r = 0; r < R; ++r) {
        acc[r][j] = _mm512_fmadd_ps(odd, xo[r], acc[r][j]);
        acc[r][j] = _mm512_fmadd_ps(even, xe[r], acc[r][j]);
      }
    }
  }
  StoreAcc<R>(acc, o);
}

// R rows × 64 outputs over `steps` k of an f32 block; x at the block's first k.
template <int R>
LLMSERVE_TARGET_AVX512 void TileF32(const unsigned char* w, int64_t steps, const float* x, int64_t xs,
                                    const PrefetchPlan& pf, const TileOut& o) {
  __m512 acc[R][4];
  LoadAcc<R>(acc, o);
  int64_t done = 0;
  for (int64_t k = 0; k < steps; ++k) {
    const float* row = reinterpret_cast<const float*>(w + k * kRowBytes);
    Prefetch(pf, done);
    __m512 wv[4];
    for (int j = 0; j < 4; ++j) wv[j] = _mm512_loadu_ps(row + 16 * j);
    for (int r = 0; r < R; ++r) {
      const __m512 xv = _mm512_set1_ps(x[r * xs + k]);
      for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_fmadd_ps(wv[j], xv, acc[r][j]);
    }
  }
  StoreAcc<R>(acc, o);
}

// Calls f(std::integral_constant<int, R>) for R = rows (1..kTileRows): the tile kernels
// are instantiated per row count, so that their accumulators live in registers.
template <class F>
void WithTileRows(int rows, F&& f) {
  static_assert(kTileRows == 6, "WithTileRows instantiates R = 1..6");
  switch (rows) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    default: return f(std::integral_constant<int, 6>{});
  }
}

// A tile of `rows` (1..kTileRows) rows; x points at the tile's first row, block's first k.
void RunTile(DType dtype, Bf16Kernel kernel, int rows, const unsigned char* w, int64_t steps, const void* x,
             int64_t xs, const PrefetchPlan& pf, const TileOut& o) {
  const auto* xf = static_cast<const float*>(x);
  const auto* xb = static_cast<const uint16_t*>(x);
  WithTileRows(rows, [&](auto r) {
    if (dtype == DType::kBF16 && kernel == Bf16Kernel::kFma) {
      TileBf16Fma<r()>(w, steps, xf, xs, pf, o);
    } else if (dtype == DType::kBF16) {
      TileBf16<r()>(w, steps, xb, xs, pf, o);
    } else {
      TileF32<r()>(w, steps, xf, xs, pf, o);
    }
  });
}

// Panels [p0, p1) of all m rows. x: f32 [m, in] (f32 weights) or the rounded copy (stride
// xs; bf16, or f32 for the FMA kernel).
void RunPanels(const GemvWeights& w, const SmallGemmOptions& options, const void* x, int64_t xs, int64_t m, int64_t p0,
               int64_t p1, int64_t panels, float* y) {
  const Bf16Kernel kernel = options.bf16_kernel;
  const bool bf16 = w.dtype == DType::kBF16;
  const int64_t steps = bf16 ? (w.in + 1) / 2 : w.in;
  const int64_t x_per_step = bf16 ? 2 : 1;  // x elements per step
  const size_t xsize = bf16 && kernel == Bf16Kernel::kDot ? sizeof(uint16_t) : sizeof(float);
  const int64_t panel_bytes = w.in_padded * kGemvPanel * static_cast<int64_t>(DTypeSize(w.dtype));
  const auto* base = static_cast<const unsigned char*>(w.data);
  const int64_t block_steps = std::max<int64_t>(1, options.block_steps);
  // Balanced tiles: as few as kTileRows allows, sizes differing by at most one.
  const int64_t tiles = (m + kTileRows - 1) / kTileRows;
  for (int64_t p = p0; p < p1; ++p) {
    const unsigned char* panel = base + p * panel_bytes;
    for (int64_t kb = 0; kb < steps; kb += block_steps) {
      const int64_t n = std::min(block_steps, steps - kb);
      const bool last_block = kb + n == steps;
      // The next block: the rest of this panel, else the next panel's first block.
      const unsigned char* next = last_block ? panel + panel_bytes : panel + (kb + n) * kRowBytes;
      const int64_t next_steps = last_block ? (p + 1 < panels ? std::min(block_steps, steps) : 0)
                                            : std::min(block_steps, steps - kb - n);
      const int64_t lines = next_steps * (kRowBytes / 64);
      int64_t r0 = 0;
      for (int64_t t = 0; t < tiles; ++t) {
        const int rows = static_cast<int>(m / tiles + (t < m % tiles ? 1 : 0));
        PrefetchPlan pf;
        const int64_t l0 = lines * t / tiles, l1 = lines * (t + 1) / tiles;
        pf.next = next + 64 * l0;
        pf.count = l1 - l0;
        pf.per_step = (pf.count + n - 1) / n;
        TileOut o;
        o.y = y + r0 * w.out + p * kGemvPanel;
        o.ys = w.out;
        o.cols = std::min<int64_t>(kGemvPanel, w.out - p * kGemvPanel);
        o.bias = w.bias != nullptr ? w.bias + p * kGemvPanel : nullptr;
        o.first = kb == 0;
        o.last = last_block;
        const void* xt = static_cast<const unsigned char*>(x) + static_cast<size_t>(r0 * xs + kb * x_per_step) * xsize;
        RunTile(w.dtype, kernel, rows, panel + kb * kRowBytes, n, xt, xs, pf, o);
        r0 += rows;
      }
    }
  }
}

}  // namespace

const char* Bf16KernelName(Bf16Kernel kernel) { return kernel == Bf16Kernel::kFma ? "fma" : "dot"; }

Bf16Kernel Bf16KernelFor(const CpuFeatures& cpu) { return cpu.intel ? Bf16Kernel::kFma : Bf16Kernel::kDot; }

bool SmallGemmSupported(DType dtype, Isa isa) { return GemvSupported(dtype, isa); }

size_t SmallGemmScratchElements(const GemvWeights& w, int64_t m) {
  if (w.dtype != DType::kBF16) return 0;
  // Room for either kernel's copy of x: bf16, or f32 for the FMA kernel.
  return 2 * static_cast<size_t>(m) * static_cast<size_t>(RoundUp(w.in, kXAlign));
}

void SmallGemm(const GemvWeights& w, const float* x, int64_t m, float* y, uint16_t* scratch,
               const SmallGemmOptions& options) {
  if (m <= 0) return;
  const bool bf16 = w.dtype == DType::kBF16;
  SmallGemmOptions o = options;
  if (!bf16) o.bf16_kernel = Bf16Kernel::kDot;  // f32 weights: x is read as it is
  const bool fma = bf16 && o.bf16_kernel == Bf16Kernel::kFma;
  const int64_t xs = bf16 ? RoundUp(w.in, kXAlign) : w.in;
  auto* xf = reinterpret_cast<float*>(scratch);  // the FMA kernel's copy (scratch is float-aligned)
  const void* xv = !bf16 ? static_cast<const void*>(x) : fma ? static_cast<const void*>(xf) : scratch;
  // This thread's share (t of nt) of rounding x for the kernel.
  auto round_x = [&](int t, int nt) {
    if (fma) {
      RoundRowsToBf16(kBf16Isa, x, m, w.in, xf, xs, t, nt);
    } else if (bf16) {
      ConvertRowsToBf16(kBf16Isa, x, m, w.in, scratch, xs, t, nt);
    }
  };
  const int64_t panels = RoundUp(w.out, kGemvPanel) / kGemvPanel;
  const size_t bytes = static_cast<size_t>(panels * w.in_padded * kGemvPanel) * DTypeSize(w.dtype);
  if (bytes < kParallelMinBytes || panels < 2 || omp_get_max_threads() == 1 || omp_in_parallel()) {
    round_x(0, 1);
    RunPanels(w, o, xv, xs, m, 0, panels, panels, y);
    return;
  }
#pragma omp parallel
  {
    const int t = omp_get_thread_num();
    const int nt = omp_get_num_threads();
    // Each thread rounds its share of x (the rows it likely wrote itself in the op before).
    if (bf16) {
      round_x(t, nt);
#pragma omp barrier
    }
    RunPanels(w, o, xv, xs, m, panels * t / nt, panels * (t + 1) / nt, panels, y);
  }
}

}  // namespace llmserve
