// Transformer::Create: packs a model's tensors for the forward pass (fused QKV and
// gate|up linears, f32 norms, the embedding table kept in its file dtype).
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "model/finite_check.h"
#include "model/ops/kernels.h"
#include "model/quant/ggml_blocks.h"
#include "model/transformer_internal.h"

namespace llmserve {
namespace {

std::vector<float> ToF32(const TensorView& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  if (t.quantized()) {
    DequantizeRow(t.quant, t.data, t.numel(), out.data());
  } else {
    ConvertToF32(t.dtype, t.data, out.size(), out.data());
  }
  return out;
}

// Biases are always handed to Linear as f32.
struct OwnedTensor {
  std::vector<uint8_t> bytes;
  TensorView view;
};

OwnedTensor BiasF32(const std::vector<const TensorView*>& parts, const std::string& name) {
  OwnedTensor out;
  std::vector<float> all;
  for (const TensorView* p : parts) {
    std::vector<float> f = ToF32(*p);
    all.insert(all.end(), f.begin(), f.end());
  }
  out.bytes.resize(all.size() * sizeof(float));
  std::memcpy(out.bytes.data(), all.data(), out.bytes.size());
  out.view = TensorView{name, DType::kF32, {static_cast<int64_t>(all.size())}, out.bytes.data(),
                        out.bytes.size()};
  return out;
}

class Packer {
 public:
  Packer(const ModelWeights& w, DnnContext& dnn, const LinearOptions& options) : w_(w), dnn_(dnn), options_(options) {}

  const TensorView* Find(const std::string& name) const { return w_.Find(name); }
  // A tensor CheckComplete guaranteed to be present.
  const TensorView& Need(const std::string& name) const { return *w_.Find(name); }

  std::vector<float> F32OrEmpty(const std::string& name) const {
    const TensorView* t = w_.Find(name);
    return t != nullptr ? ToF32(*t) : std::vector<float>();
  }

  // Packs weight rows `names` (stacked) with biases `bias_names` (empty: no bias), then
  // lets the file's pages of the packed tensors go (so that the file and the packed copy
  // are never resident at once).
  absl::StatusOr<std::unique_ptr<Linear>> Pack(const std::vector<std::string>& names,
                                               const std::vector<std::string>& bias_names) {
    std::vector<const TensorView*> parts, bias_parts;
    for (const std::string& n : names) parts.push_back(&Need(n));
    for (const std::string& n : bias_names) bias_parts.push_back(&Need(n));
    OwnedTensor bias;
    if (!bias_parts.empty()) bias = BiasF32(bias_parts, bias_names.front());
    auto linear = Linear::Create(dnn_, parts, bias_parts.empty() ? nullptr : &bias.view, options_);
    if (linear.ok()) {
      for (const TensorView* p : parts) w_.ReleasePages(*p);
    }
    if (linear.ok()) {
      Summary& s = summary_[absl::StrCat((*linear)->format(), " (", (*linear)->kernel(), ")")];
      ++s.layers;
      s.bytes += (*linear)->weight_bytes();
      for (absl::string_view f : absl::StrSplit((*linear)->format(), '+')) {
        format_bytes_[std::string(f)] += (*linear)->weight_bytes();
      }
    }
    return linear;
  }

  // The formats, most bytes first, joined by '+'.
  std::string FormatString() const {
    std::vector<std::pair<size_t, std::string>> by_bytes;
    for (const auto& [f, bytes] : format_bytes_) by_bytes.emplace_back(bytes, f);
    std::sort(by_bytes.begin(), by_bytes.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<std::string> names;
    for (const auto& [bytes, f] : by_bytes) names.push_back(f);
    return absl::StrJoin(names, "+");
  }

  // "Q4_K (avx512-vnni) ×88 612.3 MiB, Q6_K ... ": what the linear layers became.
  std::string SummaryString() const {
    std::vector<std::string> items;
    for (const auto& [name, s] : summary_) {
      items.push_back(absl::StrFormat("%s x%d %.1f MiB", name, s.layers, static_cast<double>(s.bytes) / (1 << 20)));
    }
    return absl::StrJoin(items, ", ");
  }

 private:
  struct Summary {
    int layers = 0;
    size_t bytes = 0;
  };
  const ModelWeights& w_;
  DnnContext& dnn_;
  LinearOptions options_;
  std::map<std::string, Summary> summary_;
  std::map<std::string, size_t> format_bytes_;
};

absl::Status PackLayer(const ModelConfig& c, Packer& p, int64_t i, PackedLayer& layer) {
  const std::string b = absl::StrCat("blk.", i, ".");
  layer.attn_norm_w = ToF32(p.Need(b + "attn_norm.weight"));
  layer.attn_norm_b = p.F32OrEmpty(b + "attn_norm.bias");
  layer.ffn_norm_w = ToF32(p.Need(b + "ffn_norm.weight"));
  layer.ffn_norm_b = p.F32OrEmpty(b + "ffn_norm.bias");
  if (c.qk_norm) {
    layer.q_norm_w = ToF32(p.Need(b + "attn_q_norm.weight"));
    layer.k_norm_w = ToF32(p.Need(b + "attn_k_norm.weight"));
  }
  layer.window = c.LayerWindow(i);

  std::vector<std::string> qkv, qkv_bias;
  if (c.arch == Architecture::kGpt2) {
    qkv = {b + "attn_qkv.weight"};
    if (c.qkv_bias) qkv_bias = {b + "attn_qkv.bias"};
  } else {
    qkv = {b + "attn_q.weight", b + "attn_k.weight", b + "attn_v.weight"};
    if (c.qkv_bias) qkv_bias = {b + "attn_q.bias", b + "attn_k.bias", b + "attn_v.bias"};
  }
  auto assign = [](absl::StatusOr<std::unique_ptr<Linear>> r, std::unique_ptr<Linear>& out) {
    if (!r.ok()) return r.status();
    out = *std::move(r);
    return absl::OkStatus();
  };
  auto bias_if = [&](bool has, const std::string& name) {
    return has ? std::vector<std::string>{name} : std::vector<std::string>{};
  };
  if (auto s = assign(p.Pack(qkv, qkv_bias), layer.qkv); !s.ok()) return s;
  if (auto s = assign(p.Pack({b + "attn_output.weight"}, bias_if(c.out_bias, b + "attn_output.bias")), layer.out);
      !s.ok()) {
    return s;
  }
  if (c.activation == Activation::kSilu) {
    std::vector<std::string> bias;
    if (c.mlp_bias) {
      return absl::UnimplementedError(absl::StrCat(c.name, ": SwiGLU MLP with biases is not supported"));
    }
    if (auto s = assign(p.Pack({b + "ffn_gate.weight", b + "ffn_up.weight"}, bias), layer.gate_up); !s.ok()) return s;
  } else {
    if (auto s = assign(p.Pack({b + "ffn_up.weight"}, bias_if(c.mlp_bias, b + "ffn_up.bias")), layer.gate_up);
        !s.ok()) {
      return s;
    }
  }
  return assign(p.Pack({b + "ffn_down.weight"}, bias_if(c.mlp_bias, b + "ffn_down.bias")), layer.down);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Transformer>> Transformer::Create(const ModelWeights& weights,
                                                                 const RuntimeConfig& runtime) {
  // Packing runs oneDNN reorders and OpenMP loops, and libgomp keeps a thread pool for every
  // thread that ever opened a parallel region. Once it manages more threads than there are
  // CPUs, its workers stop spinning between regions and sleep (a futex wake per region:
  // decode steps ~25% slower on the engine thread, which has its own pool). So pack on a
  // scratch thread: its pool exits with it.
  auto create = [&]() -> absl::StatusOr<std::unique_ptr<Transformer>> {

    const ModelConfig& c = weights.config;
    if (absl::Status s = runtime.Validate(); !s.ok()) return s;
    if (absl::Status s = c.Validate(); !s.ok()) return s;
    if (absl::Status s = weights.CheckComplete(c.name.empty() ? "model" : c.name); !s.ok()) return s;
    ApplyThreadCount(runtime.threads);
    // No NaN or infinity in any weight; each tensor's pages go again after its scan, so
    // that the whole file is never mapped in at once (packing maps each tensor again).
    for (const auto& [name, t] : weights.tensors()) {
      if (absl::Status s = CheckFinite(t); !s.ok()) return s;
      weights.ReleasePages(t);
    }

    auto impl = std::make_unique<TransformerImpl>();
    impl->config_ = c;
    auto dnn = DnnContext::Create();
    if (!dnn.ok()) return dnn.status();
    impl->dnn_ = *std::move(dnn);
    impl->plan_ = PlanKernels(runtime, CpuFeatures::Detect());
    Packer packer(weights, *impl->dnn_, impl->plan_.linear);

    const TensorView& embd = packer.Need("token_embd.weight");
    impl->embd_dtype_ = embd.dtype;
    impl->embd_quant_ = embd.quant;
    impl->embd_row_bytes_ = embd.nbytes / static_cast<size_t>(c.vocab_size);
    impl->embd_.assign(embd.data, embd.data + embd.nbytes);
    if (c.position == PositionKind::kLearned) impl->pos_embd_ = ToF32(packer.Need("position_embd.weight"));
    if (c.position == PositionKind::kRope) impl->rope_ = RopeFrequenciesFor(c);

    impl->layers_.resize(static_cast<size_t>(c.num_layers));
    for (int64_t i = 0; i < c.num_layers; ++i) {
      if (absl::Status s = PackLayer(c, packer, i, impl->layers_[static_cast<size_t>(i)]); !s.ok()) return s;
    }
    impl->out_norm_w_ = ToF32(packer.Need("output_norm.weight"));
    impl->out_norm_b_ = packer.F32OrEmpty("output_norm.bias");
    if (c.norm == NormKind::kLayerNorm) {  // LayerNorm without a bias adds zeros
      const size_t d = static_cast<size_t>(c.hidden_size);
      for (PackedLayer& l : impl->layers_) {
        if (l.attn_norm_b.empty()) l.attn_norm_b.assign(d, 0.0f);
        if (l.ffn_norm_b.empty()) l.ffn_norm_b.assign(d, 0.0f);
      }
      if (impl->out_norm_b_.empty()) impl->out_norm_b_.assign(d, 0.0f);
    }
    auto head = packer.Pack({c.tied_embeddings ? "token_embd.weight" : "output.weight"}, {});
    if (!head.ok()) return head.status();
    impl->head_ = *std::move(head);
    weights.ReleasePages(embd);  // copied into embd_ above
    impl->weights_summary_ = packer.SummaryString();
    impl->weight_format_ = packer.FormatString();
    return std::unique_ptr<Transformer>(std::move(impl));
  };
  absl::StatusOr<std::unique_ptr<Transformer>> result = absl::InternalError("model packing did not run");
  std::thread([&] { result = create(); }).join();
  return result;
}

size_t TransformerImpl::weight_bytes() const {
  size_t total = head_->weight_bytes();
  for (const PackedLayer& l : layers_) {
    total += l.qkv->weight_bytes() + l.out->weight_bytes() + l.gate_up->weight_bytes() + l.down->weight_bytes();
  }
  total += embd_row_bytes_;  // one embedding row
  if (!pos_embd_.empty()) total += static_cast<size_t>(config_.hidden_size) * sizeof(float);
  return total;
}

}  // namespace llmserve
