// RuntimeConfig: how the transformer runs on this machine (not what the model is).
#pragma once

#include "absl/status/status.h"
#include "model/dtype.h"

namespace llmserve {

struct RuntimeConfig {
  // Weight dtype the linear layers compute in: kF32 or kBF16. Default: bf16 when the
  // CPU has avx512_bf16 (see DefaultWeightDType()), else f32. Weights of any file dtype
  // are converted at load.
  DType weight_dtype = DType::kF32;
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
