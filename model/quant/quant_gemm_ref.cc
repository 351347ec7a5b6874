// The scalar reference of quant_gemm.h: plain C++ with std::fma, reading the packed
// layout through PackedQuantValue. It defines the arithmetic the SIMD kernel reproduces.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "model/dtype.h"
#include "model/quant/quant_gemm.h"

namespace llmserve::quant_internal {
namespace {

float HalfAt(const uint8_t* p, int r) {
  uint16_t h;
  std::memcpy(&h, p + 2 * r, 2);
  return F16ToF32(h);
}

// Fixed offset of the format's codes (value = scale · (q − offset)), 0 when it has a min.
int OffsetOf(QuantType t) {
  switch (t) {
    case QuantType::kQ8_0: return 128;
    case QuantType::kQ4_0: return 8;
    case QuantType::kQ5_0: return 16;
    case QuantType::kQ6_K: return 32;
    default: return 0;
  }
}

}  // namespace

void QuantizeActsScalar(const float* x, int64_t in, int64_t r0, int64_t r1, const QuantizedActs& a) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * in;
    for (int64_t b = 0; b < a.blocks; ++b) {
      float v[32];
      for (int e = 0; e < 32; ++e) {
        const int64_t k = 32 * b + e;
        v[e] = k < in ? xr[k] : 0.0f;
      }
      float amax = 0.0f;
      for (float f : v) amax = std::fmax(amax, std::fabs(f));
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      int8_t q[32];
      for (int e = 0; e < 32; ++e) q[e] = static_cast<int8_t>(std::nearbyint(v[e] * id));
      WriteActsRecord(q, d, a.record(r, b));
    }
  }
}

void QuantGemmScalar(const PackedQuantMatrix& w, int64_t g0, int64_t g1, const QuantizedActs& a, const float* bias,
                     float* y, int64_t ldy) {
  const QuantType t = w.type;
  const UnitLayout l = UnitLayoutOf(t);
  const int offset = OffsetOf(t);
  const bool q6 = t == QuantType::kQ6_K, kquant = IsKQuant(t);
  const bool block_min = t == QuantType::kQ4_1 || t == QuantType::kQ5_1;
  const int gran = q6 ? 16 : 32;  // k per integer dot product
  std::vector<float> acc(static_cast<size_t>(a.m * kQuantGroupRows));
  uint8_t q[256];
  for (int64_t g = g0; g < g1; ++g) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t u = 0; u < w.units; ++u) {
      const uint8_t* unit = w.unit(g, u);
      for (int r = 0; r < kQuantGroupRows; ++r) {
        for (int e = 0; e < l.elems; ++e) q[e] = PackedQuantValue(t, l, unit, r, e);
        const float d = HalfAt(unit + l.d, r);
        const float m = l.m >= 0 ? HalfAt(unit + l.m, r) : 0.0f;
        for (int64_t i = 0; i < a.m; ++i) {
          float& out = acc[static_cast<size_t>(i * kQuantGroupRows + r)];
          for (int s = 0; s < l.elems / gran; ++s) {
            const int64_t k0 = u * l.elems + s * gran;  // first k of the sub-block
            const int64_t blk = k0 / 32;                // its activation block
            const int8_t* xq = a.q(i, blk) + k0 % 32;
            int32_t isum = 0;
            for (int e = 0; e < gran; ++e) isum += int32_t{q[s * gran + e]} * int32_t{xq[e]};
            if (offset != 0) {
              const int32_t nsum = q6 ? a.nsum16(i, blk, static_cast<int>(k0 / 16 % 2)) : a.nsum32(i, blk);
              isum += offset * nsum;
            }
            float scale = d;
            if (kquant) {
              const uint8_t code = unit[l.scales + 16 * s + r];
              scale = d * (q6 ? static_cast<float>(static_cast<int8_t>(code)) : static_cast<float>(code));
            }
            const float v = static_cast<float>(isum) * a.d(i, blk);
            out = std::fma(v, scale, out);
            if (block_min) {
              out = std::fma(m, a.dsum(i, blk), out);
            } else if (kquant && !q6) {
              const float mn = m * static_cast<float>(unit[l.mins + 16 * s + r]);
              out = std::fma(-mn, a.dsum(i, blk), out);
            }
          }
        }
      }
    }
    for (int r = 0; r < kQuantGroupRows; ++r) {
      const int64_t o = g * kQuantGroupRows + r;
      if (o >= w.rows) break;
      const float b = bias != nullptr ? bias[o] : 0.0f;
      for (int64_t i = 0; i < a.m; ++i) y[i * ldy + o] = acc[static_cast<size_t>(i * kQuantGroupRows + r)] + b;
    }
  }
}

}  // namespace llmserve::quant_internal
