// RuntimeConfig: how the transformer runs on this machine (not what the model is).
#pragma once

#include <optional>

#include "absl/status/status.h"
#include "model/dtype.h"
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
