// RuntimeConfig: how the transformer runs on this machine (not what the model is).
#pragma once

#include <optional>

#include "absl/status/status.h"
#include "model/dtype.h"
#include "model/ops/isa.h"
#include "model/ops/small_gemm.h"
#include "model/quant/quant_gemm.h"

namespace llmserve {

// How linear-layer weights are stored for compute.
enum class WeightQuant : uint8_t {
  kAuto,  // quantized tensors (GGUF Q4_K, ...) keep their format; the others use weight_dtype
  kNone,  // every weight computes in weight_dtype (quantized tensors are dequantized at load)
  kInt8,  // every weight is quantized at load to int8 blocks of 32 with one scale (Q8_0)
};
// "auto" / "none" / "int8".
const char* WeightQuantName(WeightQuant q);

// Kernel choices a caller may force (benchmarks' A/Bs, tests). Whatever is left unset is
// decided from the CPU's features, once, when the Transformer is built (PlanKernels in
// model/kernel_plan.h, which has the rules), and logged at start-up.
struct KernelChoices {
  // Cap on the instruction sets of llmserve's own kernels (norms, RoPE, activations,
  // conversions, GEMV, small-batch kernel, attention; kScalar: the reference kernels);
  // unset = all this CPU has. oneDNN's matmul is not capped.
  std::optional<Isa> isa;
  // The small-batch kernel's bf16 tile; unset = Bf16KernelFor(this CPU).
  std::optional<Bf16Kernel> bf16_kernel;
  // false: no dense product runs on the GEMV (then 1..4 rows go to oneDNN's matmul,
  // unless the small-batch kernel takes them).
  bool gemv = true;
  // false: no dense product runs on the small-batch kernel.
  bool small_gemm = true;
  // The range of M the small-batch kernel takes; unset = DenseDispatchFor's
  // (model/ops/linear.h). A max below the min: never.
  std::optional<int64_t> small_gemm_min_rows;
  std::optional<int64_t> small_gemm_max_rows;
  // The attention kernel's K/V prefetch stream (results do not depend on it).
  bool kv_prefetch = true;

  absl::Status Validate() const;
};

struct RuntimeConfig {
  // Weight dtype the linear layers compute in: kF32 or kBF16. Default: bf16 when the
  // CPU has avx512_bf16 (see DefaultWeightDType()), else f32. Weights of any file dtype
  // are converted at load.
  DType weight_dtype = DType::kF32;
  // Quantized weights: kept, dequantized, or applied to every weight.
  WeightQuant weight_quant = WeightQuant::kAuto;
  // The kernel of the quantized linear layers; unset = the best this CPU supports
  // (BestQuantKernel()). Resolved when the Transformer is built.
  std::optional<QuantKernel> quant_kernel;
  // KV cache element type: kF32 or kBF16.
  DType kv_dtype = DType::kF32;
  // Threads for OpenMP kernels and oneDNN; 0 = all cores.
  int threads = 0;
  // Kernel choices to force; by default every one is decided from the CPU.
  KernelChoices kernels;

  absl::Status Validate() const;
};

// kBF16 if the CPU supports avx512_bf16, else kF32.
DType DefaultWeightDType();

// True if the CPU has AVX-512 F/BW/VL (the vectorized kernels' baseline).
bool CpuHasAvx512();
// True if the CPU has AVX512_BF16 (vdpbf16ps, vcvtne2ps2bf16).
bool CpuHasAvx512Bf16();

// Applies `threads` (0 = all cores) to OpenMP (and so to oneDNN's OpenMP runtime).
// Returns the thread count in effect.
int ApplyThreadCount(int threads);

}  // namespace llmserve
