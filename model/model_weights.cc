#include "model/model_weights.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/checked_math.h"

namespace llmserve {

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorView::TypeName() const {
  return quantized() ? std::string(QuantTypeName(quant)) : std::string(DTypeName(dtype));
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::StatusOr<std::vector<TensorView>> SplitRows(const TensorView& t, const std::vector<std::string>& names,
                                                  const std::vector<int64_t>& rows) {
  int64_t total = 0;
  for (int64_t r : rows) {
    if (r <= 0) return absl::InvalidArgumentError(absl::StrCat("tensor ", t.name, ": a part of ", r, " rows"));
    total += r;
  }
  if (t.shape.empty() || names.size() != rows.size() || total != t.shape[0] || t.nbytes % t.shape[0] != 0) {
    return absl::InvalidArgumentError(absl::StrCat("tensor ", t.name, " of shape ", ShapeString(t.shape),
                                                   " cannot be split into ", absl::StrJoin(rows, " + "), " rows"));
  }
  const size_t row_bytes = t.nbytes / static_cast<size_t>(t.shape[0]);
  std::vector<TensorView> out;
  int64_t first = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    TensorView v = t;
    v.name = names[i];
    v.shape[0] = rows[i];
    v.data = t.data + static_cast<size_t>(first) * row_bytes;
    v.nbytes = static_cast<size_t>(rows[i]) * row_bytes;
    out.push_back(std::move(v));
    first += rows[i];
  }
  return out;
}

std::vector<ExpectedTensor> ExpectedTensors(const ModelConfig& c) {
  const int64_t d = c.hidden_size;
  const int64_t q = c.num_heads * c.head_dim;
  const int64_t kv = c.num_kv_heads * c.head_dim;
  const bool layer_norm = c.norm == NormKind::kLayerNorm;
  std::vector<ExpectedTensor> out;
  auto add = [&](std::string name, std::vector<int64_t> shape) { out.push_back({std::move(name), std::move(shape)}); };
  add("token_embd.weight", {c.vocab_size, d});
  if (c.position == PositionKind::kLearned) add("position_embd.weight", {c.context_length, d});
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = absl::StrCat("blk.", i, ".");
    add(p + "attn_norm.weight", {d});
    if (layer_norm && c.norm_bias) add(p + "attn_norm.bias", {d});
    if (c.arch == Architecture::kGpt2) {
      add(p + "attn_qkv.weight", {q + 2 * kv, d});
      if (c.qkv_bias) add(p + "attn_qkv.bias", {q + 2 * kv});
    } else {
      add(p + "attn_q.weight", {q, d});
      add(p + "attn_k.weight", {kv, d});
      add(p + "attn_v.weight", {kv, d});
      if (c.qkv_bias) {
        add(p + "attn_q.bias", {q});
        add(p + "attn_k.bias", {kv});
        add(p + "attn_v.bias", {kv});
      }
    }
    if (c.qk_norm) {
      add(p + "attn_q_norm.weight", {c.head_dim});
      add(p + "attn_k_norm.weight", {c.head_dim});
    }
    add(p + "attn_output.weight", {d, q});
    if (c.out_bias) add(p + "attn_output.bias", {d});
    add(p + "ffn_norm.weight", {d});
    if (layer_norm && c.norm_bias) add(p + "ffn_norm.bias", {d});
    if (c.activation == Activation::kSilu) add(p + "ffn_gate.weight", {c.ffn_dim, d});
    add(p + "ffn_up.weight", {c.ffn_dim, d});
    add(p + "ffn_down.weight", {d, c.ffn_dim});
    if (c.mlp_bias) {
      add(p + "ffn_up.bias", {c.ffn_dim});
      add(p + "ffn_down.bias", {d});
    }
  }
  add("output_norm.weight", {d});
  if (layer_norm && c.norm_bias) add("output_norm.bias", {d});
  if (!c.tied_embeddings) add("output.weight", {c.vocab_size, d});
  return out;
}

absl::Status ModelWeights::Add(TensorView t) {
  auto numel = CheckedNumel(t.shape);
  if (!numel) return absl::InvalidArgumentError(absl::StrCat("tensor ", t.name, ": invalid shape ", ShapeString(t.shape)));
  std::optional<uint64_t> bytes;
  if (t.quantized()) {
    auto row = QuantRowBytes(t.quant, t.shape.empty() ? 0 : t.shape.back());
    if (!row.ok()) return absl::InvalidArgumentError(absl::StrCat("tensor ", t.name, ": ", row.status().message()));
    bytes = CheckedMul(*numel / static_cast<uint64_t>(t.shape.back()), static_cast<uint64_t>(*row));
  } else {
    bytes = CheckedMul(*numel, DTypeSize(t.dtype));
  }
  if (!bytes || *bytes != t.nbytes) {
    return absl::InvalidArgumentError(absl::StrCat("tensor ", t.name, ": ", t.nbytes, " bytes do not match shape ",
                                                   ShapeString(t.shape), " of ", t.TypeName()));
  }
  std::string name = t.name;
  if (!tensors_.emplace(name, std::move(t)).second) {
    return absl::InvalidArgumentError(absl::StrCat("duplicate tensor ", name));
  }
  return absl::OkStatus();
}

const TensorView* ModelWeights::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

absl::StatusOr<const TensorView*> ModelWeights::Get(const std::string& name) const {
  if (const TensorView* t = Find(name)) return t;
  return absl::NotFoundError(absl::StrCat("tensor ", name, " not found"));
}

void ModelWeights::ReleasePages(const TensorView& t) const {
  for (const std::shared_ptr<MappedFile>& f : files_) {
    if (t.data >= f->data() && t.data + t.nbytes <= f->data() + f->size()) f->ReleasePages(t.data, t.nbytes);
  }
}

const uint8_t* ModelWeights::Own(std::vector<uint8_t> buffer) {
  buffers_.push_back(std::make_unique<std::vector<uint8_t>>(std::move(buffer)));
  return buffers_.back()->data();
}

absl::Status ModelWeights::CheckComplete(const std::string& source) const {
  for (const ExpectedTensor& e : ExpectedTensors(config)) {
    const TensorView* t = Find(e.name);
    if (t == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": missing tensor ", e.name, " (expected shape ",
                                                     ShapeString(e.shape), ")"));
    }
    if (t->shape != e.shape) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": tensor ", e.name, " has shape ", ShapeString(t->shape),
                                                     ", expected ", ShapeString(e.shape), " from the config"));
    }
  }
  return absl::OkStatus();
}

}  // namespace llmserve
