// ModelWeights: a loaded model's config plus its named tensors (views into mapped
// files or into buffers the loader converted).
//
// Tensor names are canonical across formats (the GGUF names), and every tensor is
// row-major in the order of `shape` (a linear layer's weight is [out, in]):
//
//   token_embd.weight           [vocab, dim]
//   position_embd.weight        [context, dim]          gpt2 only
//   output_norm.weight / .bias  [dim]                   bias: LayerNorm only
//   output.weight               [vocab, dim]            absent when tied_embeddings
//   blk.N.attn_norm.weight/.bias [dim]
//   blk.N.attn_q.weight         [heads*head_dim, dim]   llama  (+ .bias [heads*head_dim] if qkv_bias)
//   blk.N.attn_k.weight         [kv_heads*head_dim, dim] llama (+ .bias)
//   blk.N.attn_v.weight         [kv_heads*head_dim, dim] llama (+ .bias)
//   blk.N.attn_q_norm.weight    [head_dim]              qk_norm (Qwen3); also attn_k_norm
//   blk.N.attn_qkv.weight       [3*dim, dim]            gpt2   (+ .bias [3*dim])
//   blk.N.attn_output.weight    [dim, heads*head_dim]   (+ .bias [dim] if out_bias)
//   blk.N.ffn_norm.weight/.bias [dim]
//   blk.N.ffn_gate.weight       [ffn, dim]              llama
//   blk.N.ffn_up.weight         [ffn, dim]              (+ .bias [ffn] if mlp_bias)
//   blk.N.ffn_down.weight       [dim, ffn]              (+ .bias [dim] if mlp_bias)
//
// Files that fuse Q|K|V or gate|up (Phi-3) are split into these by the loaders: the parts
// are row ranges of the fused matrix, so the views point into it (SplitRows below).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/dtype.h"
#include "model/mapped_file.h"
#include "model/model_config.h"
#include "model/quant/quant_type.h"

namespace llmserve {

// A named, typed, row-major tensor. Does not own `data`.
struct TensorView {
  std::string name;
  DType dtype = DType::kF32;      // element type when not quantized
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // nbytes bytes, any alignment
  size_t nbytes = 0;
  QuantType quant = QuantType::kNone;  // quantized: ggml blocks along the last dimension

  int64_t numel() const;
  bool quantized() const { return quant != QuantType::kNone; }
  // "f32", "bf16", "Q4_K", ...
  std::string TypeName() const;
};

// The shape a canonical tensor must have for a given config.
struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
};

// Every tensor the transformer reads for `config`, in a stable order.
std::vector<ExpectedTensor> ExpectedTensors(const ModelConfig& config);

// Row ranges [0, rows[0]), [rows[0], rows[0] + rows[1]), ... of a row-major tensor as
// views named `names` (any dtype or quantization: a row is whole blocks). INVALID_ARGUMENT
// when the rows do not add up to t's first dimension.
absl::StatusOr<std::vector<TensorView>> SplitRows(const TensorView& t, const std::vector<std::string>& names,
                                                  const std::vector<int64_t>& rows);

// Formats a shape as "[a, b]".
std::string ShapeString(const std::vector<int64_t>& shape);

// Config + tensors + whatever keeps the tensor bytes alive. Immutable once loaded.
class ModelWeights {
 public:
  ModelConfig config;

  // Adds a tensor; fails on a duplicate name or if nbytes != numel * dtype size.
  absl::Status Add(TensorView t);

  // nullptr when absent.
  const TensorView* Find(const std::string& name) const;

  // The tensor, or NOT_FOUND.
  absl::StatusOr<const TensorView*> Get(const std::string& name) const;

  const std::map<std::string, TensorView>& tensors() const { return tensors_; }

  // Drops the pages of the mapped files that lie wholly inside `t`'s bytes from memory
  // (after the tensor was packed: the file stays mapped and a later read refetches them).
  void ReleasePages(const TensorView& t) const;

  // Keeps `file` mapped for as long as these weights live.
  void KeepAlive(std::shared_ptr<MappedFile> file) { files_.push_back(std::move(file)); }

  // Takes ownership of a converted buffer; returns a stable pointer to its bytes.
  const uint8_t* Own(std::vector<uint8_t> buffer);

  // Checks that exactly ExpectedTensors(config) are present (extra tensors are
  // allowed) with the expected shapes. `source` names the file in messages.
  absl::Status CheckComplete(const std::string& source) const;

 private:
  std::map<std::string, TensorView> tensors_;
  std::vector<std::shared_ptr<MappedFile>> files_;
  std::vector<std::unique_ptr<std::vector<uint8_t>>> buffers_;
};

}  // namespace llmserve
