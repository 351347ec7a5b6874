#include "model/ops/isa.h"

#include "model/runtime_config.h"

namespace llmserve {

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx512Bf16: return "avx512-bf16";
  }
  return "?";
}

CpuFeatures CpuFeatures::Detect() {
  __builtin_cpu_init();
  CpuFeatures f;
  f.avx512 = CpuHasAvx512();
  f.avx512_bf16 = CpuHasAvx512Bf16();
  f.avx512_vnni = f.avx512 && __builtin_cpu_supports("avx512vnni");
  f.intel = __builtin_cpu_is("intel");
  return f;
}

Isa CpuFeatures::isa() const {
  if (avx512 && avx512_bf16) return Isa::kAvx512Bf16;
  return avx512 ? Isa::kAvx512 : Isa::kScalar;
}

}  // namespace llmserve
