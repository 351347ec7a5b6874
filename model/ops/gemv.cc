// Small-M GEMV kernels (layout in gemv.h). Each panel of 64 outputs keeps M × 4 zmm
// accumulators and walks its contiguous run of k rows (256 bytes each) once; threads take
// contiguous ranges of panels, so each streams one region of memory front to back, with
// software prefetch a fixed distance ahead of the loads (the hardware streamer stops at
// 4 KiB page boundaries).
#include "model/ops/gemv.h"

#include <omp.h>

#include <cstring>

#include "model/ops/linear_convert.h"
#include "model/ops/simd_math.h"

namespace llmserve {
namespace {

#define LLMSERVE_TARGET_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// Below this many weight bytes one thread does the whole product (fork/join costs more).
constexpr size_t kParallelMinBytes = size_t{64} << 10;
// Software prefetch distance ahead of the current k row, in bytes.
constexpr int64_t kPrefetchBytes = 1024;
// Bytes of one k row of a panel (64 outputs × 4 bytes f32, × 2 bytes × 2 k for bf16).
constexpr int64_t kRowBytes = 256;
// Row stride of the bf16 copy of x, in elements (keeps rows 64-byte aligned).
constexpr int64_t kXAlign = 32;
// The bf16 GEMV runs only where GemvSupported says AVX512_BF16 may run, so it rounds x with it.
constexpr Isa kBf16Isa = Isa::kAvx512Bf16;

int64_t RoundUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

LLMSERVE_TARGET_AVX512 inline void Prefetch(const void* row) {
  const char* p = static_cast<const char*>(row) + kPrefetchBytes;
  for (int64_t off = 0; off < kRowBytes; off += 64) _mm_prefetch(p + off, _MM_HINT_T0);
}

// Adds the bias and stores the panel's first min(64, out - 64p) outputs of each row.
template <int M>
LLMSERVE_TARGET_AVX512 inline void StorePanel(const __m512 (&acc)[M][4], const float* bias, int64_t p, int64_t out,
                                              float* y) {
  for (int j = 0; j < 4; ++j) {
    const int64_t col = p * kGemvPanel + 16 * j;
    if (col >= out) break;
    const __mmask16 mask = simd::TailMask(out - col);
    const __m512 b = bias != nullptr ? _mm512_maskz_loadu_ps(mask, bias + col) : _mm512_setzero_ps();
    for (int r = 0; r < M; ++r) _mm512_mask_storeu_ps(y + r * out + col, mask, _mm512_add_ps(acc[r][j], b));
  }
}

// Panels [p0, p1) of a bf16 weight; xb holds M rows of bf16 x (stride xs, even length
// with a zero after an odd `in`).
template <int M>
LLMSERVE_TARGET_AVX512_BF16 void PanelsBf16(const GemvWeights& w, const uint16_t* xb, int64_t xs, int64_t p0,
                                            int64_t p1, float* y) {
  const int64_t pairs = (w.in + 1) / 2;
  const int64_t panel_elems = w.in_padded * kGemvPanel;
  const auto* base = static_cast<const uint16_t*>(w.data);
  for (int64_t p = p0; p < p1; ++p) {
    const uint16_t* wp = base + p * panel_elems;
    __m512 acc[M][4];
    for (int r = 0; r < M; ++r) {
      for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
    }
    for (int64_t k = 0; k < pairs; ++k) {
      const uint16_t* row = wp + k * 2 * kGemvPanel;
      Prefetch(row);
      __m512bh wv[4];
      for (int j = 0; j < 4; ++j) wv[j] = (__m512bh)_mm512_loadu_si512(row + 32 * j);
      for (int r = 0; r < M; ++r) {
        int32_t pair;
        std::memcpy(&pair, xb + r * xs + 2 * k, sizeof(pair));
        const __m512bh xv = (__m512bh)_mm512_set1_epi32(pair);
        for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], wv[j], xv);
      }
    }
    StorePanel<M>(acc, w.bias, p, w.out, y);
  }
}

// Panels [p0, p1) of an f32 weight; x is the caller's [M, in].
template <int M>
LLMSERVE_TARGET_AVX512 void PanelsF32(const GemvWeights& w, const float* x, int64_t p0, int64_t p1, float* y) {
  const int64_t panel_elems = w.in_padded * kGemvPanel;
  const auto* base = static_cast<const float*>(w.data);
  for (int64_t p = p0; p < p1; ++p) {
    const float* wp = base + p * panel_elems;
    __m512 acc[M][4];
    for (int r = 0; r < M; ++r) {
      for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
    }
    for (int64_t k = 0; k < w.in; ++k) {
      const float* row = wp + k * kGemvPanel;
      Prefetch(row);
      __m512 wv[4];
      for (int j = 0; j < 4; ++j) wv[j] = _mm512_loadu_ps(row + 16 * j);
      for (int r = 0; r < M; ++r) {
        const __m512 xv = _mm512_set1_ps(x[r * w.in + k]);
        for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_fmadd_ps(wv[j], xv, acc[r][j]);
      }
    }
    StorePanel<M>(acc, w.bias, p, w.out, y);
  }
}

// Panels [p0, p1) for m rows.
void RunPanels(const GemvWeights& w, const float* x, const uint16_t* xb, int64_t xs, int64_t m, int64_t p0,
               int64_t p1, float* y) {
  if (w.dtype == DType::kBF16) {
    switch (m) {
      case 1: return PanelsBf16<1>(w, xb, xs, p0, p1, y);
      case 2: return PanelsBf16<2>(w, xb, xs, p0, p1, y);
      case 3: return PanelsBf16<3>(w, xb, xs, p0, p1, y);
      default: return PanelsBf16<4>(w, xb, xs, p0, p1, y);
    }
  }
  switch (m) {
    case 1: return PanelsF32<1>(w, x, p0, p1, y);
    case 2: return PanelsF32<2>(w, x, p0, p1, y);
    case 3: return PanelsF32<3>(w, x, p0, p1, y);
    default: return PanelsF32<4>(w, x, p0, p1, y);
  }
}

}  // namespace

static_assert(kGemvMaxRows == 4, "RunPanels instantiates M = 1..4");

int64_t GemvKBlock(DType dtype) { return dtype == DType::kBF16 ? 32 : 16; }

size_t GemvPackedElements(DType dtype, int64_t out, int64_t in) {
  return static_cast<size_t>(RoundUp(out, kGemvPanel)) * static_cast<size_t>(RoundUp(in, GemvKBlock(dtype)));
}

void GemvPack(DType dtype, const void* plain, int64_t out, int64_t in, void* dst) {
  const int64_t in_padded = RoundUp(in, GemvKBlock(dtype));
  const int64_t panels = RoundUp(out, kGemvPanel) / kGemvPanel;
  const int vnni = dtype == DType::kBF16 ? 2 : 1;
  const size_t esize = DTypeSize(dtype);
  const auto* src = static_cast<const unsigned char*>(plain);
  auto* d = static_cast<unsigned char*>(dst);
  for (int64_t p = 0; p < panels; ++p) {
    for (int64_t k = 0; k < in_padded; ++k) {
      for (int64_t c = 0; c < kGemvPanel; ++c) {
        const int64_t n = p * kGemvPanel + c;
        const int64_t at = p * in_padded * kGemvPanel + (k / vnni) * kGemvPanel * vnni + c * vnni + k % vnni;
        unsigned char* to = d + static_cast<size_t>(at) * esize;
        if (n < out && k < in) {
          std::memcpy(to, src + static_cast<size_t>(n * in + k) * esize, esize);
        } else {
          std::memset(to, 0, esize);
        }
      }
    }
  }
}

bool GemvSupported(DType dtype, Isa isa) {
  if (dtype == DType::kBF16) return HasAvx512Bf16(isa);
  return dtype == DType::kF32 && HasAvx512(isa);
}

size_t GemvScratchElements(const GemvWeights& w, int64_t m) {
  if (w.dtype != DType::kBF16) return 0;
  return static_cast<size_t>(m) * static_cast<size_t>(RoundUp(w.in, kXAlign));
}

void Gemv(const GemvWeights& w, const float* x, int64_t m, float* y, uint16_t* scratch) {
  if (m <= 0) return;
  const bool bf16 = w.dtype == DType::kBF16;
  const int64_t xs = RoundUp(w.in, kXAlign);
  const int64_t panels = RoundUp(w.out, kGemvPanel) / kGemvPanel;
  const size_t bytes = static_cast<size_t>(panels * w.in_padded * kGemvPanel) * DTypeSize(w.dtype);
  if (bytes < kParallelMinBytes || panels < 2 || omp_get_max_threads() == 1 || omp_in_parallel()) {
    if (bf16) ConvertRowsToBf16(kBf16Isa, x, m, w.in, scratch, xs, 0, 1);
    RunPanels(w, x, scratch, xs, m, 0, panels, y);
    return;
  }
#pragma omp parallel
  {
    const int t = omp_get_thread_num();
    const int nt = omp_get_num_threads();
    // Each thread rounds a slice of x, so that none waits for one to round it all.
    if (bf16) {
      ConvertRowsToBf16(kBf16Isa, x, m, w.in, scratch, xs, t, nt);
#pragma omp barrier
    }
    RunPanels(w, x, scratch, xs, m, panels * t / nt, panels * (t + 1) / nt, y);
  }
}

}  // namespace llmserve
