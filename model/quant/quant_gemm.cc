#include "model/quant/quant_gemm.h"

#include <limits>

#include "model/runtime_config.h"

namespace llmserve {
const char* QuantKernelName(QuantKernel k) { return k == QuantKernel::kAvx512Vnni ? "avx512-vnni" : "scalar"; }

bool QuantKernelSupported(QuantKernel k) {
  if (k == QuantKernel::kScalar) return true;
  __builtin_cpu_init();
  return CpuHasAvx512() && __builtin_cpu_supports("avx512vnni");
}

QuantKernel BestQuantKernel() {
  return QuantKernelSupported(QuantKernel::kAvx512Vnni) ? QuantKernel::kAvx512Vnni : QuantKernel::kScalar;
}

int64_t QuantPanelScratchMinRows(QuantKernel kernel, QuantType t) {
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  if (kernel != QuantKernel::kAvx512Vnni) return kNever;  // the scalar kernel has no scratch path
  switch (t) {
    case QuantType::kQ5_0:
    case QuantType::kQ5_1:
    case QuantType::kQ5_K:
    case QuantType::kQ6_K: return 64;
    case QuantType::kQ4_0:
    case QuantType::kQ4_1:
    case QuantType::kQ4_K: return 128;
    case QuantType::kQ8_0:
    case QuantType::kNone: return kNever;
  }
  return kNever;
}

size_t QuantizedActsBytes(int64_t m, int64_t cols) {
  return static_cast<size_t>(m * (cols / 32) * QuantizedActs::kRecordBytes);
}

QuantizedActs MapQuantizedActs(void* buffer, int64_t m, int64_t cols) {
  QuantizedActs a;
  a.m = m;
  a.cols = cols;
  a.blocks = cols / 32;
  a.data = static_cast<uint8_t*>(buffer);
  return a;
}

void WriteActsRecord(const int8_t* q, float d, uint8_t* record) {
  int32_t sum[2] = {0, 0};
  for (int e = 0; e < 32; ++e) sum[e / 16] += q[e];
  std::memcpy(record, q, 32);
  const float dsum = d * static_cast<float>(sum[0] + sum[1]);
  const int32_t n[3] = {-(sum[0] + sum[1]), -sum[0], -sum[1]};
  std::memcpy(record + QuantizedActs::kD, &d, 4);
  std::memcpy(record + QuantizedActs::kDsum, &dsum, 4);
  std::memcpy(record + QuantizedActs::kNsum32, n, 12);
  std::memset(record + 52, 0, QuantizedActs::kRecordBytes - 52);
}

void QuantizeActs(QuantKernel kernel, const float* x, int64_t in, int64_t r0, int64_t r1, const QuantizedActs& a) {
  if (kernel == QuantKernel::kAvx512Vnni) {
    quant_internal::QuantizeActsAvx512(x, in, r0, r1, a);
  } else {
    quant_internal::QuantizeActsScalar(x, in, r0, r1, a);
  }
}

void QuantGemm(QuantKernel kernel, const PackedQuantMatrix& w, int64_t g0, int64_t g1, const QuantizedActs& a,
               uint8_t* scratch, const float* bias, float* y, int64_t ldy) {
  if (kernel == QuantKernel::kAvx512Vnni) {
    quant_internal::QuantGemmAvx512(w, g0, g1, a, scratch, bias, y, ldy);
  } else {
    quant_internal::QuantGemmScalar(w, g0, g1, a, bias, y, ldy);
  }
}

}  // namespace llmserve
