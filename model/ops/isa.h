// The instruction sets a kernel may use, and the CPU features the kernel plan is chosen
// from (model/kernel_plan.h). Every kernel that has more than one implementation takes
// the Isa it may use as an argument: nothing is read from process-wide state.
#pragma once

#include <cstdint>

namespace llmserve {

// Instruction sets in increasing order; each includes the ones before it.
enum class Isa : uint8_t {
  kScalar,      // plain C++: the reference kernels, any CPU
  kAvx512,      // AVX-512 F/BW/VL
  kAvx512Bf16,  // AVX-512 F/BW/VL and AVX512_BF16 (vdpbf16ps, vcvtne2ps2bf16)
};
// "scalar", "avx512", "avx512-bf16".
const char* IsaName(Isa isa);
// The lower of the two.
inline Isa MinIsa(Isa a, Isa b) { return a < b ? a : b; }
// True when kernels may use AVX-512 F/BW/VL (respectively also AVX512_BF16).
inline bool HasAvx512(Isa isa) { return isa >= Isa::kAvx512; }
inline bool HasAvx512Bf16(Isa isa) { return isa >= Isa::kAvx512Bf16; }

// What the kernel choices depend on about the CPU.
struct CpuFeatures {
  bool avx512 = false;       // AVX-512 F/BW/VL, with the OS saving the zmm state
  bool avx512_bf16 = false;  // and AVX512_BF16
  bool avx512_vnni = false;  // and AVX512_VNNI (vpdpbusd)
  bool intel = false;        // an Intel CPU (GenuineIntel)

  // This CPU's features.
  static CpuFeatures Detect();
  // The best Isa they allow.
  Isa isa() const;
};

}  // namespace llmserve
