// Linear on oneDNN matmul. Weights are packed once into the blocked layout oneDNN prefers;
// one packed copy serves every M (all primitives are created against that memory desc).
//
//   our weight  W [out, in] row-major  ==  oneDNN weights B [K=in, N=out] with tag "ba"
//   y[M, N] = x[M, K] · B[K, N] + bias[1, N]
//
// bf16 compute: x is converted to bf16 into a scratch buffer of the DnnContext; the matmul
// reads bf16 src and weights and writes f32 dst (bias f32).
//
// Decode (M <= kGemvMaxRows): oneDNN's M=1 matmul streams weights well below the machine's
// read bandwidth, so small M runs the AVX-512 GEMV of model/ops/gemv.h instead. On AVX-512
// oneDNN packs weights exactly in the GEMV's panel layout (BA16a64b2a bf16, BA16a64b f32),
// so the GEMV reads the same packed copy; if oneDNN ever picks another layout, every M
// stays on oneDNN (no second copy is made).
//
// Small batches run the register-blocked kernel of model/ops/small_gemm.h over the same
// packed copy. Which M go where is the layer's DenseDispatch, fixed at creation
// (DenseDispatchFor has the default rule and why).
#include "model/ops/linear.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/ops/dnn_context.h"
#include "model/ops/gemv.h"
#include "model/ops/huge_page_buffer.h"
#include "model/ops/linear_convert.h"
#include "model/ops/small_gemm.h"

namespace llmserve {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// Primitives kept per Linear (LRU). An engine step's M is the number of tokens in the
// step; decode-heavy serving repeats a handful of values, prefill adds a few more.
constexpr size_t kMaxCachedPrimitives = 64;

[[noreturn]] void Fatal(const std::string& msg) {
  std::fprintf(stderr, "llmserve: fatal: %s\n", msg.c_str());
  std::abort();
}

bool IsReference(const dnnl::primitive_desc_base& pd) {
  const char* impl = pd.impl_info_str();
  return impl != nullptr && std::strncmp(impl, "ref", 3) == 0;
}

class DnnLinear final : public Linear {
 public:
  DnnLinear(DnnContext& ctx, std::string name, int64_t in, int64_t out, dt compute, bool has_bias, Isa isa,
            const DenseDispatch& dispatch)
      : ctx_(ctx),
        name_(std::move(name)),
        in_(in),
        out_(out),
        compute_(compute),
        has_bias_(has_bias),
        isa_(isa),
        dispatch_(dispatch) {
    cache_.reserve(kMaxCachedPrimitives);
  }

  // Chooses the packed layout, packs `plain` (compute dtype, [out, in] row-major) into it
  // and stores the f32 bias.
  absl::Status Pack(const void* plain, const float* bias);

  void Forward(const float* x, int64_t m, float* y) override;
  int64_t in_features() const override { return in_; }
  int64_t out_features() const override { return out_; }
  size_t weight_bytes() const override { return packed_md_.get_size(); }
  std::string format() const override { return compute_ == dt::bf16 ? "bf16" : "f32"; }
  std::string kernel() const override {
    return gemv_layout_ ? DescribeDenseDispatch(gemv_.dtype, isa_, dispatch_) : "onednn";
  }
  bool uses_gemv() const override { return gemv_layout_ && dispatch_.gemv && GemvSupported(gemv_.dtype, isa_); }
  bool uses_small_gemm(int64_t m) const override {
    return gemv_layout_ && m >= dispatch_.small_gemm_min_rows && m <= dispatch_.small_gemm_max_rows &&
           SmallGemmSupported(gemv_.dtype, isa_);
  }

 private:
  struct Entry {
    int64_t m = 0;
    uint64_t last_used = 0;
    dnnl::matmul prim;
    dnnl::memory src, dst, scratch;
    size_t scratch_bytes = 0;
  };

  dnnl::matmul::primitive_desc MakePd(int64_t m, const dnnl::memory::desc& weights_md) const;
  Entry& GetEntry(int64_t m);

  DnnContext& ctx_;
  const std::string name_;
  const int64_t in_, out_;
  const dt compute_;
  const bool has_bias_;
  const Isa isa_;                  // what the GEMV, the small-batch kernel and conversions may use
  const DenseDispatch dispatch_;   // which M run which kernel
  dnnl::memory::desc packed_md_;
  HugePageBuffer weights_storage_;  // the packed weights' bytes (huge pages: decode streams them)
  dnnl::memory weights_;            // packed, over weights_storage_
  dnnl::memory bias_;     // f32 [1, out], owned by oneDNN; empty without bias
  bool gemv_layout_ = false;  // weights_ is in the GEMV's panel layout
  GemvWeights gemv_;          // views of weights_ and bias_ for the GEMV
  std::vector<Entry> cache_;
  uint64_t tick_ = 0;
};

dnnl::matmul::primitive_desc DnnLinear::MakePd(int64_t m, const dnnl::memory::desc& weights_md) const {
  const dnnl::memory::desc src_md({m, in_}, compute_, tag::ab);
  const dnnl::memory::desc dst_md({m, out_}, dt::f32, tag::ab);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (has_bias_) {
    const dnnl::memory::desc bias_md({1, out_}, dt::f32, tag::ab);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, weights_md, bias_md, dst_md), attr,
                                        ctx_.engine());
  }
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, weights_md, dst_md), attr, ctx_.engine());
}

absl::Status DnnLinear::Pack(const void* plain, const float* bias) {
  // oneDNN's preferred layout may depend on M. Take the layouts it picks for a decode-
  // sized and a prefill-sized M and keep the first one that both sizes can run with an
  // optimized (non-reference) kernel. On AVX-512 oneDNN 2.6 picks the same blocked layout
  // for every M, so this settles on it at once.
  const dnnl::memory::desc any_md({in_, out_}, compute_, tag::any);
  const dnnl::memory::desc for_prefill = MakePd(512, any_md).weights_desc();
  const dnnl::memory::desc for_decode = MakePd(1, any_md).weights_desc();
  packed_md_ = for_prefill;
  for (const dnnl::memory::desc& cand : {for_prefill, for_decode}) {
    try {
      if (!IsReference(MakePd(1, cand)) && !IsReference(MakePd(512, cand))) {
        packed_md_ = cand;
        break;
      }
    } catch (const dnnl::error&) {
      // This candidate cannot serve both sizes; try the next.
    }
  }

  const dnnl::memory::desc plain_md({in_, out_}, compute_, tag::ba);
  dnnl::memory plain_mem(plain_md, ctx_.engine(), const_cast<void*>(plain));
  absl::StatusOr<HugePageBuffer> storage = HugePageBuffer::Allocate(packed_md_.get_size(), "packed weights");
  if (!storage.ok()) return storage.status();
  weights_storage_ = *std::move(storage);
  weights_ = dnnl::memory(packed_md_, ctx_.engine(), weights_storage_.data());
  dnnl::reorder(plain_mem, weights_).execute(ctx_.stream(), plain_mem, weights_);
  ctx_.stream().wait();

  if (has_bias_) {
    bias_ = dnnl::memory(dnnl::memory::desc({1, out_}, dt::f32, tag::ab), ctx_.engine());
    std::memcpy(bias_.get_data_handle(), bias, static_cast<size_t>(out_) * sizeof(float));
  }
  // Fail at load, not at the first step, if the chosen layout cannot be executed.
  (void)GetEntry(1);

  const dnnl::memory::desc panels({in_, out_}, compute_, compute_ == dt::bf16 ? tag::BA16a64b2a : tag::BA16a64b);
  gemv_layout_ = packed_md_ == panels;
  if (gemv_layout_) {
    gemv_.dtype = compute_ == dt::bf16 ? DType::kBF16 : DType::kF32;
    gemv_.in = in_;
    gemv_.out = out_;
    gemv_.in_padded = packed_md_.data.padded_dims[0];
    gemv_.data = weights_.get_data_handle();
    gemv_.bias = has_bias_ ? static_cast<const float*>(bias_.get_data_handle()) : nullptr;
  }
  return absl::OkStatus();
}

DnnLinear::Entry& DnnLinear::GetEntry(int64_t m) {
  ++tick_;
  for (Entry& e : cache_) {
    if (e.m == m) {
      e.last_used = tick_;
      return e;
    }
  }
  Entry fresh;
  dnnl::matmul::primitive_desc pd = MakePd(m, packed_md_);
  fresh.m = m;
  fresh.last_used = tick_;
  fresh.prim = dnnl::matmul(pd);
  fresh.src = dnnl::memory(pd.src_desc(), ctx_.engine(), DNNL_MEMORY_NONE);
  fresh.dst = dnnl::memory(pd.dst_desc(), ctx_.engine(), DNNL_MEMORY_NONE);
  fresh.scratch_bytes = pd.scratchpad_desc().get_size();
  if (fresh.scratch_bytes > 0) {
    fresh.scratch = dnnl::memory(pd.scratchpad_desc(), ctx_.engine(), DNNL_MEMORY_NONE);
    // Reserve now so that Forward never grows the buffer for a cached M.
    ctx_.ScratchBuffer(DnnContext::Scratch::kOneDnn, fresh.scratch_bytes);
  }
  if (cache_.size() < kMaxCachedPrimitives) {
    cache_.push_back(std::move(fresh));
    return cache_.back();
  }
  Entry* victim = &cache_[0];
  for (Entry& e : cache_) {
    if (e.last_used < victim->last_used) victim = &e;
  }
  *victim = std::move(fresh);
  return *victim;
}

void DnnLinear::Forward(const float* x, int64_t m, float* y) {
  if (m <= 0) return;
  if (uses_small_gemm(m)) {
    const size_t scratch_bytes = SmallGemmScratchElements(gemv_, m) * sizeof(uint16_t);
    auto* scratch = static_cast<uint16_t*>(ctx_.ScratchBuffer(DnnContext::Scratch::kBf16Src, scratch_bytes));
    SmallGemm(gemv_, x, m, y, scratch, dispatch_.small_gemm);
    return;
  }
  if (m <= kGemvMaxRows && uses_gemv()) {
    const size_t scratch_bytes = GemvScratchElements(gemv_, m) * sizeof(uint16_t);
    auto* scratch = static_cast<uint16_t*>(ctx_.ScratchBuffer(DnnContext::Scratch::kBf16Src, scratch_bytes));
    Gemv(gemv_, x, m, y, scratch);
    return;
  }
  Entry* entry = nullptr;
  try {
    entry = &GetEntry(m);
  } catch (const dnnl::error& e) {
    // The packed layout was proven executable at load; failing here is a bug.
    Fatal(DnnErrorToStatus(e, absl::StrCat("linear ", name_, ": matmul for M=", m).c_str()).ToString());
  }
  const void* src = x;
  if (compute_ == dt::bf16) {
    const size_t n = static_cast<size_t>(m) * static_cast<size_t>(in_);
    auto* buf = static_cast<uint16_t*>(ctx_.ScratchBuffer(DnnContext::Scratch::kBf16Src, n * sizeof(uint16_t)));
    ConvertF32ToBf16(isa_, x, n, buf);
    src = buf;
  }
  // The C API with a stack array: the C++ execute() builds a std::vector per call.
  dnnl_exec_arg_t args[5];
  int nargs = 0;
  entry->src.set_data_handle(const_cast<void*>(src));
  entry->dst.set_data_handle(y);
  args[nargs++] = {DNNL_ARG_SRC, entry->src.get()};
  args[nargs++] = {DNNL_ARG_WEIGHTS, weights_.get()};
  args[nargs++] = {DNNL_ARG_DST, entry->dst.get()};
  if (has_bias_) args[nargs++] = {DNNL_ARG_BIAS, bias_.get()};
  if (entry->scratch_bytes > 0) {
    entry->scratch.set_data_handle(ctx_.ScratchBuffer(DnnContext::Scratch::kOneDnn, entry->scratch_bytes));
    args[nargs++] = {DNNL_ARG_SCRATCHPAD, entry->scratch.get()};
  }
  const dnnl_status_t st = dnnl_primitive_execute(entry->prim.get(), ctx_.stream().get(), nargs, args);
  if (st != dnnl_success) Fatal(absl::StrCat("linear ", name_, ": matmul execution failed, status ", st));
}

absl::Status CheckTensor(const TensorView& t, size_t rank, const char* what) {
  if (t.shape.size() != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("linear ", t.name, ": ", what, " must have rank ", rank, ", got ", ShapeString(t.shape)));
  }
  for (int64_t d : t.shape) {
    if (d <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("linear ", t.name, ": ", what, " has an empty dimension ", ShapeString(t.shape)));
    }
  }
  const int64_t n = t.numel();
  if (n <= 0 || t.data == nullptr || t.nbytes != static_cast<size_t>(n) * DTypeSize(t.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("linear ", t.name, ": ", what, " holds ", t.nbytes,
                                                   " bytes, expected ", n, " elements of ", DTypeName(t.dtype)));
  }
  return absl::OkStatus();
}

}  // namespace

std::string DescribeDenseDispatch(DType compute, Isa isa, const DenseDispatch& d) {
  auto which = [&](int64_t m) -> std::string {
    if (m >= d.small_gemm_min_rows && m <= d.small_gemm_max_rows && SmallGemmSupported(compute, isa)) {
      return compute == DType::kBF16 ? absl::StrCat("small-batch/", Bf16KernelName(d.small_gemm.bf16_kernel))
                                     : "small-batch";
    }
    return m <= kGemvMaxRows && d.gemv && GemvSupported(compute, isa) ? "gemv" : "onednn";
  };
  // Where the kernel can change: after the GEMV's rows, and at the small-batch range's ends.
  std::vector<int64_t> starts = {1, kGemvMaxRows + 1, d.small_gemm_min_rows, d.small_gemm_max_rows + 1};
  std::erase_if(starts, [](int64_t m) { return m < 1 || m >= kSmallGemmFmaDispatchRows; });
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  std::vector<std::pair<std::string, int64_t>> runs;  // (kernel, its first M), merged
  for (int64_t m : starts) {
    std::string k = which(m);
    if (runs.empty() || runs.back().first != k) runs.emplace_back(std::move(k), m);
  }
  if (runs.size() == 1) return runs.front().first;
  std::vector<std::string> parts;
  for (size_t i = 0; i < runs.size(); ++i) {
    const int64_t lo = runs[i].second;
    if (i + 1 == runs.size()) {
      parts.push_back(absl::StrCat(runs[i].first, " ", lo, "+"));
    } else {
      const int64_t hi = runs[i + 1].second - 1;
      parts.push_back(lo == hi ? absl::StrCat(runs[i].first, " ", lo) : absl::StrCat(runs[i].first, " ", lo, "-", hi));
    }
  }
  return absl::StrJoin(parts, ", ");
}

absl::StatusOr<std::unique_ptr<Linear>> Linear::Create(DnnContext& ctx, const TensorView& weight,
                                                       const TensorView* bias, DType compute) {
  return Create(ctx, weight, bias, DefaultLinearOptions(compute));
}

absl::StatusOr<std::unique_ptr<Linear>> Linear::Create(DnnContext& ctx, const TensorView& weight,
                                                       const TensorView* bias, const LinearOptions& options) {
  const DType compute = options.compute;
  if (compute != DType::kF32 && compute != DType::kBF16) {
    return absl::InvalidArgumentError(
        absl::StrCat("linear ", weight.name, ": compute dtype must be f32 or bf16, got ", DTypeName(compute)));
  }
  if (absl::Status s = CheckTensor(weight, 2, "weight"); !s.ok()) return s;
  const int64_t out = weight.shape[0];
  const int64_t in = weight.shape[1];
  std::vector<float> bias_f32;
  if (bias != nullptr) {
    if (absl::Status s = CheckTensor(*bias, 1, "bias"); !s.ok()) return s;
    if (bias->shape[0] != out) {
      return absl::InvalidArgumentError(absl::StrCat("linear ", weight.name, ": bias ", bias->name, " has shape ",
                                                     ShapeString(bias->shape), ", expected [", out, "]"));
    }
    bias_f32.resize(static_cast<size_t>(out));
    ConvertToF32(bias->dtype, bias->data, bias_f32.size(), bias_f32.data());
  }

  // The plain weight in the compute dtype: the file's bytes when they already are (and are
  // aligned), else a converted copy (memcpy loads: file data may be unaligned).
  const size_t n = static_cast<size_t>(weight.numel());
  const size_t esize = DTypeSize(compute);
  const void* plain = weight.data;
  std::vector<uint8_t> converted;
  if (weight.dtype != compute || reinterpret_cast<uintptr_t>(weight.data) % esize != 0) {
    converted.resize(n * esize);
    ConvertWeights(options.isa, weight.dtype, weight.data, n, compute, converted.data());
    plain = converted.data();
  }

  try {
    auto linear = std::make_unique<DnnLinear>(ctx, weight.name, in, out, compute == DType::kF32 ? dt::f32 : dt::bf16,
                                              bias != nullptr, options.isa, options.dense);
    if (absl::Status s = linear->Pack(plain, bias_f32.empty() ? nullptr : bias_f32.data()); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("linear ", weight.name, ": ", s.message()));
    }
    return std::unique_ptr<Linear>(std::move(linear));
  } catch (const dnnl::error& e) {
    return DnnErrorToStatus(e, absl::StrCat("linear ", weight.name).c_str());
  }
}

}  // namespace llmserve
