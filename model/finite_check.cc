#include "model/finite_check.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "model/quant/quant_type.h"

namespace llmserve {
namespace {

// Elements (or blocks) per unit of parallel work.
constexpr int64_t kChunk = int64_t{1} << 16;

// Whether the value with these bits is NaN or infinite: its exponent is all ones.
bool NonFiniteF32(uint32_t b) { return (b & 0x7F800000u) == 0x7F800000u; }
bool NonFiniteF16(uint16_t b) { return (b & 0x7C00u) == 0x7C00u; }
bool NonFiniteBf16(uint16_t b) { return (b & 0x7F80u) == 0x7F80u; }

template <class Bits>
Bits Load(const uint8_t* p) {
  Bits b;
  std::memcpy(&b, p, sizeof(b));
  return b;
}

// Byte offsets of the f16 fields (scale, min) in a ggml block of `t` (quant_type.h).
struct F16Fields {
  int n = 0;
  int offset[2] = {0, 0};
};
F16Fields F16FieldsOf(QuantType t) {
  switch (t) {
    case QuantType::kQ4_0:
    case QuantType::kQ5_0:
    case QuantType::kQ8_0: return {1, {0, 0}};
    case QuantType::kQ4_1:
    case QuantType::kQ5_1:
    case QuantType::kQ4_K:
    case QuantType::kQ5_K: return {2, {0, 2}};
    case QuantType::kQ6_K: return {1, {208, 0}};
    case QuantType::kNone: break;
  }
  return {};
}

// The first index in [0, n) for which bad(i) holds, or -1; in parallel over chunks.
template <class F>
int64_t FirstBad(int64_t n, F&& bad) {
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  int64_t first = kNone;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) reduction(min : first) if (chunks > 1 && !omp_in_parallel())
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kChunk, end = std::min(n, (c + 1) * kChunk);
    // A branch-free pass over the chunk (vectorizes), then the search where it found one.
    bool any = false;
    for (int64_t i = begin; i < end; ++i) any |= bad(i);
    if (!any) continue;
    for (int64_t i = begin; i < end; ++i) {
      if (bad(i)) {
        first = std::min(first, i);
        break;
      }
    }
  }
  return first == kNone ? -1 : first;
}

}  // namespace

absl::Status CheckFinite(const TensorView& t) {
  const uint8_t* p = t.data;
  if (t.quantized()) {
    const int64_t block_bytes = QuantBlockBytes(t.quant);
    const int64_t blocks = static_cast<int64_t>(t.nbytes) / block_bytes;
    const F16Fields f = F16FieldsOf(t.quant);
    const int64_t bad = FirstBad(blocks, [&](int64_t i) {
      const uint8_t* block = p + i * block_bytes;
      for (int k = 0; k < f.n; ++k) {
        if (NonFiniteF16(Load<uint16_t>(block + f.offset[k]))) return true;
      }
      return false;
    });
    if (bad < 0) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("tensor ", t.name, " (", t.TypeName(), ") has a NaN or infinite ",
                                                   "scale in block ", bad, ": the model file is corrupt"));
  }
  const int64_t n = static_cast<int64_t>(t.nbytes / DTypeSize(t.dtype));
  int64_t bad = -1;
  switch (t.dtype) {
    case DType::kF32: bad = FirstBad(n, [&](int64_t i) { return NonFiniteF32(Load<uint32_t>(p + 4 * i)); }); break;
    case DType::kF16: bad = FirstBad(n, [&](int64_t i) { return NonFiniteF16(Load<uint16_t>(p + 2 * i)); }); break;
    case DType::kBF16: bad = FirstBad(n, [&](int64_t i) { return NonFiniteBf16(Load<uint16_t>(p + 2 * i)); }); break;
  }
  if (bad < 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("tensor ", t.name, " (", t.TypeName(), ") has a NaN or infinite ",
                                                 "value at element ", bad, ": the model file is corrupt"));
}

}  // namespace llmserve
