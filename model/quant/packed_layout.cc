#include "model/quant/packed_layout.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/dtype.h"
#include "model/quant/ggml_blocks.h"

namespace llmserve {
namespace {

int SubBlocks(const UnitLayout& l) { return l.elems / 32; }

// Writes one unit of 16 rows; rows[r] == nullptr is padding (all zero).
void PackUnit(QuantType t, const UnitLayout& l, const DecodedBlock* const* rows, uint8_t* dst) {
  std::memset(dst, 0, static_cast<size_t>(l.bytes));
  const bool eight_bit = t == QuantType::kQ8_0;
  for (int r = 0; r < kQuantGroupRows; ++r) {
    const DecodedBlock* b = rows[r];
    if (b == nullptr) continue;
    for (int s = 0; s < SubBlocks(l); ++s) {
      const uint8_t* q = b->q + 32 * s;
      for (int j = 0; j < 4; ++j) {
        if (eight_bit) {
          for (int i = 0; i < 8; ++i) dst[512 * s + 64 * i + 4 * r + j] = q[4 * i + j];
          continue;
        }
        for (int v = 0; v < 4; ++v) {
          const uint8_t lo = q[8 * v + j] & 0x0F, hi = q[8 * v + 4 + j] & 0x0F;
          dst[256 * s + 64 * v + 4 * r + j] = static_cast<uint8_t>(lo | (hi << 4));
        }
        if (t == QuantType::kQ6_K) {
          for (int h = 0; h < 2; ++h) {
            uint8_t bits = 0;
            for (int i = 0; i < 4; ++i) bits |= static_cast<uint8_t>(((q[4 * (4 * h + i) + j] >> 4) & 3u) << (2 * i));
            dst[l.high + 128 * s + 64 * h + 4 * r + j] = bits;
          }
        } else if (l.high >= 0) {
          uint8_t bits = 0;
          for (int i = 0; i < 8; ++i) bits |= static_cast<uint8_t>(((q[4 * i + j] >> 4) & 1u) << i);
          dst[l.high + 64 * s + 4 * r + j] = bits;
        }
      }
    }
    std::memcpy(dst + l.d + 2 * r, &b->d, 2);
    if (l.m >= 0) std::memcpy(dst + l.m + 2 * r, &b->m, 2);
    if (l.scales >= 0) {
      const int n = t == QuantType::kQ6_K ? 16 : 8;
      for (int s = 0; s < n; ++s) dst[l.scales + 16 * s + r] = b->sc[s];
    }
    if (l.mins >= 0) {
      for (int s = 0; s < 8; ++s) dst[l.mins + 16 * s + r] = b->mn[s];
    }
  }
}

// Q8_0 of 32 floats (ggml's quantize_row_q8_0_ref).
void QuantizeQ8Block(const float* x, DecodedBlock* b) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  b->d = F32ToF16(d);
  for (int j = 0; j < 32; ++j) {
    const int q = static_cast<int>(std::round(x[j] * id));
    b->q[j] = static_cast<uint8_t>(static_cast<int8_t>(q) ^ 0x80);
  }
}

template <typename DecodeRowUnit>
void PackGroups(QuantType t, int64_t rows, int64_t cols, uint8_t* dst, DecodeRowUnit decode) {
  const UnitLayout l = UnitLayoutOf(t);
  const PackedQuantMatrix m = MakePackedQuantMatrix(t, rows, cols, dst);
#pragma omp parallel for schedule(static) if (m.groups > 4)
  for (int64_t g = 0; g < m.groups; ++g) {
    DecodedBlock blocks[kQuantGroupRows];
    const DecodedBlock* ptrs[kQuantGroupRows];
    for (int64_t u = 0; u < m.units; ++u) {
      for (int r = 0; r < kQuantGroupRows; ++r) {
        const int64_t row = g * kQuantGroupRows + r;
        ptrs[r] = nullptr;
        if (row >= rows) continue;
        decode(row, u, &blocks[r]);
        ptrs[r] = &blocks[r];
      }
      PackUnit(t, l, ptrs, const_cast<uint8_t*>(m.unit(g, u)));
    }
  }
}

}  // namespace

size_t PackedQuantBytes(QuantType t, int64_t rows, int64_t cols) {
  const PackedQuantMatrix m = MakePackedQuantMatrix(t, rows, cols, nullptr);
  return static_cast<size_t>(m.groups) * static_cast<size_t>(m.group_bytes);
}

PackedQuantMatrix MakePackedQuantMatrix(QuantType t, int64_t rows, int64_t cols, const uint8_t* data) {
  const UnitLayout l = UnitLayoutOf(t);
  PackedQuantMatrix m;
  m.type = t;
  m.rows = rows;
  m.cols = cols;
  m.groups = (rows + kQuantGroupRows - 1) / kQuantGroupRows;
  m.units = l.elems > 0 ? cols / l.elems : 0;
  m.unit_bytes = l.bytes;
  m.group_bytes = m.units * l.bytes;
  m.data = data;
  return m;
}

void PackGgmlRows(QuantType t, const uint8_t* src, int64_t rows, int64_t cols, uint8_t* dst) {
  const int64_t row_bytes = cols / QuantBlockElems(t) * QuantBlockBytes(t);
  const int64_t unit_bytes = QuantBlockBytes(t);  // a unit is one source block
  PackGroups(t, rows, cols, dst, [&](int64_t row, int64_t u, DecodedBlock* b) {
    DecodeBlock(t, src + row * row_bytes + u * unit_bytes, b);
  });
}

int64_t PaddedInt8Cols(int64_t cols) { return (cols + 31) / 32 * 32; }

void PackInt8Rows(const float* src, int64_t rows, int64_t cols, uint8_t* dst) {
  const int64_t padded = PaddedInt8Cols(cols);
  PackGroups(QuantType::kQ8_0, rows, padded, dst, [&](int64_t row, int64_t u, DecodedBlock* b) {
    float x[32] = {};
    const int64_t k0 = 32 * u, n = std::min<int64_t>(32, cols - k0);
    std::memcpy(x, src + row * cols + k0, static_cast<size_t>(n) * sizeof(float));
    QuantizeQ8Block(x, b);
  });
}

uint8_t PackedQuantValue(QuantType t, const UnitLayout& l, const uint8_t* unit, int r, int e) {
  const int s = e / 32, i = (e % 32) / 4, j = e % 4;  // sub-block, k-quad, byte
  if (t == QuantType::kQ8_0) return unit[512 * s + 64 * i + 4 * r + j];
  const uint8_t nib = unit[256 * s + 64 * (i / 2) + 4 * r + j];
  uint8_t q = (i % 2 == 0) ? (nib & 0x0F) : (nib >> 4);
  if (t == QuantType::kQ6_K) {
    const uint8_t bits = unit[l.high + 128 * s + 64 * (i / 4) + 4 * r + j];
    q |= static_cast<uint8_t>(((bits >> (2 * (i % 4))) & 3u) << 4);
  } else if (l.high >= 0) {
    q |= static_cast<uint8_t>(((unit[l.high + 64 * s + 4 * r + j] >> i) & 1u) << 4);
  }
  return q;
}

}  // namespace llmserve
