// Linear: y = x · Wᵀ (+ b) over all M rows of a step, as one oneDNN matmul (or, for
// M <= kGemvMaxRows on AVX-512, the GEMV of model/ops/gemv.h over the same packed weight;
// for small batches, where it is faster, the kernel of model/ops/small_gemm.h).
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "model/dtype.h"
#include "model/model_weights.h"

namespace llmserve {

class DnnContext;  // model/ops/dnn_context.h: the oneDNN engine + stream

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

  // y[M, out] = x[M, in] · Wᵀ + b; x and y are f32 row-major, M >= 1.
  virtual void Forward(const float* x, int64_t m, float* y) = 0;

  virtual int64_t in_features() const = 0;
  virtual int64_t out_features() const = 0;
  // Bytes of the packed weight (what a decode step reads).
  virtual size_t weight_bytes() const = 0;
  // True when M <= kGemvMaxRows runs the GEMV of model/ops/gemv.h, not oneDNN's matmul,
  // unless uses_small_gemm(M) (which comes first).
  virtual bool uses_gemv() const = 0;
  // True when M rows run the small-batch kernel of model/ops/small_gemm.h, not oneDNN.
  virtual bool uses_small_gemm(int64_t m) const = 0;
};

}  // namespace llmserve
