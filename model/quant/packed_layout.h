// The layout quantized weights are repacked into at load, for the int8 dot-product
// kernels (quant_gemm.h): rows are taken 16 at a time (a group), groups 4 at a time (a
// panel of 64 rows), and a panel's blocks are stored front to back with its groups
// interleaved unit by unit, so that the kernel, which multiplies a panel's 4 groups
// together, reads one sequential stream:
//
//   panel = [unit 0 of group 0][unit 0 of g1][unit 0 of g2][unit 0 of g3][unit 1 of g0]...
//
// (the last panel may hold fewer than 4 groups, interleaved the same way).
//
// The kernels multiply with vpdpbusd, which takes in each 32-bit lane 4 unsigned weight
// bytes and 4 signed activation bytes. So within a group, for every 4 consecutive k (a
// "k-quad") the 16 rows' 4 quant values form one 64-byte vector, lane r = row r:
//
//   k-quad vector:   [ row 0: q(k..k+3) | row 1: q(k..k+3) | ... | row 15: q(k..k+3) ]
//                                 └ 4 bytes = one 32-bit lane
//
// Quant values are unsigned (Q8_0 stores int8 + 128; the offsets are corrected with the
// activations' block sums). A 32-k sub-block has 8 k-quads, stored as:
//
//   8-bit (Q8_0):  8 vectors, vector i = k-quad i                                512 B
//   4-bit (Q4_*, Q5_*, Q6_K low bits): 4 vectors; vector v holds k-quad 2v in its
//                  low nibbles and k-quad 2v+1 in its high nibbles               256 B
//   5th bit (Q5_*): 1 vector; lane r, byte j, bit i = bit 4 of q(4i + j)          64 B
//   bits 5,6 (Q6_K): 2 vectors; vector h, lane r, byte j, bits 2i,2i+1 =
//                  bits 4,5 of q(4(4h + i) + j)                                  128 B
//
// A unit is one block of the source format: 32 k (Q4_0 ... Q8_0) or a 256-k super-block
// (K-quants, 8 sub-blocks). Its bytes, in order (f16 and u8/i8 arrays are [.][16 rows]):
//
//   Q4_0  nibbles 256 | d f16 32                                         = 288
//   Q4_1  nibbles 256 | d 32 | m 32                                      = 320
//   Q5_0  nibbles 256 | 5th bits 64 | d 32                               = 352
//   Q5_1  nibbles 256 | 5th bits 64 | d 32 | m 32                        = 384
//   Q8_0  bytes 512 | d 32                                               = 544
//   Q4_K  nibbles 8×256 | scales u8 [8][16] | mins u8 [8][16] | d | dmin  = 2368
//   Q5_K  nibbles 8×256 | 5th bits 8×64 | scales | mins | d | dmin        = 2880
//   Q6_K  nibbles 8×256 | bits 5,6 8×128 | scales i8 [16][16] | d        = 3360
//
// Bytes per weight stay the source format's (Q4_K/Q5_K: +1/8 bit, their 6-bit codes
// widened to bytes). Rows past the matrix's end (the last group's padding) are zero,
// scales included, so they contribute nothing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "model/quant/quant_type.h"

namespace llmserve {

// Rows per group.
inline constexpr int64_t kQuantGroupRows = 16;
// Groups per panel.
inline constexpr int64_t kQuantPanelGroups = 4;

// Byte offsets inside one unit (-1: absent for the type).
struct UnitLayout {
  int32_t elems = 0;   // k per unit: 32 or 256
  int32_t bytes = 0;   // the unit's size
  int32_t high = -1;   // 5th-bit vectors (Q5_*) or bits-5,6 vectors (Q6_K)
  int32_t scales = -1; // K-quants: sub-block scale codes
  int32_t mins = -1;   // Q4_K/Q5_K: sub-block min codes
  int32_t d = 0;       // f16 [16]
  int32_t m = -1;      // f16 [16]: Q4_1/Q5_1 min, Q4_K/Q5_K dmin
};

// The layout of a unit of `t` (a quantized type).
constexpr UnitLayout UnitLayoutOf(QuantType t) {
  switch (t) {
    case QuantType::kNone: break;
    case QuantType::kQ4_0: return {32, 288, -1, -1, -1, 256, -1};
    case QuantType::kQ4_1: return {32, 320, -1, -1, -1, 256, 288};
    case QuantType::kQ5_0: return {32, 352, 256, -1, -1, 320, -1};
    case QuantType::kQ5_1: return {32, 384, 256, -1, -1, 320, 352};
    case QuantType::kQ8_0: return {32, 544, -1, -1, -1, 512, -1};
    case QuantType::kQ4_K: return {256, 2368, -1, 2048, 2176, 2304, 2336};
    case QuantType::kQ5_K: return {256, 2880, 2048, 2560, 2688, 2816, 2848};
    case QuantType::kQ6_K: return {256, 3360, 2048, 3072, -1, 3328, -1};
  }
  return {};
}

// A weight [rows, cols] in the packed layout (not owned).
struct PackedQuantMatrix {
  QuantType type = QuantType::kNone;
  int64_t rows = 0;         // logical rows (outputs)
  int64_t cols = 0;         // k, a multiple of the type's block size
  int64_t groups = 0;       // ceil(rows / 16)
  int64_t units = 0;        // cols / unit elems
  int64_t unit_bytes = 0;   // UnitLayoutOf(type).bytes
  int64_t group_bytes = 0;  // units · unit bytes
  const uint8_t* data = nullptr;  // groups · group_bytes

  // Groups in the panel holding group g (4, or fewer in the last panel).
  int64_t panel_groups(int64_t g) const { return std::min<int64_t>(kQuantPanelGroups, groups - g / kQuantPanelGroups * kQuantPanelGroups); }
  // Unit u of group g.
  const uint8_t* unit(int64_t g, int64_t u) const {
    const int64_t panel = g / kQuantPanelGroups;
    return data + panel * kQuantPanelGroups * group_bytes + (u * panel_groups(g) + g % kQuantPanelGroups) * unit_bytes;
  }
};

// Bytes of the packed form of a [rows, cols] weight of type `t`.
size_t PackedQuantBytes(QuantType t, int64_t rows, int64_t cols);

// Fills `m`'s geometry for a [rows, cols] weight of type `t` at `data`.
PackedQuantMatrix MakePackedQuantMatrix(QuantType t, int64_t rows, int64_t cols, const uint8_t* data);

// Repacks `rows` rows of ggml blocks (row-major, QuantRowBytes(t, cols) bytes a row) into
// `dst` (PackedQuantBytes bytes). Parallel over groups.
void PackGgmlRows(QuantType t, const uint8_t* src, int64_t rows, int64_t cols, uint8_t* dst);

// Quantizes float rows [rows, cols] (row stride `cols`) to Q8_0 (ggml's reference
// quantizer: per 32, d = max|x| / 127 stored as f16, q = round(x / d)) into the packed
// layout of [rows, PaddedInt8Cols(cols)], the padding k being zero. Parallel over groups.
void PackInt8Rows(const float* src, int64_t rows, int64_t cols, uint8_t* dst);
// `cols` rounded up to a multiple of 32.
int64_t PaddedInt8Cols(int64_t cols);

// The unsigned quant value of row r (0..15), element e of the unit at `unit` (tests and
// the scalar kernel read the packed bytes through this).
uint8_t PackedQuantValue(QuantType t, const UnitLayout& l, const uint8_t* unit, int r, int e);

}  // namespace llmserve
