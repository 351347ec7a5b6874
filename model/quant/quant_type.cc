#include "model/quant/quant_type.h"

#include "absl/strings/str_cat.h"

namespace llmserve {
namespace {

struct Traits {
  const char* name;
  uint32_t ggml_id;
  int64_t elems;
  int64_t bytes;
};

Traits TraitsOf(QuantType t) {
  switch (t) {
    case QuantType::kNone: return {"none", 0, 1, 0};
    case QuantType::kQ4_0: return {"Q4_0", 2, 32, 18};
    case QuantType::kQ4_1: return {"Q4_1", 3, 32, 20};
    case QuantType::kQ5_0: return {"Q5_0", 6, 32, 22};
    case QuantType::kQ5_1: return {"Q5_1", 7, 32, 24};
    case QuantType::kQ8_0: return {"Q8_0", 8, 32, 34};
    case QuantType::kQ4_K: return {"Q4_K", 12, 256, 144};
    case QuantType::kQ5_K: return {"Q5_K", 13, 256, 176};
    case QuantType::kQ6_K: return {"Q6_K", 14, 256, 210};
  }
  return {"none", 0, 1, 0};
}

}  // namespace

absl::string_view QuantTypeName(QuantType t) { return TraitsOf(t).name; }
int64_t QuantBlockElems(QuantType t) { return TraitsOf(t).elems; }
int64_t QuantBlockBytes(QuantType t) { return TraitsOf(t).bytes; }

std::optional<QuantType> QuantTypeFromGgml(uint32_t ggml_id) {
  for (QuantType t : kAllQuantTypes) {
    if (TraitsOf(t).ggml_id == ggml_id) return t;
  }
  return std::nullopt;
}

absl::StatusOr<int64_t> QuantRowBytes(QuantType t, int64_t cols) {
  const Traits tr = TraitsOf(t);
  if (t == QuantType::kNone || cols <= 0 || cols % tr.elems != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a row of ", cols, " elements is not a positive multiple of ", tr.name, "'s block of ", tr.elems));
  }
  return cols / tr.elems * tr.bytes;
}

}  // namespace llmserve
