// CheckFinite: refuses a tensor holding NaN or infinity. A model file with such weights
// (a broken conversion, a corrupted download) would otherwise load and serve garbage with
// status OK, NaN logits sampling the same token forever.
//
// f32 / f16 / bf16 tensors: every element. Quantized tensors (ggml blocks): every f16
// scale and min of every block (their quant codes are integers, always finite).
#pragma once

#include "absl/status/status.h"
#include "model/model_weights.h"

namespace llmserve {

// OK, or INVALID_ARGUMENT naming the tensor and the first element (or block) that is not
// finite. Reads every byte of the tensor's elements (or of its blocks' scales) once,
// in parallel with the OpenMP threads in effect.
absl::Status CheckFinite(const TensorView& t);

}  // namespace llmserve
