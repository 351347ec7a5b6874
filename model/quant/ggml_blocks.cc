#include "model/quant/ggml_blocks.h"

#include <cstring>

#include "model/dtype.h"

namespace llmserve {
namespace {

uint16_t Half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return h;
}

// Nibble layout of Q4_0/Q4_1/Q5_0/Q5_1: element e < 16 is the low nibble of qs[e], e >= 16
// the high nibble of qs[e - 16].
void Nibbles32(const uint8_t* qs, uint8_t* q) {
  for (int j = 0; j < 16; ++j) {
    q[j] = qs[j] & 0x0F;
    q[j + 16] = qs[j] >> 4;
  }
}

// Bit e of the little-endian u32 at qh is the fifth bit of element e.
void HighBits32(const uint8_t* qh, uint8_t* q) {
  uint32_t h;
  std::memcpy(&h, qh, sizeof h);
  for (int e = 0; e < 32; ++e) q[e] |= static_cast<uint8_t>(((h >> e) & 1u) << 4);
}

// ggml's get_scale_min_k4: sub-block j's 6-bit scale and min from the 12 packed bytes.
void ScaleMinK4(int j, const uint8_t* s, uint8_t* sc, uint8_t* mn) {
  if (j < 4) {
    *sc = s[j] & 63;
    *mn = s[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
    *mn = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// Q4_K / Q5_K nibbles: sub-block s (of 32) holds the low (s even) or high (s odd) nibbles
// of qs[32 (s / 2) .. + 32].
void NibblesK(const uint8_t* qs, uint8_t* q) {
  for (int s = 0; s < 8; ++s) {
    const uint8_t* p = qs + 32 * (s / 2);
    for (int l = 0; l < 32; ++l) q[32 * s + l] = (s % 2 == 0) ? (p[l] & 0x0F) : (p[l] >> 4);
  }
}

}  // namespace

void DecodeBlock(QuantType t, const uint8_t* src, DecodedBlock* out) {
  uint8_t* q = out->q;
  switch (t) {
    case QuantType::kNone:
      return;
    case QuantType::kQ4_0:
      out->d = Half(src);
      Nibbles32(src + 2, q);
      return;
    case QuantType::kQ4_1:
      out->d = Half(src);
      out->m = Half(src + 2);
      Nibbles32(src + 4, q);
      return;
    case QuantType::kQ5_0:
      out->d = Half(src);
      Nibbles32(src + 6, q);
      HighBits32(src + 2, q);
      return;
    case QuantType::kQ5_1:
      out->d = Half(src);
      out->m = Half(src + 2);
      Nibbles32(src + 8, q);
      HighBits32(src + 4, q);
      return;
    case QuantType::kQ8_0:
      out->d = Half(src);
      for (int e = 0; e < 32; ++e) q[e] = static_cast<uint8_t>(src[2 + e] ^ 0x80u);  // int8 + 128
      return;
    case QuantType::kQ4_K:
    case QuantType::kQ5_K: {
      out->d = Half(src);
      out->m = Half(src + 2);
      for (int s = 0; s < 8; ++s) ScaleMinK4(s, src + 4, &out->sc[s], &out->mn[s]);
      if (t == QuantType::kQ4_K) {
        NibblesK(src + 16, q);
        return;
      }
      const uint8_t* qh = src + 16;
      NibblesK(src + 48, q);
      for (int s = 0; s < 8; ++s) {
        for (int l = 0; l < 32; ++l) q[32 * s + l] |= static_cast<uint8_t>(((qh[l] >> s) & 1u) << 4);
      }
      return;
    }
    case QuantType::kQ6_K: {
      const uint8_t* ql = src;
      const uint8_t* qh = src + 128;
      std::memcpy(out->sc, src + 192, 16);
      out->d = Half(src + 208);
      // Each half of 128 elements: quarter k (of 32) takes the low (k < 2) or high nibbles
      // of ql[64 half + 32 (k % 2) + l] and bits 2k, 2k+1 of qh[32 half + l].
      for (int half = 0; half < 2; ++half) {
        for (int k = 0; k < 4; ++k) {
          for (int l = 0; l < 32; ++l) {
            const uint8_t lo = ql[64 * half + 32 * (k % 2) + l];
            const uint8_t nib = k < 2 ? (lo & 0x0F) : (lo >> 4);
            const uint8_t hi = (qh[32 * half + l] >> (2 * k)) & 3u;
            q[128 * half + 32 * k + l] = static_cast<uint8_t>(nib | (hi << 4));
          }
        }
      }
      return;
    }
  }
}

void DequantizeRow(QuantType t, const uint8_t* src, int64_t n, float* dst) {
  const int64_t be = QuantBlockElems(t), bb = QuantBlockBytes(t);
  DecodedBlock b;
  for (int64_t i = 0; i < n / be; ++i, src += bb, dst += be) {
    DecodeBlock(t, src, &b);
    const float d = F16ToF32(b.d), m = F16ToF32(b.m);
    switch (t) {
      case QuantType::kNone:
        return;
      case QuantType::kQ4_0:
        for (int e = 0; e < 32; ++e) dst[e] = static_cast<float>(b.q[e] - 8) * d;
        break;
      case QuantType::kQ5_0:
        for (int e = 0; e < 32; ++e) dst[e] = static_cast<float>(b.q[e] - 16) * d;
        break;
      case QuantType::kQ8_0:
        for (int e = 0; e < 32; ++e) dst[e] = static_cast<float>(b.q[e] - 128) * d;
        break;
      case QuantType::kQ4_1:
      case QuantType::kQ5_1:
        for (int e = 0; e < 32; ++e) dst[e] = static_cast<float>(b.q[e]) * d + m;
        break;
      case QuantType::kQ4_K:
      case QuantType::kQ5_K:
        for (int s = 0; s < 8; ++s) {
          const float d1 = d * b.sc[s], m1 = m * b.mn[s];
          for (int l = 0; l < 32; ++l) dst[32 * s + l] = d1 * b.q[32 * s + l] - m1;
        }
        break;
      case QuantType::kQ6_K:
        for (int e = 0; e < 256; ++e) {
          const auto sc = static_cast<int8_t>(b.sc[e / 16]);
          dst[e] = d * sc * static_cast<float>(b.q[e] - 32);
        }
        break;
    }
  }
}

}  // namespace llmserve
