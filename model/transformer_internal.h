// Private to model/transformer*.cc: the packed weights and the scratch of the one
// Transformer implementation (Llama family and GPT-2 share one forward pass; the
// differences are which norm, where positions enter, and the MLP shape).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/ops/dnn_context.h"
#include "model/ops/kernels.h"
#include "model/ops/linear.h"
#include "model/ops/paged_attention.h"
#include "model/transformer.h"

namespace llmserve {

// One transformer block, packed.
struct PackedLayer {
  std::vector<float> attn_norm_w, attn_norm_b;  // [dim]; bias only for LayerNorm with bias
  std::vector<float> ffn_norm_w, ffn_norm_b;
  std::vector<float> q_norm_w, k_norm_w;  // [head_dim], qk_norm only (Qwen3)
  int64_t window = 0;              // sliding attention window (0: full), ModelConfig::LayerWindow
  std::unique_ptr<Linear> qkv;     // [q + 2 kv, dim]: rows q | k | v (Llama fused, GPT-2 as stored)
  std::unique_ptr<Linear> out;     // [dim, q]
  std::unique_ptr<Linear> gate_up; // [2 ffn, dim]: rows gate | up (SwiGLU); [ffn, dim] up (GPT-2)
  std::unique_ptr<Linear> down;    // [dim, ffn]
};

// Operations of the forward pass, for the profile.
enum class Op : int {
  kEmbed, kAttnNorm, kQkv, kQkNorm, kRope, kKvWrite, kAttention, kOutProj, kResidual,
  kFfnNorm, kGateUp, kActivation, kDown, kGather, kFinalNorm, kHead, kCount
};

class TransformerImpl final : public Transformer {
 public:
  absl::Status Forward(const ForwardBatch& batch, KvCache& cache, float* logits) override;
  void SetProfiling(bool on) override;
  ForwardProfile profile() const override;
  const ModelConfig& config() const override { return config_; }
  size_t weight_bytes() const override;
  std::string weights_summary() const override { return weights_summary_; }
  std::string weight_format() const override { return weight_format_; }
  const KernelPlan& kernel_plan() const override { return plan_; }

  // Filled by Create (transformer_weights.cc).
  ModelConfig config_;
  KernelPlan plan_;                      // every kernel choice, made once at Create
  std::unique_ptr<DnnContext> dnn_;
  DType embd_dtype_ = DType::kF32;
  QuantType embd_quant_ = QuantType::kNone;  // token_embd's blocks, when quantized
  size_t embd_row_bytes_ = 0;
  std::vector<uint8_t> embd_;            // token_embd [vocab, dim] in its file type
  std::vector<float> pos_embd_;          // [context, dim], learned positions only
  std::vector<PackedLayer> layers_;
  std::vector<float> out_norm_w_, out_norm_b_;
  std::unique_ptr<Linear> head_;         // [vocab, dim]
  RopeFrequencies rope_;                 // RoPE inverse frequencies (rope_dim / 2 each), scale
  std::string weights_summary_;          // what the linear layers became (for the log)
  std::string weight_format_;            // their formats, most bytes first

 private:
  // Checks the batch against the model and the cache; INVALID_ARGUMENT naming the problem.
  absl::Status Validate(const ForwardBatch& batch, const KvCache& cache) const;
  // Token (+ position) embeddings of all rows into x_.
  void Embed(const ForwardBatch& batch);
  // Normalizes `rows` rows of `in` into `out` with the model's norm.
  void Norm(const float* in, const std::vector<float>& w, const std::vector<float>& b, int64_t rows, float* out) const;
  // Norm, fused QKV, RoPE over all n rows; writes every row's K/V into the cache.
  void AttentionInput(int64_t l, const ForwardBatch& batch, KvCache& cache, int64_t n);
  // The rest of block l for m rows: attention of queries q (row stride q_stride) over
  // `seqs`, output projection, MLP, both residuals added into x [m, dim].
  void Block(int64_t l, const KvCache& cache, std::span<const AttentionSeq> seqs, const float* q, int64_t q_stride,
             float* x, int64_t m);
  // Profiling: charges the time since the previous mark to `op`.
  void Mark(Op op) {
    if (!profiling_) return;
    const auto now = std::chrono::steady_clock::now();
    op_seconds_[static_cast<size_t>(op)] += std::chrono::duration<double>(now - last_mark_).count();
    last_mark_ = now;
  }
  // Grows the scratch buffers for `n` rows and `logit_rows` output rows.
  void Reserve(int64_t n, int64_t logit_rows);

  bool profiling_ = false;
  int64_t profiled_steps_ = 0;
  std::array<double, static_cast<size_t>(Op::kCount)> op_seconds_{};
  std::chrono::steady_clock::time_point last_mark_;

  // Scratch, grown on demand (never shrunk).
  std::vector<int32_t> positions_;   // [N]
  std::vector<float> rope_table_;    // [N, 2 · rope_dim/2] cos | sin of each row's angles
  std::vector<int32_t> row_seq_;     // [N] index of the row's sequence in the batch
  std::vector<float> x_;             // [N, dim] residual stream
  std::vector<float> xn_;            // [N, dim] normed input of a sub-block
  std::vector<float> qkv_;           // [N, q + 2 kv]
  std::vector<float> attn_;          // [N, q]
  std::vector<float> proj_;          // [N, dim] sub-block output
  std::vector<float> hidden_;        // [N, 2 ffn] (gate | up) or [N, ffn]
  std::vector<float> act_;           // [N, ffn] SwiGLU activations
  std::vector<float> gathered_;      // [L, dim] rows whose logits are wanted
  std::vector<float> gathered_q_;    // [L, q] their queries in the last layer
  std::vector<AttentionSeq> att_seqs_;   // all rows
  std::vector<AttentionSeq> last_seqs_;  // one per logit row (last layer)
};

}  // namespace llmserve
