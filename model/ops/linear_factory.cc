// Linear::Create over stacked parts: picks the implementation for the weights' formats
// (linear.h) and builds the stacked weight it needs; the default dense dispatch.
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/ops/linear.h"
#include "model/ops/quant_linear.h"
#include "model/quant/ggml_blocks.h"

namespace llmserve {
namespace {

absl::Status CheckPart(const TensorView& t, int64_t in) {
  if (t.shape.size() != 2 || t.shape[0] <= 0 || t.shape[1] <= 0 || t.data == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("linear ", t.name, ": weight must be a non-empty matrix, got ", ShapeString(t.shape)));
  }
  if (t.shape[1] != in) {
    return absl::InvalidArgumentError(absl::StrCat("linear ", t.name, ": ", t.shape[1],
                                                   " columns, but the parts stacked with it have ", in));
  }
  return absl::OkStatus();
}

// The parts stacked into one plain [Σ rows, in] tensor: their common dtype when they share
// one and none is quantized, else f32 (quantized parts dequantized as ggml does).
TensorView StackDense(std::span<const TensorView* const> parts, std::vector<uint8_t>& bytes) {
  bool common = true;
  for (const TensorView* p : parts) common = common && !p->quantized() && p->dtype == parts.front()->dtype;
  const DType dtype = common ? parts.front()->dtype : DType::kF32;
  const int64_t in = parts.front()->shape[1];
  int64_t rows = 0;
  for (const TensorView* p : parts) rows += p->shape[0];
  TensorView out;
  out.name = parts.size() == 1 ? parts.front()->name : absl::StrCat(parts.front()->name, "+", parts.size() - 1, " fused");
  out.dtype = dtype;
  out.shape = {rows, in};
  out.nbytes = static_cast<size_t>(rows * in) * DTypeSize(dtype);
  bytes.resize(out.nbytes);
  uint8_t* dst = bytes.data();
  for (const TensorView* p : parts) {
    const size_t n = static_cast<size_t>(p->shape[0] * in);
    if (common) {
      std::memcpy(dst, p->data, p->nbytes);
    } else if (p->quantized()) {
      const size_t row_bytes = p->nbytes / static_cast<size_t>(p->shape[0]);
      for (int64_t r = 0; r < p->shape[0]; ++r) {
        DequantizeRow(p->quant, p->data + static_cast<size_t>(r) * row_bytes, in,
                      reinterpret_cast<float*>(dst) + r * in);
      }
    } else {
      ConvertToF32(p->dtype, p->data, n, reinterpret_cast<float*>(dst));
    }
    dst += n * DTypeSize(dtype);
  }
  out.data = bytes.data();
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Linear>> Linear::Create(DnnContext& ctx, std::span<const TensorView* const> parts,
                                                       const TensorView* bias, const LinearOptions& options) {
  if (parts.empty()) return absl::InvalidArgumentError("linear: no weight");
  const int64_t in = parts.front()->shape.size() == 2 ? parts.front()->shape[1] : 0;
  int64_t out = 0;
  bool any_quantized = false;
  for (const TensorView* p : parts) {
    if (absl::Status s = CheckPart(*p, in); !s.ok()) return s;
    out += p->shape[0];
    any_quantized = any_quantized || p->quantized();
  }
  std::vector<float> bias_f32;
  if (bias != nullptr) {
    if (bias->quantized() || bias->shape.size() != 1 || bias->shape[0] != out) {
      return absl::InvalidArgumentError(absl::StrCat("linear ", parts.front()->name, ": bias ", bias->name, " is ",
                                                     bias->TypeName(), " ", ShapeString(bias->shape),
                                                     ", expected an unquantized [", out, "]"));
    }
    bias_f32.resize(static_cast<size_t>(out));
    ConvertToF32(bias->dtype, bias->data, bias_f32.size(), bias_f32.data());
  }
  if (options.quant == WeightQuant::kInt8 || (options.quant == WeightQuant::kAuto && any_quantized)) {
    return CreateQuantLinear(ctx, parts, bias_f32.empty() ? nullptr : bias_f32.data(), options);
  }
  if (parts.size() == 1 && !any_quantized) return Create(ctx, *parts.front(), bias, options);
  std::vector<uint8_t> bytes;
  const TensorView stacked = StackDense(parts, bytes);
  return Create(ctx, stacked, bias, options);
}

DenseDispatch DenseDispatchFor(DType compute, Bf16Kernel bf16_kernel) {
  DenseDispatch d;
  d.gemv = true;
  d.small_gemm.bf16_kernel = bf16_kernel;
  if (compute == DType::kBF16 && bf16_kernel == Bf16Kernel::kFma) {
    d.small_gemm_min_rows = 1;
    d.small_gemm_max_rows = kSmallGemmFmaDispatchRows;
  } else {
    d.small_gemm_min_rows = kSmallGemmMinRows;
    d.small_gemm_max_rows = kSmallGemmMaxRows;
  }
  return d;
}

LinearOptions DefaultLinearOptions(DType compute) {
  const CpuFeatures cpu = CpuFeatures::Detect();
  LinearOptions o;
  o.compute = compute;
  o.quant_kernel = BestQuantKernel();
  o.isa = cpu.isa();
  o.dense = DenseDispatchFor(compute, Bf16KernelFor(cpu));
  return o;
}

}  // namespace llmserve
