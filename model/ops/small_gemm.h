// Small-batch matrix products for decode at batch 5..32: y[M, out] = x[M, in] · Wᵀ (+ b)
// for kSmallGemmMinRows <= M <= kSmallGemmMaxRows, AVX-512 (f32 via FMA, bf16 via
// vdpbf16ps or, where faster, f32 FMA: Bf16Kernel), over the same panel-packed weights
// the GEMV reads (layout in gemv.h: oneDNN's BA16a64b2a / BA16a64b, read in place, no
// second copy).
//
// Each weight panel (64 outputs) is streamed from memory once per call and reused for all
// M rows: the panel is walked in k blocks small enough to stay in L1/L2, and for each
// block every tile of up to 6 rows keeps 6 × 4 zmm accumulators (rows × 16-output
// vectors) in registers. The next block is prefetched while the row tiles run, so the
// memory stream overlaps the arithmetic. Threads take contiguous ranges of panels.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/dtype.h"
#include "model/ops/gemv.h"
#include "model/ops/isa.h"

namespace llmserve {

// How the bf16 kernel multiplies: vdpbf16ps (kDot), or f32 FMAs over weights widened to
// f32 in registers (kFma). Both give the same results bit for bit (vdpbf16ps is two fused
// multiply-adds, odd k first, of exact bf16 products), except that vdpbf16ps flushes
// denormals to zero. Which is faster depends on the CPU: AMD Zen 4 runs one 512-bit
// vdpbf16ps or FMA a cycle, so kDot does the work in half the instructions; Intel's
// AVX512_BF16 Xeons run two 512-bit FMAs a cycle but half a vdpbf16ps, so kFma is faster
// there (1.4x on an 8-row block in cache, docs/PERFORMANCE.md).
enum class Bf16Kernel : uint8_t { kDot, kFma };
// "dot" / "fma".
const char* Bf16KernelName(Bf16Kernel kernel);

// The faster bf16 kernel for `cpu`, by the rule above: kFma on Intel CPUs, kDot on the
// others. A rule from the CPU, not a timing, so that the choice does not depend on a
// moment's noise on a shared machine; it agrees with timing both kernels on an 8-row
// block in cache (kFma ~0.7 of kDot's time on an Intel Xeon, kDot the faster on Zen 4).
Bf16Kernel Bf16KernelFor(const CpuFeatures& cpu);

// Smallest M Linear sends to the kernel by default (below it the GEMV is better:
// weight-bandwidth bound), and the largest it serves by default (DenseDispatchFor,
// model/ops/linear.h, may send every M with the FMA kernel).
inline constexpr int64_t kSmallGemmMinRows = kGemvMaxRows + 1;
inline constexpr int64_t kSmallGemmMaxRows = 32;
// Default k block: 256 steps (256-byte panel rows), 64 KiB for every M. Each block costs
// every row tile a load, store and restart of its accumulators, so larger blocks win where
// the kernel is compute-bound; 64 KiB still stays in L2 for the later tiles, and the next
// block's prefetch overlaps the arithmetic (bench/stream_bench --compare-blocks compares
// block sizes).
inline constexpr int64_t kSmallGemmBlockSteps = 256;

// How SmallGemm runs, chosen once and stored by the layer that calls it.
struct SmallGemmOptions {
  Bf16Kernel bf16_kernel = Bf16Kernel::kDot;   // for bf16 weights
  int64_t block_steps = kSmallGemmBlockSteps;  // k block in steps (>= 1); results do not depend on it
};

// True when the kernel for `dtype` can run with `isa` (as the GEMV: gemv.h).
bool SmallGemmSupported(DType dtype, Isa isa);

// uint16 elements of scratch SmallGemm needs for `m` rows (0 for f32 weights; 4-byte
// aligned: the FMA kernel keeps an f32 copy of x there).
size_t SmallGemmScratchElements(const GemvWeights& w, int64_t m);

// y = x · Wᵀ + b for m rows (any m >= 1; the kernel is built for 5..32, and for any m
// with the FMA kernel, which also serves prefill); x [m, in] and y [m, out] f32
// row-major. bf16 weights: x is rounded to bf16 (nearest even) into `scratch` once, as
// oneDNN's bf16 matmul does (as bf16, or as f32 for the FMA kernel). Parallel over panels
// with the OpenMP threads in effect. Call only when SmallGemmSupported(w.dtype, the Isa
// in use).
void SmallGemm(const GemvWeights& w, const float* x, int64_t m, float* y, uint16_t* scratch,
               const SmallGemmOptions& options);

// The largest M DenseDispatchFor gives the kernel for bf16 weights with the FMA kernel:
// every M a step can have.
inline constexpr int64_t kSmallGemmFmaDispatchRows = int64_t{1} << 40;

}  // namespace llmserve
