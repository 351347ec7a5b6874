#include "model/runtime_config.h"

#include <omp.h>

#include "absl/strings/str_cat.h"

namespace llmserve {

namespace {

bool IsComputeDType(DType t) { return t == DType::kF32 || t == DType::kBF16; }

}  // namespace

const char* WeightQuantName(WeightQuant q) {
  switch (q) {
    case WeightQuant::kAuto: return "auto";
    case WeightQuant::kNone: return "none";
    case WeightQuant::kInt8: return "int8";
  }
  return "?";
}

absl::Status RuntimeConfig::Validate() const {
  // bf16 on a CPU without avx512_bf16 is allowed: oneDNN then emulates bf16 arithmetic
  // (slower than f32 but correct), and our own kernels convert with scalar code.
  if (!IsComputeDType(weight_dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("runtime config: weight_dtype must be f32 or bf16, got ",
                                                   DTypeName(weight_dtype)));
  }
  if (!IsComputeDType(kv_dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("runtime config: kv_dtype must be f32 or bf16, got ", DTypeName(kv_dtype)));
  }
  if (quant_kernel && !QuantKernelSupported(*quant_kernel)) {
    return absl::InvalidArgumentError(absl::StrCat("runtime config: the quantized kernel ",
                                                   QuantKernelName(*quant_kernel), " needs CPU features this CPU lacks"));
  }
  if (threads < 0 || threads > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("runtime config: threads must be in [0, 1024] (0 = all cores), got ", threads));
  }
  return kernels.Validate();
}

absl::Status KernelChoices::Validate() const {
  if (small_gemm_min_rows && *small_gemm_min_rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("runtime config: small_gemm_min_rows must be at least 1, got ", *small_gemm_min_rows));
  }
  if (small_gemm_max_rows && *small_gemm_max_rows < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("runtime config: small_gemm_max_rows must not be negative, got ", *small_gemm_max_rows));
  }
  return absl::OkStatus();
}

DType DefaultWeightDType() { return CpuHasAvx512Bf16() ? DType::kBF16 : DType::kF32; }

bool CpuHasAvx512() {
  // GCC's checks include the OS's XSAVE support for the zmm state. __builtin_cpu_init
  // makes them valid even when called from another static initializer.
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

bool CpuHasAvx512Bf16() { return CpuHasAvx512() && __builtin_cpu_supports("avx512bf16"); }

// omp_set_num_threads sets the calling thread's ICV only (libgomp gives each new thread a
// copy of the global defaults), so this must run on the thread that calls the kernels and
// oneDNN (the engine thread).
int ApplyThreadCount(int threads) {
  const int n = threads > 0 ? threads : omp_get_num_procs();
  omp_set_num_threads(n);
  return omp_get_max_threads();
}

}  // namespace llmserve
