// The quantized implementation of Linear (model/ops/linear.h), private to model/ops.
#pragma once

#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "model/ops/linear.h"

namespace llmserve {

// A Linear over `parts` stacked along the outputs, each repacked into its own segment
// (quantized parts keep their type, or become Q8_0 under WeightQuant::kInt8; unquantized
// parts become Q8_0), multiplied by options.quant_kernel.
absl::StatusOr<std::unique_ptr<Linear>> CreateQuantLinear(DnnContext& ctx, std::span<const TensorView* const> parts,
                                                          const float* bias, const LinearOptions& options);

}  // namespace llmserve
