// KernelPlan: every kernel choice of a Transformer (which instruction sets its own kernels
// use; which M each dense linear layer runs on the GEMV, the small-batch kernel or
// oneDNN, and with which bf16 tile; the quantized layers' kernel; the attention kernel and
// its K/V prefetch stream). Made once in Transformer::Create from RuntimeConfig and the
// CPU's features, stored with the layers and ops that use it, and printed at start-up.
// Nothing in the process changes it afterwards.
#pragma once

#include <string>

#include "model/ops/isa.h"
#include "model/ops/linear.h"
#include "model/ops/paged_attention.h"
#include "model/runtime_config.h"

namespace llmserve {

struct KernelPlan {
  Isa isa = Isa::kScalar;      // norms, RoPE, activations, residual adds
  LinearOptions linear;        // every linear layer (dense dispatch, conversions, quantized kernel)
  AttentionOptions attention;  // paged attention

  // For the start-up log, e.g. "isa avx512-bf16 | bf16 layers gemv 1-4, small-batch/dot
  // 5-32, onednn 33+ | quantized avx512-vnni | attention avx512-bf16 with K/V prefetch".
  std::string Describe() const;
};

// The plan for `runtime` on a CPU with `cpu`'s features. Each of runtime.kernels' unset
// choices takes its rule:
//   isa           the best the CPU has (CpuFeatures::isa), capped by kernels.isa
//   bf16 tile     Bf16KernelFor(cpu): f32 FMAs on Intel, vdpbf16ps elsewhere
//   dense M       DenseDispatchFor(weight_dtype, bf16 tile) (model/ops/linear.h)
//   quantized     quant_kernel, else AVX-512 VNNI where the CPU has it and the isa allows
//                 AVX-512, else the scalar reference
//   attention     the isa's kernel, with the K/V prefetch stream; a bf16 cache computed
//                 with vdpbf16ps or f32 FMAs as the bf16 tile
// runtime must be valid (RuntimeConfig::Validate).
KernelPlan PlanKernels(const RuntimeConfig& runtime, const CpuFeatures& cpu);

}  // namespace llmserve
