// Small-batch matrix products for decode at batch 5..32: y[M, out] = x[M, in] · Wᵀ (+ b)
// for kSmallGemmMinRows <= M <= kSmallGemmMaxRows, AVX-512 (f32 via FMA, bf16 via
// vdpbf16ps), over the same panel-packed weights the GEMV reads (layout in gemv.h: oneDNN's
// BA16a64b2a / BA16a64b, read in place, no second copy).
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

namespace llmserve {

// Smallest M the kernel serves (below it the GEMV is better: weight-bandwidth bound).
inline constexpr int64_t kSmallGemmMinRows = kGemvMaxRows + 1;
// Largest M the kernel can serve (Linear may use a lower limit: SmallGemmDispatchMaxRows).
inline constexpr int64_t kSmallGemmMaxRows = 32;

// True when this CPU (and the ISA cap of simd_math.h) can run the kernel for `dtype`.
bool SmallGemmSupported(DType dtype);

// uint16 elements of scratch SmallGemm needs for `m` rows (0 for f32 weights).
size_t SmallGemmScratchElements(const GemvWeights& w, int64_t m);

// y = x · Wᵀ + b for m rows (1..kSmallGemmMaxRows; any m works, the kernel is built for
// 5..32); x [m, in] and y [m, out] f32 row-major. bf16 weights: x is rounded to bf16
// (nearest even) into `scratch` once, as oneDNN's bf16 matmul does. Parallel over panels
// with the OpenMP threads in effect. Call only when SmallGemmSupported(w.dtype).
void SmallGemm(const GemvWeights& w, const float* x, int64_t m, float* y, uint16_t* scratch);

// Largest M for which Linear uses SmallGemm instead of oneDNN's matmul for `dtype`
// weights (0: never), chosen from bench/linear_bench measurements on the target CPU.
int64_t SmallGemmDispatchMaxRows(DType dtype);

// Bench hook: SmallGemmDispatchMaxRows returns `rows` for every dtype (-1: the measured
// defaults again). Thread-safe.
void SetSmallGemmDispatchOverride(int64_t rows);

// Bench hook: k blocks of `steps` 256-byte panel rows instead of the default (<= 0: the
// default again). Thread-safe; results are the same for every block size.
void SetSmallGemmBlockStepsOverride(int64_t steps);

// Process-wide switch: when off, Linear sends M > kGemvMaxRows to oneDNN (A/B tests and
// benches). Default on. Thread-safe.
void SetSmallGemmEnabled(bool enabled);
// The switch's current value. Thread-safe.
bool SmallGemmEnabled();

}  // namespace llmserve
