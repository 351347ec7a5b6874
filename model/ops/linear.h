// Linear: y = x · Wᵀ (+ b) over all M rows of a step. One interface, one implementation
// per weight format, chosen when the layer is created:
//   f32 / bf16   one oneDNN matmul (or, for M <= kGemvMaxRows on AVX-512, the GEMV of
//                model/ops/gemv.h over the same packed weight; for small batches, where it
//                is faster, the kernel of model/ops/small_gemm.h)       (linear.cc)
//   quantized    the int8 kernels of model/quant/quant_gemm.h over weights repacked at
//                load, one segment per stacked part                    (quant_linear.cc)
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "model/dtype.h"
#include "model/model_weights.h"
#include "model/quant/quant_gemm.h"
#include "model/runtime_config.h"

namespace llmserve {

class DnnContext;  // model/ops/dnn_context.h: the oneDNN engine + stream

// How a layer stores and multiplies its weight.
struct LinearOptions {
  DType compute = DType::kF32;                  // unquantized weights: kF32 or kBF16
  WeightQuant quant = WeightQuant::kAuto;       // see runtime_config.h
  QuantKernel quant_kernel = QuantKernel::kScalar;  // for quantized weights
};

// A packed weight matrix [out, in] with optional bias [out]. The weight is converted
// once at creation to `compute` dtype (f32 or bf16) and reordered into oneDNN's
// preferred blocked layout; matmul primitives are cached per M. Small M (decode) runs the
// GEMV (M <= 4) or the small-batch kernel (5 <= M <= SmallGemmDispatchMaxRows) directly
// over that packed copy when it is in the GEMV's panel layout.
// Not thread-safe (Engine thread only); Forward itself uses all configured threads.
class Linear {
 public:
  virtual ~Linear() = default;

  // Builds from a canonical [out, in] weight (f32/f16/bf16) and optional bias [out].
  static absl::StatusOr<std::unique_ptr<Linear>> Create(DnnContext& ctx, const TensorView& weight,
                                                        const TensorView* bias, DType compute);

  // Builds from `parts` stacked along the outputs ([out_i, in] each, same in; any mix of
  // f32/f16/bf16 and quantized types) and an optional f32-convertible bias [Σ out_i].
  // Quantized when options.quant is kInt8, or kAuto and some part is quantized (the
  // unquantized parts of such a stack are quantized to int8); else dense in
  // options.compute (quantized parts dequantized).
  static absl::StatusOr<std::unique_ptr<Linear>> Create(DnnContext& ctx, std::span<const TensorView* const> parts,
                                                        const TensorView* bias, const LinearOptions& options);

  // y[M, out] = x[M, in] · Wᵀ + b; x and y are f32 row-major, M >= 1.
  virtual void Forward(const float* x, int64_t m, float* y) = 0;

  virtual int64_t in_features() const = 0;
  virtual int64_t out_features() const = 0;
  // Bytes of the packed weight (what a decode step reads).
  virtual size_t weight_bytes() const = 0;
  // The weight format: "f32", "bf16", "Q4_K", "Q4_K+Q6_K" (stacked parts), "Q8_0" (int8).
  virtual std::string format() const = 0;
  // The kernel family, for the start-up log: "onednn/gemv", "avx512-vnni", ...
  virtual std::string kernel() const = 0;
  // True when M <= kGemvMaxRows runs the GEMV of model/ops/gemv.h, not oneDNN's matmul,
  // unless uses_small_gemm(M) (which comes first).
  virtual bool uses_gemv() const = 0;
  // True when M rows run the small-batch kernel of model/ops/small_gemm.h, not oneDNN.
  virtual bool uses_small_gemm(int64_t m) const = 0;
};

}  // namespace llmserve
