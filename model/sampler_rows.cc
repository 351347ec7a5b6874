// Row kernels of RequestSampler, cloned for AVX-512 / AVX2 / baseline on x86-64. FMA
// contraction is off in them, so each clone performs the same IEEE operations per
// element and gives bit-identical results (GCC contracts across statements by default
// in C++; clang within expressions on FMA targets). Sums use explicit lanes, so their
// order does not depend on the vector width either.
#include "model/sampler_rows.h"

#include <algorithm>

#include "model/fp_contract.h"

#if defined(__clang__)
#pragma clang fp contract(off)  // see model/fp_contract.h
#endif
#define LLMSERVE_SAMPLER_EXACT LLMSERVE_FP_CONTRACT_OFF
// target_clones makes ifunc resolvers that run before ThreadSanitizer's runtime is up.
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define LLMSERVE_SAMPLER_CLONES \
  __attribute__((target_clones("avx512f", "avx2", "default"))) LLMSERVE_SAMPLER_EXACT
#else
#define LLMSERVE_SAMPLER_CLONES LLMSERVE_SAMPLER_EXACT
#endif

namespace llmserve::sampler_rows {
namespace {

// Integer key ordering like the float it encodes (an involution; -0 sorts below +0).
inline int32_t OrderKey(uint32_t bits) {
  return static_cast<int32_t>(bits ^ (static_cast<uint32_t>(static_cast<int32_t>(bits) >> 31) >> 1));
}

// SumDouble, inlinable into the clones.
inline double SumLanes(const float* x, size_t n) {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) lane[j] += x[i + j];
  }
  double s = 0.0;
  for (; i < n; ++i) s += x[i];
  for (double l : lane) s += l;
  return s;
}

}  // namespace

LLMSERVE_SAMPLER_CLONES void ExpRow(const float* in, float m, float t, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = FastExp((in[i] - m) / t);
}

// Compares integer keys, which vectorize (float selects do not under -ftrapping-math).
LLMSERVE_SAMPLER_CLONES float MaxIgnoringNan(std::span<const float> x) {
  constexpr int32_t kNone = std::numeric_limits<int32_t>::min();
  int32_t m = kNone;
  for (const float v : x) {
    const uint32_t b = std::bit_cast<uint32_t>(v);
    const uint32_t nan = 0u - static_cast<uint32_t>((b & 0x7FFFFFFFu) > 0x7F800000u);
    const int32_t key = static_cast<int32_t>((static_cast<uint32_t>(OrderKey(b)) & ~nan) |
                                             (static_cast<uint32_t>(kNone) & nan));
    m = std::max(m, key);  // an integer reduction: vectorizes
  }
  if (m == kNone) return kNegInf;
  return std::bit_cast<float>(static_cast<uint32_t>(OrderKey(static_cast<uint32_t>(m))));
}

LLMSERVE_SAMPLER_CLONES double SumDouble(const float* x, size_t n) { return SumLanes(x, n); }

LLMSERVE_SAMPLER_CLONES void TruncateRow(float* p, size_t n, int32_t cut_bits, int32_t cut_id,
                                         int32_t min_bits, double* block_sums) {
  for (size_t begin = 0, blk = 0; begin < n; begin += kBlock, ++blk) {
    const size_t len = std::min(kBlock, n - begin);
    float* q = p + begin;
    for (size_t i = 0; i < len; ++i) {  // bitwise & and | keep the loop branch-free
      const int32_t b = Bits(q[i]);
      const int32_t id = static_cast<int32_t>(begin + i);
      const bool keep = ((b > cut_bits) | ((b == cut_bits) & (id <= cut_id))) & (b >= min_bits);
      q[i] = KeepOrZero(q[i], keep);
    }
    block_sums[blk] = SumLanes(q, len);
  }
}

LLMSERVE_SAMPLER_EXACT void ApplyPenalties(float* logits, std::span<const int32_t> ids,
                                            const int32_t* counts, float rep, float freq,
                                            float pres) {
  for (const int32_t id : ids) {
    float l = logits[id];
    if (rep != 1.0f) l = l > 0.0f ? l / rep : l * rep;
    const int32_t c = counts[id];
    if (c > 0) {
      l -= freq * static_cast<float>(c);
      l -= pres;
    }
    logits[id] = l;
  }
}

}  // namespace llmserve::sampler_rows
