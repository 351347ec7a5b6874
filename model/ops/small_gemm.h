// Small-batch matrix products for decode at batch 5..32: y[M, out] = x[M, in] · Wᵀ (+ b)
// for kSmallGemmMinRows <= M <= kSmallGemmMaxRows, AVX-512 (f32 via FMA, bf16 via
// vdpbf16ps or, where faster, f32 FMA: Bf16Kernel), over the same panel-packed weights the GEMV reads (layout in gemv.h: oneDNN's
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
#include <optional>

#include "model/dtype.h"
#include "model/ops/gemv.h"

namespace llmserve {

// How the bf16 kernel multiplies: vdpbf16ps (kDot), or f32 FMAs over weights widened to
// f32 in registers (kFma). Both give the same results bit for bit (vdpbf16ps is two fused
// multiply-adds, odd k first, of exact bf16 products), except that vdpbf16ps flushes
// denormals to zero. Which is faster depends on the CPU: AMD Zen 4 runs one 512-bit
// vdpbf16ps or FMA a cycle, so kDot does the work in half the instructions; recent Intel
// Xeons run two 512-bit FMAs a cycle but half a vdpbf16ps, so kFma is faster there.
enum class Bf16Kernel : uint8_t { kDot, kFma };
const char* Bf16KernelName(Bf16Kernel kernel);

// The measurement behind the automatic choice: one 64 KiB block through two 4-row tiles
// (an 8-row decode step's work on it) with the weights in cache, best of several.
struct Bf16KernelTiming {
  Bf16Kernel kernel = Bf16Kernel::kDot;  // the choice: kFma if it takes < 0.9 of kDot's time
  double dot_us = 0, fma_us = 0;         // 0: not measured (no AVX-512 BF16)
};
// Measured once, at the first call (about a millisecond). Thread-safe.
const Bf16KernelTiming& SmallGemmBf16KernelTiming();
// The kernel bf16 SmallGemm calls use: the override if set, else the measured choice.
Bf16Kernel SmallGemmBf16Kernel();
// Bench/test hook: force a kernel (nullopt: the measured choice again). Thread-safe.
void SetSmallGemmBf16KernelOverride(std::optional<Bf16Kernel> kernel);

// Smallest M the kernel serves (below it the GEMV is better: weight-bandwidth bound).
inline constexpr int64_t kSmallGemmMinRows = kGemvMaxRows + 1;
// Largest M the kernel can serve (Linear may use a lower limit: SmallGemmDispatchMaxRows).
inline constexpr int64_t kSmallGemmMaxRows = 32;

// True when this CPU (and the ISA cap of simd_math.h) can run the kernel for `dtype`.
bool SmallGemmSupported(DType dtype);

// uint16 elements of scratch SmallGemm needs for `m` rows (0 for f32 weights; 4-byte
// aligned: the FMA kernel keeps an f32 copy of x there).
size_t SmallGemmScratchElements(const GemvWeights& w, int64_t m);

// y = x · Wᵀ + b for m rows (any m >= 1; the kernel is built for 5..32, and for any m
// with the FMA kernel, which also serves prefill); x [m, in] and y [m, out] f32 row-major. bf16 weights: x is rounded to bf16
// (nearest even) into `scratch` once, as oneDNN's bf16 matmul does (as bf16, or as f32
// for the FMA kernel: SmallGemmBf16Kernel). Parallel over panels
// with the OpenMP threads in effect. Call only when SmallGemmSupported(w.dtype).
void SmallGemm(const GemvWeights& w, const float* x, int64_t m, float* y, uint16_t* scratch);

// What SmallGemmDispatchMaxRows returns for bf16 weights with the FMA kernel: every M a
// step can have.
inline constexpr int64_t kSmallGemmFmaDispatchRows = int64_t{1} << 40;

// Largest M for which Linear uses SmallGemm instead of oneDNN's matmul for `dtype`
// weights (0: never), chosen from measurements on the target CPUs: kSmallGemmMaxRows,
// or kSmallGemmFmaDispatchRows for bf16 with the FMA kernel (SmallGemmBf16Kernel).
int64_t SmallGemmDispatchMaxRows(DType dtype);

// Bench hook: SmallGemmDispatchMaxRows returns `rows` for every dtype (-1: the measured
// defaults again). Thread-safe.
void SetSmallGemmDispatchOverride(int64_t rows);

// Smallest M for which Linear uses SmallGemm for `dtype` weights (below it, the GEMV):
// kSmallGemmMinRows, or 1 for bf16 with the FMA kernel. On the CPU that picks it (Intel
// Xeon, docs/PERFORMANCE.md) the blocked kernel also streams a 1-row product faster than
// the GEMV does (bench/forward_bench, LLMSERVE_BENCH_FEW_ROWS=ab).
int64_t SmallGemmDispatchMinRows(DType dtype);

// Bench/test hook: SmallGemmDispatchMinRows returns `rows` for every dtype (-1: the
// defaults again). Thread-safe.
void SetSmallGemmDispatchMinOverride(int64_t rows);

// Bench hook: k blocks of `steps` 256-byte panel rows instead of the default (<= 0: the
// default again). Thread-safe; results are the same for every block size.
void SetSmallGemmBlockStepsOverride(int64_t steps);

// Process-wide switch: when off, Linear sends M > kGemvMaxRows to oneDNN (A/B tests and
// benches). Default on. Thread-safe.
void SetSmallGemmEnabled(bool enabled);
// The switch's current value. Thread-safe.
bool SmallGemmEnabled();

}  // namespace llmserve
