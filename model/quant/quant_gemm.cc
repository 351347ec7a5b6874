#include "model/quant/quant_gemm.h"

#include "model/runtime_config.h"

namespace llmserve {
namespace {

size_t Align64(size_t n) { return (n + 63) / 64 * 64; }

}  // namespace

const char* QuantKernelName(QuantKernel k) { return k == QuantKernel::kAvx512Vnni ? "avx512-vnni" : "scalar"; }

bool QuantKernelSupported(QuantKernel k) {
  if (k == QuantKernel::kScalar) return true;
  __builtin_cpu_init();
  return CpuHasAvx512() && __builtin_cpu_supports("avx512vnni");
}

QuantKernel BestQuantKernel() {
  return QuantKernelSupported(QuantKernel::kAvx512Vnni) ? QuantKernel::kAvx512Vnni : QuantKernel::kScalar;
}

size_t QuantizedActsBytes(int64_t m, int64_t cols) {
  const size_t rows = static_cast<size_t>(m), blocks = static_cast<size_t>(cols / 32);
  return Align64(rows * static_cast<size_t>(cols)) + 3 * Align64(rows * blocks * 4) + Align64(rows * blocks * 8);
}

QuantizedActs MapQuantizedActs(void* buffer, int64_t m, int64_t cols) {
  QuantizedActs a;
  a.m = m;
  a.cols = cols;
  a.blocks = cols / 32;
  const size_t rows = static_cast<size_t>(m), blocks = static_cast<size_t>(a.blocks);
  auto* p = static_cast<uint8_t*>(buffer);
  a.q = reinterpret_cast<int8_t*>(p);
  p += Align64(rows * static_cast<size_t>(cols));
  a.d = reinterpret_cast<float*>(p);
  p += Align64(rows * blocks * 4);
  a.dsum = reinterpret_cast<float*>(p);
  p += Align64(rows * blocks * 4);
  a.nsum32 = reinterpret_cast<int32_t*>(p);
  p += Align64(rows * blocks * 4);
  a.nsum16 = reinterpret_cast<int32_t*>(p);
  return a;
}

void QuantizeActs(QuantKernel kernel, const float* x, int64_t in, int64_t r0, int64_t r1, const QuantizedActs& a) {
  if (kernel == QuantKernel::kAvx512Vnni) {
    quant_internal::QuantizeActsAvx512(x, in, r0, r1, a);
  } else {
    quant_internal::QuantizeActsScalar(x, in, r0, r1, a);
  }
}

void QuantGemm(QuantKernel kernel, const PackedQuantMatrix& w, int64_t g0, int64_t g1, const QuantizedActs& a,
               const float* bias, float* y, int64_t ldy) {
  if (kernel == QuantKernel::kAvx512Vnni) {
    quant_internal::QuantGemmAvx512(w, g0, g1, a, bias, y, ldy);
  } else {
    quant_internal::QuantGemmScalar(w, g0, g1, a, bias, y, ldy);
  }
}

}  // namespace llmserve
