#include "model/formats/gguf_types.h"

#include "absl/strings/str_cat.h"

namespace llmserve {

bool IsValidGgufType(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::kF64); }

std::string GgufTypeName(GgufType t) {
  switch (t) {
    case GgufType::kU8: return "u8";
    case GgufType::kI8: return "i8";
    case GgufType::kU16: return "u16";
    case GgufType::kI16: return "i16";
    case GgufType::kU32: return "u32";
    case GgufType::kI32: return "i32";
    case GgufType::kF32: return "f32";
    case GgufType::kBool: return "bool";
    case GgufType::kString: return "string";
    case GgufType::kArray: return "array";
    case GgufType::kU64: return "u64";
    case GgufType::kI64: return "i64";
    case GgufType::kF64: return "f64";
  }
  return absl::StrCat("type ", static_cast<uint32_t>(t));
}

bool IsGgufIntegerType(GgufType t) {
  switch (t) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kU16:
    case GgufType::kI16:
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kU64:
    case GgufType::kI64:
      return true;
    default:
      return false;
  }
}

uint64_t GgufMinEncodedSize(GgufType t) {
  switch (t) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kBool:
      return 1;
    case GgufType::kU16:
    case GgufType::kI16:
      return 2;
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kF32:
      return 4;
    case GgufType::kU64:
    case GgufType::kI64:
    case GgufType::kF64:
    case GgufType::kString:  // u64 length
      return 8;
    case GgufType::kArray:   // u32 element type + u64 count
      return 12;
  }
  return 1;
}

std::optional<GgmlTypeTraits> GgmlTypeInfo(uint32_t id) {
  // Block layouts from ggml-common.h (QK_K = 256). Ids 4, 5 (Q4_2, Q4_3), 31-33
  // (Q4_0_4_4 ...) and 36-38 (IQ4_NL_4_4 ...) were removed from GGUF files.
  switch (id) {
    case 0: return GgmlTypeTraits{"F32", 1, 4};
    case 1: return GgmlTypeTraits{"F16", 1, 2};
    case 2: return GgmlTypeTraits{"Q4_0", 32, 18};
    case 3: return GgmlTypeTraits{"Q4_1", 32, 20};
    case 6: return GgmlTypeTraits{"Q5_0", 32, 22};
    case 7: return GgmlTypeTraits{"Q5_1", 32, 24};
    case 8: return GgmlTypeTraits{"Q8_0", 32, 34};
    case 9: return GgmlTypeTraits{"Q8_1", 32, 36};
    case 10: return GgmlTypeTraits{"Q2_K", 256, 84};
    case 11: return GgmlTypeTraits{"Q3_K", 256, 110};
    case 12: return GgmlTypeTraits{"Q4_K", 256, 144};
    case 13: return GgmlTypeTraits{"Q5_K", 256, 176};
    case 14: return GgmlTypeTraits{"Q6_K", 256, 210};
    case 15: return GgmlTypeTraits{"Q8_K", 256, 292};
    case 16: return GgmlTypeTraits{"IQ2_XXS", 256, 66};
    case 17: return GgmlTypeTraits{"IQ2_XS", 256, 74};
    case 18: return GgmlTypeTraits{"IQ3_XXS", 256, 98};
    case 19: return GgmlTypeTraits{"IQ1_S", 256, 50};
    case 20: return GgmlTypeTraits{"IQ4_NL", 32, 18};
    case 21: return GgmlTypeTraits{"IQ3_S", 256, 110};
    case 22: return GgmlTypeTraits{"IQ2_S", 256, 82};
    case 23: return GgmlTypeTraits{"IQ4_XS", 256, 136};
    case 24: return GgmlTypeTraits{"I8", 1, 1};
    case 25: return GgmlTypeTraits{"I16", 1, 2};
    case 26: return GgmlTypeTraits{"I32", 1, 4};
    case 27: return GgmlTypeTraits{"I64", 1, 8};
    case 28: return GgmlTypeTraits{"F64", 1, 8};
    case 29: return GgmlTypeTraits{"IQ1_M", 256, 56};
    case 30: return GgmlTypeTraits{"BF16", 1, 2};
    case 34: return GgmlTypeTraits{"TQ1_0", 256, 54};
    case 35: return GgmlTypeTraits{"TQ2_0", 256, 66};
    case 39: return GgmlTypeTraits{"MXFP4", 32, 17};
    default: return std::nullopt;
  }
}

std::string GgmlTypeName(uint32_t id) {
  auto info = GgmlTypeInfo(id);
  return info ? info->name : "unknown";
}

std::optional<DType> GgmlTypeToDType(uint32_t id) {
  switch (id) {
    case kGgmlTypeF32: return DType::kF32;
    case kGgmlTypeF16: return DType::kF16;
    case kGgmlTypeBF16: return DType::kBF16;
    default: return std::nullopt;
  }
}

}  // namespace llmserve
