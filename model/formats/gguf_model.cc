#include "model/formats/gguf_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numbers>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace llmserve {
namespace {

#define GGUF_CONCAT_INNER(a, b) a##b
#define GGUF_CONCAT(a, b) GGUF_CONCAT_INNER(a, b)
#define GGUF_ASSIGN_OR_RETURN(lhs, expr) GGUF_ASSIGN_OR_RETURN_IMPL(GGUF_CONCAT(_gguf_or_, __LINE__), lhs, expr)
#define GGUF_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return Required(tmp.status());    \
  lhs = *std::move(tmp)

// A key the loader needs is missing: that makes the file invalid (not "file not found").
absl::Status Required(const absl::Status& s) {
  if (absl::IsNotFound(s)) return absl::InvalidArgumentError(s.message());
  return s;
}

// Checks the llama3 per-dimension RoPE factors ("rope_freqs.weight", written by
// llama.cpp's converter for Llama 3.1+) against the llama3 formula and, when they
// match, records them as RopeScalingKind::kLlama3.
absl::Status InferLlama3Scaling(const GgufFile& g, const GgufTensorInfo& t, int64_t original_context,
                                ModelConfig* c) {
  const int64_t half = c->rope_dim / 2;
  if (t.ggml_type != kGgmlTypeF32 || t.shape.size() != 1 || t.shape[0] != half || half <= 0) {
    return absl::UnimplementedError(absl::StrCat(g.path(), ": tensor rope_freqs.weight must be F32 of shape [",
                                                 half, "] (rope_dim / 2)"));
  }
  std::vector<float> f(static_cast<size_t>(half));
  std::memcpy(f.data(), t.data, f.size() * sizeof(float));
  float factor = 1.0f;
  for (float v : f) factor = std::max(factor, v);
  if (factor == 1.0f) return absl::OkStatus();  // all ones: no scaling at all
  const double low = 1.0, high = 4.0, orig = static_cast<double>(original_context);
  const double low_wavelen = orig / low, high_wavelen = orig / high;
  for (int64_t i = 0; i < half; ++i) {
    const double inv_freq = std::pow(static_cast<double>(c->rope_theta), -2.0 * i / c->rope_dim);
    const double wavelen = 2.0 * std::numbers::pi / inv_freq;
    double expect;
    if (wavelen < high_wavelen) {
      expect = 1.0;
    } else if (wavelen > low_wavelen) {
      expect = factor;
    } else {
      const double smooth = (orig / wavelen - low) / (high - low);
      expect = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    if (!(std::fabs(f[i] - expect) <= 1e-3 * expect)) {
      return absl::UnimplementedError(absl::StrCat(
          g.path(), ": rope_freqs.weight[", i, "] = ", f[i], " does not match llama3 RoPE scaling (factor ", factor,
          ", low_freq_factor 1, high_freq_factor 4, original context ", original_context, ", expected ", expect,
          "); custom per-dimension RoPE factors are not supported"));
    }
  }
  c->rope_scaling.kind = RopeScalingKind::kLlama3;
  c->rope_scaling.factor = factor;
  c->rope_scaling.low_freq_factor = static_cast<float>(low);
  c->rope_scaling.high_freq_factor = static_cast<float>(high);
  c->rope_scaling.original_context = original_context;
  return absl::OkStatus();
}

// A per-pair RoPE factor tensor (rope_factors_long/short.weight): F32 [rope_dim / 2].
absl::StatusOr<std::vector<float>> RopeFactors(const GgufFile& g, const GgufTensorInfo& t, int64_t half) {
  if (t.ggml_type != kGgmlTypeF32 || t.shape.size() != 1 || t.shape[0] != half || half <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(g.path(), ": tensor ", t.name, " must be F32 of shape [", half, "] (rope_dim / 2)"));
  }
  std::vector<float> f(static_cast<size_t>(half));
  std::memcpy(f.data(), t.data, f.size() * sizeof(float));
  return f;
}

// Phi-3's LongRoPE as llama.cpp's converter writes it: rope_factors_long.weight and
// rope_factors_short.weight, <arch>.rope.scaling.original_context_length and
// <arch>.rope.scaling.attn_factor (absent: HF's sqrt(1 + ln(scale) / ln(original))).
absl::Status ReadLongRope(const GgufFile& g, const std::string& arch, int64_t original, ModelConfig* c) {
  const GgufTensorInfo* long_t = g.FindTensor("rope_factors_long.weight");
  const GgufTensorInfo* short_t = g.FindTensor("rope_factors_short.weight");
  if (long_t == nullptr || short_t == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(g.path(), ": longrope needs both rope_factors_long.weight and rope_factors_short.weight"));
  }
  if (original <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(g.path(), ": longrope needs ", arch, ".rope.scaling.original_context_length"));
  }
  RopeScaling& s = c->rope_scaling;
  s.kind = RopeScalingKind::kLongRope;
  s.original_context = original;
  GGUF_ASSIGN_OR_RETURN(s.long_factor, RopeFactors(g, *long_t, c->rope_dim / 2));
  GGUF_ASSIGN_OR_RETURN(s.short_factor, RopeFactors(g, *short_t, c->rope_dim / 2));
  const double scale = static_cast<double>(c->context_length) / static_cast<double>(original);
  const double dflt = scale > 1.0 ? std::sqrt(1.0 + std::log(scale) / std::log(static_cast<double>(original))) : 1.0;
  GGUF_ASSIGN_OR_RETURN(const double attn, g.GetFloatOr(absl::StrCat(arch, ".rope.scaling.attn_factor"), dflt));
  s.attention_factor = static_cast<float>(attn);
  return absl::OkStatus();
}

absl::Status ReadRope(const GgufFile& g, const std::string& arch, ModelConfig* c) {
  auto key = [&](absl::string_view k) { return absl::StrCat(arch, ".", k); };
  GGUF_ASSIGN_OR_RETURN(double theta, g.GetFloatOr(key("rope.freq_base"), 10000.0));
  GGUF_ASSIGN_OR_RETURN(int64_t rope_dim, g.GetIntOr(key("rope.dimension_count"), c->head_dim));
  c->rope_theta = static_cast<float>(theta);
  c->rope_dim = rope_dim;
  GGUF_ASSIGN_OR_RETURN(std::string type, g.GetStringOr(key("rope.scaling.type"), ""));
  GGUF_ASSIGN_OR_RETURN(double factor, g.GetFloatOr(key("rope.scaling.factor"), 0.0));
  GGUF_ASSIGN_OR_RETURN(int64_t original, g.GetIntOr(key("rope.scaling.original_context_length"), 0));
  if (type.empty() && g.Find(key("rope.scale_linear")) != nullptr) {  // older converters
    type = "linear";
    GGUF_ASSIGN_OR_RETURN(factor, g.GetFloat(key("rope.scale_linear")));
  }
  if (type == "linear") {
    if (factor == 0.0) return absl::InvalidArgumentError(absl::StrCat(g.path(), ": linear RoPE scaling without a factor"));
    c->rope_scaling.kind = factor == 1.0 ? RopeScalingKind::kNone : RopeScalingKind::kLinear;
    c->rope_scaling.factor = static_cast<float>(factor);
  } else if (type == "llama3") {
    GGUF_ASSIGN_OR_RETURN(double low, g.GetFloatOr(key("rope.scaling.low_freq_factor"), 1.0));
    GGUF_ASSIGN_OR_RETURN(double high, g.GetFloatOr(key("rope.scaling.high_freq_factor"), 4.0));
    c->rope_scaling.kind = RopeScalingKind::kLlama3;
    c->rope_scaling.factor = static_cast<float>(factor);
    c->rope_scaling.low_freq_factor = static_cast<float>(low);
    c->rope_scaling.high_freq_factor = static_cast<float>(high);
    c->rope_scaling.original_context = original;
  } else if (type == "longrope" || (type.empty() && g.FindTensor("rope_factors_long.weight") != nullptr)) {
    if (absl::Status s = ReadLongRope(g, arch, original, c); !s.ok()) return s;
  } else if (!type.empty() && type != "none") {
    return absl::UnimplementedError(absl::StrCat(g.path(), ": RoPE scaling type '", type, "' is not supported"));
  }
  if (const GgufTensorInfo* freqs = g.FindTensor("rope_freqs.weight")) {
    if (c->rope_scaling.kind != RopeScalingKind::kNone) {
      return absl::UnimplementedError(
          absl::StrCat(g.path(), ": rope_freqs.weight together with rope.scaling.type '", type, "' is not supported"));
    }
    if (c->rope_dim <= 0 || c->rope_dim > 4096 || !(c->rope_theta > 0.0f)) {
      return absl::InvalidArgumentError(absl::StrCat(g.path(), ": rope dimension ", c->rope_dim, " / freq_base ",
                                                     c->rope_theta, " out of range"));
    }
    return InferLlama3Scaling(g, *freqs, original > 0 ? original : 8192, c);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ModelConfig> GgufModelConfig(const GgufFile& g) {
  ModelConfig c;
  c.format = "gguf";
  GGUF_ASSIGN_OR_RETURN(const std::string arch, g.GetString("general.architecture"));
  if (arch == "llama") {
    c.arch = Architecture::kLlama;
  } else if (arch == "qwen2") {
    c.arch = Architecture::kQwen2;
  } else if (arch == "qwen3") {
    c.arch = Architecture::kQwen3;
  } else if (arch == "phi3") {
    c.arch = Architecture::kPhi3;
  } else if (arch == "gpt2") {
    c.arch = Architecture::kGpt2;
  } else {
    return absl::UnimplementedError(absl::StrCat(g.path(), ": architecture '", arch,
                                                 "' is not supported (only llama, qwen2, qwen3, phi3 and gpt2)"));
  }
  GGUF_ASSIGN_OR_RETURN(c.name, g.GetStringOr("general.name", std::filesystem::path(g.path()).stem().string()));
  auto key = [&](absl::string_view k) { return absl::StrCat(arch, ".", k); };
  GGUF_ASSIGN_OR_RETURN(c.context_length, g.GetInt(key("context_length")));
  GGUF_ASSIGN_OR_RETURN(c.hidden_size, g.GetInt(key("embedding_length")));
  GGUF_ASSIGN_OR_RETURN(c.num_layers, g.GetInt(key("block_count")));
  GGUF_ASSIGN_OR_RETURN(c.ffn_dim, g.GetInt(key("feed_forward_length")));
  GGUF_ASSIGN_OR_RETURN(c.num_heads, g.GetInt(key("attention.head_count")));
  GGUF_ASSIGN_OR_RETURN(c.num_kv_heads, g.GetIntOr(key("attention.head_count_kv"), c.num_heads));
  GGUF_ASSIGN_OR_RETURN(const int64_t key_length, g.GetIntOr(key("attention.key_length"), 0));
  GGUF_ASSIGN_OR_RETURN(const int64_t value_length, g.GetIntOr(key("attention.value_length"), 0));
  if (key_length > 0) {
    c.head_dim = key_length;
  } else if (c.num_heads > 0 && c.hidden_size % c.num_heads == 0) {
    c.head_dim = c.hidden_size / c.num_heads;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(g.path(), ": embedding_length ", c.hidden_size,
                                                   " is not a multiple of head_count ", c.num_heads));
  }
  if (value_length > 0 && value_length != c.head_dim) {
    return absl::UnimplementedError(absl::StrCat(g.path(), ": attention.value_length ", value_length,
                                                 " differs from the key length ", c.head_dim));
  }

  if (c.arch != Architecture::kGpt2) {
    GGUF_ASSIGN_OR_RETURN(const double eps, g.GetFloat(key("attention.layer_norm_rms_epsilon")));
    c.norm = NormKind::kRmsNorm;
    c.norm_eps = static_cast<float>(eps);
    c.position = PositionKind::kRope;
    // llama.cpp's converter permutes Q/K rows into interleaved pairs for llama only; qwen2,
    // qwen3 and phi3 keep HF's rows and llama.cpp rotates them NEOX-style (rotate half).
    c.rope_layout = c.arch == Architecture::kLlama ? RopeLayout::kInterleaved : RopeLayout::kHalf;
    c.activation = Activation::kSilu;
    c.qkv_bias = g.FindTensor("blk.0.attn_q.bias") != nullptr || g.FindTensor("blk.0.attn_qkv.bias") != nullptr;
    c.out_bias = g.FindTensor("blk.0.attn_output.bias") != nullptr;
    c.qk_norm = c.arch == Architecture::kQwen3;
    if (absl::Status s = ReadRope(g, arch, &c); !s.ok()) return s;
    // A window on every layer (0: none). llama.cpp reads phi3's but leaves it off for now
    // (its PR 13676); HF applies it, and so does llmserve.
    GGUF_ASSIGN_OR_RETURN(const int64_t window, g.GetIntOr(key("attention.sliding_window"), 0));
    if (g.Find(key("attention.sliding_window_pattern")) != nullptr) {
      return absl::UnimplementedError(
          absl::StrCat(g.path(), ": ", key("attention.sliding_window_pattern"), " is not supported"));
    }
    if (window < 0) return absl::InvalidArgumentError(absl::StrCat(g.path(), ": sliding window ", window));
    if (window > 0 && window < c.context_length) c.sliding_window = window;
  } else {
    GGUF_ASSIGN_OR_RETURN(const double eps, g.GetFloat(key("attention.layer_norm_epsilon")));
    c.norm = NormKind::kLayerNorm;
    c.norm_eps = static_cast<float>(eps);
    c.norm_bias = true;
    c.position = PositionKind::kLearned;
    c.activation = Activation::kGeluTanh;
    c.qkv_bias = c.out_bias = c.mlp_bias = true;
  }
  c.tied_embeddings = g.FindTensor("output.weight") == nullptr;

  if (g.Find(key("vocab_size")) != nullptr) {
    GGUF_ASSIGN_OR_RETURN(c.vocab_size, g.GetInt(key("vocab_size")));
  } else if (const GgufValue* tokens = g.Find("tokenizer.ggml.tokens");
             tokens != nullptr && tokens->type == GgufType::kArray) {
    c.vocab_size = static_cast<int64_t>(tokens->size());
  } else if (const GgufTensorInfo* embd = g.FindTensor("token_embd.weight"); embd != nullptr && !embd->shape.empty()) {
    c.vocab_size = embd->shape[0];
  } else {
    return absl::InvalidArgumentError(absl::StrCat(g.path(), ": cannot tell the vocabulary size (no ", key("vocab_size"),
                                                   ", tokenizer.ggml.tokens or token_embd.weight)"));
  }
  for (auto [name, out] : {std::pair{"tokenizer.ggml.bos_token_id", &c.bos_id},
                           std::pair{"tokenizer.ggml.eos_token_id", &c.eos_id}}) {
    GGUF_ASSIGN_OR_RETURN(const int64_t id, g.GetIntOr(name, -1));
    if (id < -1 || id > INT32_MAX) {
      return absl::InvalidArgumentError(absl::StrCat(g.path(), ": ", name, " ", id, " out of range"));
    }
    *out = static_cast<int32_t>(id);
  }
  // End of generation: EOS, and the end-of-turn / end-of-message ids of instruct models
  // (llama.cpp's eog set: Llama 3's <|eot_id|> and <|eom_id|>, ...).
  for (const char* name : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                           "tokenizer.ggml.eom_token_id"}) {
    GGUF_ASSIGN_OR_RETURN(const int64_t id, g.GetIntOr(name, -1));
    if (id < -1 || id >= c.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(g.path(), ": ", name, " ", id, " outside the vocabulary of ",
                                                     c.vocab_size));
    }
    const int32_t id32 = static_cast<int32_t>(id);
    if (id >= 0 && std::find(c.eos_ids.begin(), c.eos_ids.end(), id32) == c.eos_ids.end()) c.eos_ids.push_back(id32);
  }
  return c;
}

absl::StatusOr<std::unique_ptr<ModelWeights>> LoadGgufModel(const GgufFile& g) {
  auto config = GgufModelConfig(g);
  if (!config.ok()) return config.status();
  // Validate before ExpectedTensors: it bounds the layer count and dims.
  if (absl::Status s = config->Validate(); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(g.path(), ": ", s.message()));
  }
  auto weights = std::make_unique<ModelWeights>();
  weights->config = *config;
  if (g.mapped_file() != nullptr) weights->KeepAlive(g.mapped_file());
  auto computable = [](uint32_t id) { return GgmlTypeToDType(id) || QuantTypeFromGgml(id); };
  const ModelConfig& c = *config;
  const bool llama_family = c.arch != Architecture::kGpt2;
  const int64_t q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
  // Fused Llama-family tensors (llama.cpp's create_tensor_qkv, phi3's ffn_up holding
  // gate | up) and the canonical parts they split into; nullopt for any other tensor.
  using Parts = std::pair<std::vector<std::string>, std::vector<int64_t>>;  // names, rows
  auto fused_parts = [&](const GgufTensorInfo& t) -> std::optional<Parts> {
    if (!llama_family || !absl::StartsWith(t.name, "blk.")) return std::nullopt;
    const size_t dot = t.name.find('.', 4);
    if (dot == std::string::npos) return std::nullopt;
    const std::string b = t.name.substr(0, dot + 1);
    const std::string rest = t.name.substr(dot + 1);
    if (rest == "attn_qkv.weight" || rest == "attn_qkv.bias") {
      const std::string param = rest.substr(rest.find('.'));
      return Parts{{b + "attn_q" + param, b + "attn_k" + param, b + "attn_v" + param}, {q, kv, kv}};
    }
    if (rest == "ffn_up.weight" && g.FindTensor(b + "ffn_gate.weight") == nullptr && !t.shape.empty() &&
        t.shape[0] == 2 * c.ffn_dim) {
      return Parts{{b + "ffn_gate.weight", b + "ffn_up.weight"}, {c.ffn_dim, c.ffn_dim}};
    }
    return std::nullopt;
  };
  for (const ExpectedTensor& e : ExpectedTensors(c)) {
    const GgufTensorInfo* t = g.FindTensor(e.name);
    if (t != nullptr && !computable(t->ggml_type)) return g.View(*t).status();
  }
  for (const GgufTensorInfo& t : g.tensors()) {
    const auto parts = fused_parts(t);
    if (!computable(t.ggml_type)) {
      if (parts) return g.View(t).status();  // needed: UNIMPLEMENTED naming the type
      continue;                              // not needed (checked above)
    }
    auto view = g.View(t);
    if (!view.ok()) return view.status();
    std::vector<TensorView> views;
    if (parts) {
      auto split = SplitRows(*view, parts->first, parts->second);
      if (!split.ok()) {
        return absl::Status(split.status().code(), absl::StrCat(g.path(), ": ", split.status().message()));
      }
      views = *std::move(split);
    } else {
      views.push_back(*std::move(view));
    }
    for (TensorView& v : views) {
      if (absl::Status s = weights->Add(std::move(v)); !s.ok()) {
        return absl::Status(s.code(), absl::StrCat(g.path(), ": ", s.message()));
      }
    }
  }
  if (absl::Status s = weights->CheckComplete(g.path()); !s.ok()) return s;
  return weights;
}

absl::StatusOr<std::unique_ptr<ModelWeights>> LoadGgufModel(const std::string& path) {
  auto g = GgufFile::Open(path);
  if (!g.ok()) return g.status();
  return LoadGgufModel(**g);
}

}  // namespace llmserve

#undef GGUF_ASSIGN_OR_RETURN_IMPL
#undef GGUF_ASSIGN_OR_RETURN
#undef GGUF_CONCAT
#undef GGUF_CONCAT_INNER
