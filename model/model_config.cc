#include "model/model_config.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace llmserve {

absl::string_view ArchitectureName(Architecture a) {
  switch (a) {
    case Architecture::kLlama: return "llama";
    case Architecture::kQwen2: return "qwen2";
    case Architecture::kQwen3: return "qwen3";
    case Architecture::kPhi3: return "phi3";
    case Architecture::kGpt2: return "gpt2";
  }
  return "?";
}

absl::Status ModelConfig::Validate() const {
  auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("model config", name.empty() ? "" : " of ",
                                                   name, ": ", what));
  };
  // Upper bounds are generous (far above any real model) but keep products of a few
  // dims far from 64-bit overflow.
  constexpr int64_t kMaxDim = int64_t{1} << 20;
  constexpr int64_t kMaxVocab = int64_t{1} << 24;
  if (vocab_size <= 0 || vocab_size > kMaxVocab) return bad(absl::StrCat("vocab_size ", vocab_size, " out of range"));
  if (hidden_size <= 0 || hidden_size > kMaxDim) return bad(absl::StrCat("hidden_size ", hidden_size, " out of range"));
  if (num_layers <= 0 || num_layers > 1024) return bad(absl::StrCat("num_layers ", num_layers, " out of range"));
  if (num_heads <= 0 || num_heads > 4096) return bad(absl::StrCat("num_heads ", num_heads, " out of range"));
  if (num_kv_heads <= 0 || num_kv_heads > num_heads) {
    return bad(absl::StrCat("num_kv_heads ", num_kv_heads, " must be in [1, num_heads=", num_heads, "]"));
  }
  if (num_heads % num_kv_heads != 0) {
    return bad(absl::StrCat("num_heads ", num_heads, " is not a multiple of num_kv_heads ", num_kv_heads));
  }
  if (head_dim <= 0 || head_dim > 4096) return bad(absl::StrCat("head_dim ", head_dim, " out of range"));
  if (ffn_dim <= 0 || ffn_dim > kMaxDim * 4) return bad(absl::StrCat("ffn_dim ", ffn_dim, " out of range"));
  if (!(norm_eps > 0.0f && norm_eps < 1.0f)) return bad(absl::StrCat("norm_eps ", norm_eps, " out of range"));
  if (context_length <= 0 || context_length > (int64_t{1} << 24)) {
    return bad(absl::StrCat("context_length ", context_length, " out of range"));
  }
  if (position == PositionKind::kRope) {
    if (!(rope_theta > 0.0f)) return bad(absl::StrCat("rope_theta ", rope_theta, " must be positive"));
    if (rope_dim <= 0 || rope_dim > head_dim || rope_dim % 2 != 0) {
      return bad(absl::StrCat("rope_dim ", rope_dim, " must be even and in [2, head_dim=", head_dim, "]"));
    }
    if (rope_scaling.kind != RopeScalingKind::kNone && !(rope_scaling.factor > 0.0f)) {
      return bad("rope scaling factor must be positive");
    }
    if (rope_scaling.kind == RopeScalingKind::kLlama3 &&
        (rope_scaling.original_context <= 0 ||
         !(rope_scaling.high_freq_factor > rope_scaling.low_freq_factor))) {
      return bad("llama3 rope scaling needs original_max_position_embeddings > 0 and high_freq_factor > low_freq_factor");
    }
    if (rope_scaling.kind == RopeScalingKind::kLongRope) {
      const RopeScaling& rs = rope_scaling;
      const size_t half = static_cast<size_t>(rope_dim / 2);
      if (rs.short_factor.size() != half || rs.long_factor.size() != half) {
        return bad(absl::StrCat("longrope needs ", half, " short and long factors (rope_dim / 2), got ",
                                rs.short_factor.size(), " and ", rs.long_factor.size()));
      }
      for (const std::vector<float>* v : {&rs.short_factor, &rs.long_factor}) {
        for (float f : *v) {
          if (!(f > 0.0f && f < 1e30f)) return bad(absl::StrCat("longrope factor ", f, " must be positive and finite"));
        }
      }
      if (rs.original_context <= 0) return bad("longrope needs original_max_position_embeddings > 0");
      if (!(rs.attention_factor > 0.0f && rs.attention_factor < 1e6f)) {
        return bad(absl::StrCat("longrope attention factor ", rs.attention_factor, " out of range"));
      }
    }
  }
  if (sliding_window < 0) return bad(absl::StrCat("sliding_window ", sliding_window, " must not be negative"));
  if (!sliding_layers.empty() && static_cast<int64_t>(sliding_layers.size()) != num_layers) {
    return bad(absl::StrCat("sliding_layers names ", sliding_layers.size(), " layers, the model has ", num_layers));
  }
  if (qk_norm && arch == Architecture::kGpt2) return bad("gpt2 has no q/k norm");
  if (arch == Architecture::kGpt2) {
    if (norm != NormKind::kLayerNorm || position != PositionKind::kLearned) {
      return bad("gpt2 uses LayerNorm and learned positions");
    }
    if (num_kv_heads != num_heads) return bad("gpt2 has no grouped-query attention");
  }
  if (bos_id >= vocab_size || eos_id >= vocab_size || bos_id < -1 || eos_id < -1) {
    return bad(absl::StrCat("bos_id ", bos_id, " / eos_id ", eos_id, " outside the vocabulary of ", vocab_size));
  }
  for (int32_t id : eos_ids) {
    if (id < 0 || id >= vocab_size) {
      return bad(absl::StrCat("end-of-generation id ", id, " outside the vocabulary of ", vocab_size));
    }
  }
  return absl::OkStatus();
}

int64_t ModelConfig::LayerWindow(int64_t layer) const {
  if (sliding_window <= 0) return 0;
  if (sliding_layers.empty()) return sliding_window;
  if (layer < 0 || layer >= static_cast<int64_t>(sliding_layers.size())) return 0;
  return sliding_layers[static_cast<size_t>(layer)] ? sliding_window : 0;
}

std::string ModelConfig::DebugString() const {
  std::string s;
  absl::StrAppendFormat(&s, "name: %s\nformat: %s\narchitecture: %s\n", name, format, ArchitectureName(arch));
  absl::StrAppendFormat(&s, "vocab_size: %d\nhidden_size: %d\nnum_layers: %d\n", vocab_size, hidden_size, num_layers);
  absl::StrAppendFormat(&s, "num_heads: %d\nnum_kv_heads: %d\nhead_dim: %d\nffn_dim: %d\n", num_heads,
                        num_kv_heads, head_dim, ffn_dim);
  absl::StrAppendFormat(&s, "norm: %s eps=%g\n", norm == NormKind::kRmsNorm ? "rmsnorm" : "layernorm", norm_eps);
  if (position == PositionKind::kRope) {
    absl::StrAppendFormat(&s, "position: rope theta=%g dim=%d layout=%s", rope_theta, rope_dim,
                          rope_layout == RopeLayout::kHalf ? "half" : "interleaved");
    switch (rope_scaling.kind) {
      case RopeScalingKind::kNone: break;
      case RopeScalingKind::kLinear: absl::StrAppendFormat(&s, " scaling=linear x%g", rope_scaling.factor); break;
      case RopeScalingKind::kLlama3:
        absl::StrAppendFormat(&s, " scaling=llama3 x%g low=%g high=%g orig=%d", rope_scaling.factor,
                              rope_scaling.low_freq_factor, rope_scaling.high_freq_factor,
                              rope_scaling.original_context);
        break;
      case RopeScalingKind::kLongRope:
        absl::StrAppendFormat(&s, " scaling=longrope orig=%d attention_factor=%g (long factors from position %d)",
                              rope_scaling.original_context, rope_scaling.attention_factor,
                              rope_scaling.original_context);
        break;
    }
    s += "\n";
  } else {
    s += "position: learned\n";
  }
  absl::StrAppendFormat(&s, "activation: %s\n", activation == Activation::kSilu ? "silu (swiglu)" : "gelu_tanh");
  absl::StrAppendFormat(&s, "biases: qkv=%d out=%d mlp=%d norm=%d\nqk_norm: %d\n", qkv_bias, out_bias, mlp_bias,
                        norm_bias, qk_norm);
  if (sliding_window > 0) {
    int64_t layers = num_layers;
    if (!sliding_layers.empty()) layers = std::count(sliding_layers.begin(), sliding_layers.end(), true);
    absl::StrAppendFormat(&s, "sliding_window: %d (%d of %d layers)\n", sliding_window, layers, num_layers);
  } else {
    s += "sliding_window: none\n";
  }
  absl::StrAppendFormat(&s, "tied_embeddings: %d\ncontext_length: %d\nbos_id: %d\neos_id: %d\n", tied_embeddings,
                        context_length, bos_id, eos_id);
  if (!eos_ids.empty()) absl::StrAppend(&s, "eos_ids: ", absl::StrJoin(eos_ids, ","), "\n");
  return s;
}

}  // namespace llmserve
