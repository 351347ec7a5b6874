#include "model/kernel_plan.h"

#include "absl/strings/str_cat.h"

namespace llmserve {

KernelPlan PlanKernels(const RuntimeConfig& runtime, const CpuFeatures& cpu) {
  const KernelChoices& k = runtime.kernels;
  KernelPlan plan;
  plan.isa = k.isa ? MinIsa(*k.isa, cpu.isa()) : cpu.isa();

  LinearOptions& lin = plan.linear;
  lin.compute = runtime.weight_dtype;
  lin.quant = runtime.weight_quant;
  lin.isa = plan.isa;
  const bool vnni = HasAvx512(plan.isa) && cpu.avx512_vnni;
  lin.quant_kernel = runtime.quant_kernel.value_or(vnni ? QuantKernel::kAvx512Vnni : QuantKernel::kScalar);
  const Bf16Kernel bf16_kernel = k.bf16_kernel.value_or(Bf16KernelFor(cpu));
  lin.dense = DenseDispatchFor(runtime.weight_dtype, bf16_kernel);
  lin.dense.gemv = k.gemv;
  if (k.small_gemm_min_rows) lin.dense.small_gemm_min_rows = *k.small_gemm_min_rows;
  if (k.small_gemm_max_rows) lin.dense.small_gemm_max_rows = *k.small_gemm_max_rows;
  if (!k.small_gemm) lin.dense.small_gemm_max_rows = 0;

  plan.attention.isa = plan.isa;
  plan.attention.bf16_dot = bf16_kernel == Bf16Kernel::kDot;
  plan.attention.kv_prefetch = k.kv_prefetch;
  return plan;
}

std::string KernelPlan::Describe() const {
  const std::string bf16_math =
      HasAvx512Bf16(attention.isa) ? (attention.bf16_dot ? " (bf16 dot)" : " (bf16 fma)") : "";
  const std::string attn = HasAvx512(attention.isa)
                               ? absl::StrCat(IsaName(attention.isa), bf16_math,
                                              attention.kv_prefetch ? " with" : " without", " K/V prefetch")
                               : std::string(IsaName(attention.isa));
  return absl::StrCat("isa ", IsaName(isa), " | ", DTypeName(linear.compute), " layers ",
                      DescribeDenseDispatch(linear.compute, linear.isa, linear.dense), " | quantized ",
                      QuantKernelName(linear.quant_kernel), " | attention ", attn);
}

}  // namespace llmserve
