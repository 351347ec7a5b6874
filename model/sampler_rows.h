// Row kernels of RequestSampler (internal to model/sampler.cc): a portable vectorizable
// exp, a NaN-ignoring max, fixed-order double sums, the dense truncation pass and the
// penalties. Results are bit-identical whatever vector width or -march builds them (see
// sampler_rows.cc); FastExp inlined elsewhere is only exact where contraction is off.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

namespace llmserve::sampler_rows {

inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();
inline constexpr size_t kBlock = 64;  // entries per block sum in the dense draw
inline constexpr int kBuckets = 64;   // top-p histogram: bucket b holds p in [2^-b, 2^-b+1)

// e^x for x <= 0 (Cephes-style: x = n ln2 + r, degree-6 polynomial for e^r), relative
// error ~2e-7; 0 below -87, for -inf and for NaN. Branch-free with integer masks (float
// selects would not if-convert under -ftrapping-math) so loops over it vectorize; the
// arithmetic on out-of-range inputs produces garbage that the mask discards.
__attribute__((always_inline)) inline float FastExp(float x) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  const float kMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float t = x * 1.44269504088896341f + kMagic;
  const float n = t - kMagic;
  const uint32_t ni = std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(kMagic);  // n mod 2^32
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  const float v = y * std::bit_cast<float>((ni + 127u) << 23);
  // |x| <= 87 as integers (NaN and inf have larger magnitudes); x > 0 is never passed.
  const int32_t magnitude = static_cast<int32_t>(std::bit_cast<uint32_t>(x) & 0x7FFFFFFFu);
  const uint32_t keep = 0u - static_cast<uint32_t>(magnitude <= 0x42AE0000);  // 87.0f
  return std::bit_cast<float>(std::bit_cast<uint32_t>(v) & keep);
}

// For probabilities (non-negative floats) the bit patterns order like the values.
inline int32_t Bits(float p) { return static_cast<int32_t>(std::bit_cast<uint32_t>(p)); }

// p if keep, else 0, without a float select.
inline float KeepOrZero(float p, bool keep) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(p) & (0u - static_cast<uint32_t>(keep)));
}

// Top-p histogram bucket of a probability in [0, 1]: its negated binary exponent, capped.
inline int Bucket(float p) {
  const int b = 127 - static_cast<int>(std::bit_cast<uint32_t>(p) >> 23);
  return b < 0 ? 0 : (b >= kBuckets ? kBuckets - 1 : b);
}

// out[i] = e^((in[i] - m) / t) for in[i] <= m; 0 for NaN and -inf.
void ExpRow(const float* in, float m, float t, float* out, size_t n);

// Largest value ignoring NaN; -inf if there is none.
float MaxIgnoringNan(std::span<const float> x);

// Sum in double of x in a fixed order (8 lanes, then the lanes in order).
double SumDouble(const float* x, size_t n);

// Keeps p[i] iff (bits > cut_bits or (bits == cut_bits and i <= cut_id)) and
// bits >= min_bits, zeroing the rest; writes the SumDouble of each kBlock-entry block.
void TruncateRow(float* p, size_t n, int32_t cut_bits, int32_t cut_id, int32_t min_bits,
                 double* block_sums);

// For each id in `ids`: repetition penalty r (l > 0 ? l / r : l * r; skipped when r is 1),
// then, when counts[id] > 0, l -= freq * counts[id] and l -= pres.
void ApplyPenalties(float* logits, std::span<const int32_t> ids, const int32_t* counts,
                    float rep, float freq, float pres);

}  // namespace llmserve::sampler_rows
