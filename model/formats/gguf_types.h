// GGUF metadata value types and GGML tensor element types (ids as in ggml.h / gguf.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "model/dtype.h"

namespace llmserve {

// Type tag of a GGUF metadata value (u32 in the file).
enum class GgufType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

// True for a tag in [0, 12].
bool IsValidGgufType(uint32_t t);

// "u8", "i32", "string", "array", ... ("type N" for an invalid tag).
std::string GgufTypeName(GgufType t);

// True for the eight integer tags (not bool, not floats).
bool IsGgufIntegerType(GgufType t);

// Fewest bytes one value of type `t` occupies in a file (for count sanity checks).
uint64_t GgufMinEncodedSize(GgufType t);

// Storage layout of a GGML tensor element type: `block_size` elements take `type_size` bytes.
struct GgmlTypeTraits {
  const char* name;     // "F32", "Q4_0", ...
  uint32_t block_size;  // elements per block (1 for plain types)
  uint32_t type_size;   // bytes per block
};

// Ids of the GGML types llmserve computes with.
inline constexpr uint32_t kGgmlTypeF32 = 0;
inline constexpr uint32_t kGgmlTypeF16 = 1;
inline constexpr uint32_t kGgmlTypeBF16 = 30;

// Traits of a GGML type id known to GGUF files, or nullopt (unknown / removed ids).
std::optional<GgmlTypeTraits> GgmlTypeInfo(uint32_t id);

// "Q4_K" for a known id, else "unknown".
std::string GgmlTypeName(uint32_t id);

// F32 / F16 / BF16 -> DType; nullopt for every other (quantized or integer) type.
std::optional<DType> GgmlTypeToDType(uint32_t id);

}  // namespace llmserve
