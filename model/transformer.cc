// Transformer::Forward: one pass over a ragged batch against the paged KV cache.
//
// Per step (N rows from S sequences, L logit rows):
//   x = embed(tokens) (+ learned positions)                     [N, dim]
//   per layer:  xn = norm(x);  qkv = xn · Wqkvᵀ                 [N, q | k | v]
//               (Qwen3: RMSNorm of each q and k head)
//               rope(q, k) at each row's position; K/V -> cache
//               (a sliding-window layer's queries see only their last `window` keys)
//               attn = PagedAttention(q, cache);  x += attn · Woᵀ
//               xn = norm(x);  h = MLP(xn);  x += h
//   logits = head(norm(x[logit_rows]))                          [L, vocab]
// The last layer writes every row's K/V but runs attention, projection and MLP only
// for the L logit rows (gathered first): the other rows' outputs would be discarded.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "model/ops/kernels.h"
#include "model/quant/ggml_blocks.h"
#include "model/transformer_internal.h"

namespace llmserve {
namespace {

float* Grow(std::vector<float>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
  return v.data();
}

}  // namespace

absl::Status TransformerImpl::Validate(const ForwardBatch& batch, const KvCache& cache) const {
  const ModelConfig& c = config_;
  const KvCacheConfig& kc = cache.config();
  if (kc.num_layers != c.num_layers || kc.num_kv_heads != c.num_kv_heads || kc.head_dim != c.head_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("KV cache geometry (layers ", kc.num_layers, ", kv heads ", kc.num_kv_heads, ", head dim ",
                     kc.head_dim, ") does not match the model (", c.num_layers, ", ", c.num_kv_heads, ", ",
                     c.head_dim, ")"));
  }
  if (kc.block_size <= 0) return absl::InvalidArgumentError("KV cache block size must be positive");
  const int64_t n = static_cast<int64_t>(batch.tokens.size());
  int64_t next = 0;
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    const ForwardBatch::Seq& seq = batch.seqs[s];
    auto bad = [&](const std::string& what) {
      return absl::InvalidArgumentError(absl::StrCat("batch sequence ", s, ": ", what));
    };
    if (seq.row_start != next) {
      return bad(absl::StrCat("starts at row ", seq.row_start, ", expected ", next,
                              " (sequence ranges must tile the rows in order)"));
    }
    if (seq.rows < 1 || seq.rows > n - next) {
      return bad(absl::StrCat(seq.rows, " rows from row ", next, " do not fit in the batch's ", n, " rows"));
    }
    if (seq.cached < 0) return bad(absl::StrCat("negative cached length ", seq.cached));
    const int64_t end = int64_t{seq.cached} + seq.rows;
    if (end > c.context_length) {
      return bad(absl::StrCat("positions up to ", end - 1, " exceed the context length ", c.context_length));
    }
    const int64_t blocks = (end + kc.block_size - 1) / kc.block_size;
    if (static_cast<int64_t>(seq.block_table.size()) < blocks) {
      return bad(absl::StrCat("block table of ", seq.block_table.size(), " blocks does not cover positions up to ",
                              end - 1, " (needs ", blocks, ")"));
    }
    for (int64_t b = 0; b < blocks; ++b) {
      const int32_t id = seq.block_table[static_cast<size_t>(b)];
      if (id < 0 || id >= kc.num_blocks) {
        return bad(absl::StrCat("block id ", id, " outside the cache's ", kc.num_blocks, " blocks"));
      }
    }
    next += seq.rows;
  }
  if (next != n) {
    return absl::InvalidArgumentError(absl::StrCat("batch sequences cover ", next, " of its ", n, " rows"));
  }
  for (int64_t r = 0; r < n; ++r) {
    const int32_t t = batch.tokens[static_cast<size_t>(r)];
    if (t < 0 || t >= c.vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch row ", r, ": token id ", t, " outside the vocabulary of ", c.vocab_size));
    }
  }
  for (int32_t r : batch.logit_rows) {
    if (r < 0 || r >= n) {
      return absl::InvalidArgumentError(absl::StrCat("logit row ", r, " outside the batch's ", n, " rows"));
    }
  }
  for (const BlockCopy& bc : batch.block_copies) {
    if (bc.src < 0 || bc.src >= kc.num_blocks || bc.dst < 0 || bc.dst >= kc.num_blocks) {
      return absl::InvalidArgumentError(absl::StrCat("block copy ", bc.src, " -> ", bc.dst, " outside the cache's ",
                                                     kc.num_blocks, " blocks"));
    }
  }
  return absl::OkStatus();
}

void TransformerImpl::Reserve(int64_t n, int64_t logit_rows) {
  const ModelConfig& c = config_;
  const int64_t dim = c.hidden_size, q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
  const int64_t hidden = c.activation == Activation::kSilu ? 2 * c.ffn_dim : c.ffn_dim;
  const int64_t m = std::max(n, logit_rows);  // rows of a Block: all rows, or the logit rows
  if (positions_.size() < static_cast<size_t>(n)) {
    positions_.resize(static_cast<size_t>(n));
    row_seq_.resize(static_cast<size_t>(n));
  }
  Grow(x_, n * dim);
  Grow(rope_table_, n * 2 * static_cast<int64_t>(rope_.inv_freq.size()));
  Grow(xn_, m * dim);
  Grow(qkv_, n * (q + 2 * kv));
  Grow(attn_, m * q);
  Grow(proj_, m * dim);
  Grow(hidden_, m * hidden);
  if (c.activation == Activation::kSilu) Grow(act_, m * c.ffn_dim);
  Grow(gathered_, std::max<int64_t>(logit_rows, 1) * dim);
  Grow(gathered_q_, std::max<int64_t>(logit_rows, 1) * q);
}

void TransformerImpl::Embed(const ForwardBatch& batch) {
  const int64_t dim = config_.hidden_size;
  const int64_t n = static_cast<int64_t>(batch.tokens.size());
#pragma omp parallel for if (n > 16)
  for (int64_t r = 0; r < n; ++r) {
    float* x = x_.data() + r * dim;
    const uint8_t* row = embd_.data() + static_cast<size_t>(batch.tokens[static_cast<size_t>(r)]) * embd_row_bytes_;
    if (embd_quant_ != QuantType::kNone) {
      DequantizeRow(embd_quant_, row, dim, x);
    } else {
      ConvertToF32(embd_dtype_, row, static_cast<size_t>(dim), x);
    }
    if (!pos_embd_.empty()) {
      const float* p = pos_embd_.data() + static_cast<int64_t>(positions_[static_cast<size_t>(r)]) * dim;
      for (int64_t i = 0; i < dim; ++i) x[i] += p[i];
    }
  }
}

void TransformerImpl::Norm(const float* in, const std::vector<float>& w, const std::vector<float>& b, int64_t rows,
                           float* out) const {
  if (config_.norm == NormKind::kRmsNorm) {
    RmsNorm(plan_.isa, in, w.data(), rows, config_.hidden_size, config_.norm_eps, out);
  } else {
    LayerNorm(plan_.isa, in, w.data(), b.data(), rows, config_.hidden_size, config_.norm_eps, out);
  }
}

void TransformerImpl::AttentionInput(int64_t l, const ForwardBatch& batch, KvCache& cache, int64_t n) {
  const ModelConfig& c = config_;
  const PackedLayer& w = layers_[static_cast<size_t>(l)];
  const int64_t hd = c.head_dim;
  const int64_t q_dim = c.num_heads * hd, kv_dim = c.num_kv_heads * hd, qkv_dim = q_dim + 2 * kv_dim;
  Norm(x_.data(), w.attn_norm_w, w.attn_norm_b, n, xn_.data());
  Mark(Op::kAttnNorm);
  w.qkv->Forward(xn_.data(), n, qkv_.data());
  Mark(Op::kQkv);
  if (c.qk_norm) {  // Qwen3: each head's q and k RMS-normalized before RoPE
    RmsNormHeads(plan_.isa, qkv_.data(), n, qkv_dim, c.num_heads, hd, w.q_norm_w.data(), c.norm_eps);
    RmsNormHeads(plan_.isa, qkv_.data() + q_dim, n, qkv_dim, c.num_kv_heads, hd, w.k_norm_w.data(), c.norm_eps);
    Mark(Op::kQkNorm);
  }
  if (c.position == PositionKind::kRope) {
    // The K heads follow the Q heads in each row: one pass rotates both.
    ApplyRopeTable(plan_.isa, qkv_.data(), n, qkv_dim, c.num_heads + c.num_kv_heads, hd, c.rope_dim, rope_table_.data(),
                   static_cast<int64_t>(rope_.inv_freq.size()), c.rope_layout);
    Mark(Op::kRope);
  }
  for (const ForwardBatch::Seq& s : batch.seqs) {
    const float* k = qkv_.data() + int64_t{s.row_start} * qkv_dim + q_dim;
    cache.Write(plan_.isa, l, k, k + kv_dim, qkv_dim, s.rows, positions_.data() + s.row_start, s.block_table.data(),
                static_cast<int64_t>(s.block_table.size()));
  }
  Mark(Op::kKvWrite);
}

void TransformerImpl::Block(int64_t l, const KvCache& cache, std::span<const AttentionSeq> seqs, const float* q,
                            int64_t q_stride, float* x, int64_t m) {
  const ModelConfig& c = config_;
  const PackedLayer& w = layers_[static_cast<size_t>(l)];
  const int64_t dim = c.hidden_size, q_dim = c.num_heads * c.head_dim, ffn = c.ffn_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  PagedAttention(plan_.attention, cache, l, seqs, q, q_stride, c.num_heads, scale, attn_.data(), q_dim, w.window);
  Mark(Op::kAttention);
  w.out->Forward(attn_.data(), m, proj_.data());
  Mark(Op::kOutProj);
  AddInPlace(plan_.isa, x, proj_.data(), m * dim);
  Mark(Op::kResidual);

  Norm(x, w.ffn_norm_w, w.ffn_norm_b, m, xn_.data());
  Mark(Op::kFfnNorm);
  w.gate_up->Forward(xn_.data(), m, hidden_.data());
  Mark(Op::kGateUp);
  const float* mlp_in = hidden_.data();
  if (c.activation == Activation::kSilu) {
    const float* h = hidden_.data();
    float* a = act_.data();
#pragma omp parallel for if (m > 1)
    for (int64_t r = 0; r < m; ++r) SiluMul(plan_.isa, h + r * 2 * ffn, h + r * 2 * ffn + ffn, ffn, a + r * ffn);
    mlp_in = act_.data();
  } else {
    GeluTanh(plan_.isa, hidden_.data(), m * ffn);
  }
  Mark(Op::kActivation);
  w.down->Forward(mlp_in, m, proj_.data());
  Mark(Op::kDown);
  AddInPlace(plan_.isa, x, proj_.data(), m * dim);
  Mark(Op::kResidual);
}

absl::Status TransformerImpl::Forward(const ForwardBatch& batch, KvCache& cache, float* logits) {
  if (absl::Status s = Validate(batch, cache); !s.ok()) return s;
  const ModelConfig& c = config_;
  const int64_t n = static_cast<int64_t>(batch.tokens.size());
  const int64_t num_logits = static_cast<int64_t>(batch.logit_rows.size());
  for (const BlockCopy& bc : batch.block_copies) cache.CopyBlock(bc.src, bc.dst);
  if (n == 0) return absl::OkStatus();
  Reserve(n, num_logits);
  if (profiling_) {
    ++profiled_steps_;
    last_mark_ = std::chrono::steady_clock::now();
  }

  att_seqs_.clear();
  for (size_t i = 0; i < batch.seqs.size(); ++i) {
    const ForwardBatch::Seq& s = batch.seqs[i];
    for (int32_t r = 0; r < s.rows; ++r) {
      positions_[static_cast<size_t>(s.row_start + r)] = s.cached + r;
      row_seq_[static_cast<size_t>(s.row_start + r)] = static_cast<int32_t>(i);
    }
    att_seqs_.push_back(AttentionSeq{s.row_start, s.rows, s.cached + s.rows, s.block_table});
  }
  Embed(batch);
  if (c.position == PositionKind::kRope) RopeTable(positions_.data(), n, rope_, rope_table_.data());
  Mark(Op::kEmbed);
  const int64_t qkv_dim = (c.num_heads + 2 * c.num_kv_heads) * c.head_dim;
  const int64_t last = c.num_layers - 1;
  for (int64_t l = 0; l < last; ++l) {
    AttentionInput(l, batch, cache, n);
    Block(l, cache, att_seqs_, qkv_.data(), qkv_dim, x_.data(), n);
  }
  AttentionInput(last, batch, cache, n);  // every row's K/V goes into the cache
  if (num_logits == 0) return absl::OkStatus();

  // The rest of the last layer only for the rows whose logits are wanted: gather their
  // residual rows and queries; each attends to its own position's prefix.
  const int64_t dim = c.hidden_size, q_dim = c.num_heads * c.head_dim;
  last_seqs_.clear();
  for (int64_t i = 0; i < num_logits; ++i) {
    const int32_t r = batch.logit_rows[static_cast<size_t>(i)];
    std::memcpy(gathered_.data() + i * dim, x_.data() + int64_t{r} * dim, static_cast<size_t>(dim) * sizeof(float));
    std::memcpy(gathered_q_.data() + i * q_dim, qkv_.data() + int64_t{r} * qkv_dim,
                static_cast<size_t>(q_dim) * sizeof(float));
    const ForwardBatch::Seq& s = batch.seqs[static_cast<size_t>(row_seq_[static_cast<size_t>(r)])];
    last_seqs_.push_back(
        AttentionSeq{static_cast<int32_t>(i), 1, positions_[static_cast<size_t>(r)] + 1, s.block_table});
  }
  Mark(Op::kGather);
  Block(last, cache, last_seqs_, gathered_q_.data(), q_dim, gathered_.data(), num_logits);
  Norm(gathered_.data(), out_norm_w_, out_norm_b_, num_logits, gathered_.data());
  Mark(Op::kFinalNorm);
  head_->Forward(gathered_.data(), num_logits, logits);
  Mark(Op::kHead);
  return absl::OkStatus();
}

void TransformerImpl::SetProfiling(bool on) {
  profiling_ = on;
  if (on) {
    profiled_steps_ = 0;
    op_seconds_.fill(0.0);
  }
}

ForwardProfile TransformerImpl::profile() const {
  static constexpr const char* kNames[] = {"embed",      "attn_norm", "qkv_matmul", "qk_norm",  "rope",     "kv_write",
                                           "attention",  "out_matmul", "residual",  "ffn_norm", "gate_up_matmul",
                                           "activation", "down_matmul", "gather",   "final_norm", "head_matmul"};
  static_assert(std::size(kNames) == static_cast<size_t>(Op::kCount));
  ForwardProfile p;
  p.steps = profiled_steps_;
  for (size_t i = 0; i < std::size(kNames); ++i) p.ops.emplace_back(kNames[i], op_seconds_[i]);
  return p;
}

}  // namespace llmserve
