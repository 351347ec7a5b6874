// Linear: y = x · Wᵀ (+ b) over all M rows of a step. One interface, one implementation
// per weight format, chosen when the layer is created:
//   f32 / bf16   one oneDNN matmul, or for the M its DenseDispatch names, the GEMV of
//                model/ops/gemv.h or the small-batch kernel of model/ops/small_gemm.h
//                over the same packed weight                            (linear.cc)
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
#include "model/ops/isa.h"
#include "model/ops/small_gemm.h"
#include "model/quant/quant_gemm.h"
#include "model/runtime_config.h"

namespace llmserve {

class DnnContext;  // model/ops/dnn_context.h: the oneDNN engine + stream

// Which kernel a dense (f32/bf16) layer runs for a call of M rows. The GEMV and the
// small-batch kernel read oneDNN's packed copy in place, so they run only when oneDNN
// packed it in their panel layout (it does on AVX-512) and `isa` can run them for the
// layer's dtype; otherwise every M runs oneDNN's matmul. In that order:
//   small_gemm_min_rows <= M <= small_gemm_max_rows   the small-batch kernel
//   M <= kGemvMaxRows and gemv                         the GEMV
//   any other M                                        oneDNN's matmul
struct DenseDispatch {
  bool gemv = false;
  int64_t small_gemm_min_rows = kSmallGemmMinRows;
  int64_t small_gemm_max_rows = 0;  // 0: never the small-batch kernel
  SmallGemmOptions small_gemm;      // how it runs (bf16 tile, k block)
};

// The default dispatch for `compute` weights on a CPU whose bf16 kernel is `bf16_kernel`
// (Bf16KernelFor): the GEMV for 1..4 rows and the small-batch kernel for 5..32, where
// they beat oneDNN's matmul (bench/linear_bench AB/*; up to 32 rows the kernel reads each
// weight panel once for all rows, and a row's result then does not depend on the batch
// size: bit-identical to the GEMV). For bf16 with the FMA kernel, every M goes to the
// small-batch kernel: on such a CPU (vdpbf16ps at half the FMA rate, as oneDNN's bf16
// matmul then runs too) it beats oneDNN at prefill, and its prefetch of the next block
// into L2 streams 1..4-row products faster than the GEMV's fixed-distance prefetch.
DenseDispatch DenseDispatchFor(DType compute, Bf16Kernel bf16_kernel);

// Each kernel and the M it runs for `compute` weights in the panel layout, for the log:
// "gemv 1-4, small-batch/dot 5-32, onednn 33+" (the last range runs every larger M too;
// a kernel alone runs every M: "small-batch/fma").
std::string DescribeDenseDispatch(DType compute, Isa isa, const DenseDispatch& dispatch);

// How a layer stores and multiplies its weight.
struct LinearOptions {
  DType compute = DType::kF32;                  // unquantized weights: kF32 or kBF16
  WeightQuant quant = WeightQuant::kAuto;       // see runtime_config.h
  QuantKernel quant_kernel = QuantKernel::kScalar;  // for quantized weights
  Isa isa = Isa::kScalar;                       // what the dense layers' own kernels may use
  DenseDispatch dense;                          // which kernel runs which M (dense layers)
};

// This CPU's default options for `compute` (what a Transformer built with a default
// RuntimeConfig of that weight dtype uses: model/kernel_plan.h). For tests and benches.
LinearOptions DefaultLinearOptions(DType compute);

// A packed weight matrix [out, in] with optional bias [out]. The weight is converted
// once at creation to `compute` dtype (f32 or bf16) and reordered into oneDNN's
// preferred blocked layout; matmul primitives are cached per M. Small M (decode) runs the
// GEMV or the small-batch kernel directly over that packed copy, as the options'
// DenseDispatch says, when it is in the GEMV's panel layout.
// Not thread-safe (Engine thread only); Forward itself uses all configured threads.
class Linear {
 public:
  virtual ~Linear() = default;

  // Builds from a canonical [out, in] weight (f32/f16/bf16) and optional bias [out],
  // dense in options.compute.
  static absl::StatusOr<std::unique_ptr<Linear>> Create(DnnContext& ctx, const TensorView& weight,
                                                        const TensorView* bias, const LinearOptions& options);
  // The same with this CPU's default options for `compute` (DefaultLinearOptions).
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
  // The kernels and which M each runs, for the start-up log: "onednn" (weights not in
  // the panel layout), DescribeDenseDispatch's "gemv 1-4, small-batch/dot 5-32, onednn
  // 33+", "avx512-vnni", ...
  virtual std::string kernel() const = 0;
  // True when M <= kGemvMaxRows runs the GEMV of model/ops/gemv.h, not oneDNN's matmul,
  // unless uses_small_gemm(M) (which comes first).
  virtual bool uses_gemv() const = 0;
  // True when M rows run the small-batch kernel of model/ops/small_gemm.h, not oneDNN.
  virtual bool uses_small_gemm(int64_t m) const = 0;
};

}  // namespace llmserve
