// Quantized weight formats: ggml's block formats (as GGUF files store them) and the
// Q8_0-style int8 scheme llmserve applies to unquantized checkpoints (--weight-dtype int8).
//
//   type   block  bytes  per block (ggml-common.h)                      value of element e
//   Q4_0   32     18     f16 d, 16 B nibbles (e<16: low, else high)     d·(q − 8)
//   Q4_1   32     20     f16 d, f16 m, 16 B nibbles                      d·q + m
//   Q5_0   32     22     f16 d, u32 high bits, 16 B nibbles              d·(q − 16)
//   Q5_1   32     24     f16 d, f16 m, u32 high bits, 16 B nibbles       d·q + m
//   Q8_0   32     34     f16 d, 32 × i8                                  d·q
//   Q4_K   256    144    f16 d, f16 dmin, 12 B of 6-bit (scale, min)     d·sc_s·q − dmin·m_s
//                        for 8 sub-blocks of 32, 128 B nibbles
//   Q5_K   256    176    as Q4_K plus 32 B of high bits                  d·sc_s·q − dmin·m_s
//   Q6_K   256    210    128 B low nibbles, 64 B 2-bit highs,            d·sc_s·(q − 32)
//                        16 × i8 scales (sub-blocks of 16), f16 d
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace llmserve {

enum class QuantType : uint8_t { kNone, kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0, kQ4_K, kQ5_K, kQ6_K };

// Every quantized type, in enum order (for tests and tables).
inline constexpr QuantType kAllQuantTypes[] = {QuantType::kQ4_0, QuantType::kQ4_1, QuantType::kQ5_0,
                                               QuantType::kQ5_1, QuantType::kQ8_0, QuantType::kQ4_K,
                                               QuantType::kQ5_K, QuantType::kQ6_K};

// "Q4_K", ... ("none" for kNone).
absl::string_view QuantTypeName(QuantType t);

// Elements per block: 32, or 256 for the K-quants (1 for kNone).
int64_t QuantBlockElems(QuantType t);
// Bytes per block in the file (0 for kNone).
int64_t QuantBlockBytes(QuantType t);
// True for Q4_K, Q5_K, Q6_K (super-blocks of 256).
constexpr bool IsKQuant(QuantType t) {
  return t == QuantType::kQ4_K || t == QuantType::kQ5_K || t == QuantType::kQ6_K;
}

// The type of a GGML type id, or nullopt for ids llmserve does not compute with.
std::optional<QuantType> QuantTypeFromGgml(uint32_t ggml_id);

// Bytes of one row of `cols` elements; INVALID_ARGUMENT when cols is not a positive
// multiple of the block size.
absl::StatusOr<int64_t> QuantRowBytes(QuantType t, int64_t cols);

}  // namespace llmserve
