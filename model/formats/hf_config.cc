#include "model/formats/hf_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/formats/hf_generation_config.h"
#include "model/mapped_file.h"
#include "nlohmann/json.hpp"

namespace llmserve {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxConfigBytes = size_t{16} << 20;

// Typed, checked access to the keys of one config.json object.
class ConfigReader {
 public:
  ConfigReader(const json& j, const std::string& path) : j_(j), path_(path) {}

  absl::Status Error(absl::string_view key, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": config key \"", key, "\" ", what));
  }

  // The value of `key`, or nullptr when absent or null.
  const json* Get(const char* key) const {
    auto it = j_.find(key);
    return (it == j_.end() || it->is_null()) ? nullptr : &*it;
  }

  // An integer >= `min`; absent/null gives `dflt`, or an error when there is none.
  absl::StatusOr<int64_t> Int(const char* key, std::optional<int64_t> dflt, int64_t min = 1) const {
    const json* v = Get(key);
    if (v == nullptr) {
      if (dflt) return *dflt;
      return Error(key, "is missing");
    }
    return IntValue(key, *v, min);
  }

  absl::StatusOr<int64_t> IntValue(absl::string_view key, const json& v, int64_t min) const {
    if (!v.is_number_integer()) return Error(key, absl::StrCat("must be an integer, got ", v.type_name()));
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Error(key, "is out of range");
    }
    const int64_t x = v.get<int64_t>();
    if (x < min) return Error(key, absl::StrCat("must be at least ", min, ", got ", x));
    return x;
  }

  // A finite number; absent/null gives `dflt`, or an error when there is none.
  absl::StatusOr<float> Float(const char* key, std::optional<float> dflt, const json* obj = nullptr) const {
    const json& o = obj ? *obj : j_;
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) {
      if (dflt) return *dflt;
      return Error(key, "is missing");
    }
    if (!it->is_number()) return Error(key, absl::StrCat("must be a number, got ", it->type_name()));
    const double x = it->get<double>();
    if (!std::isfinite(x) || std::fabs(x) > 1e30) return Error(key, "is out of range");
    return static_cast<float>(x);
  }

  absl::StatusOr<bool> Bool(const char* key, bool dflt) const {
    const json* v = Get(key);
    if (v == nullptr) return dflt;
    if (!v->is_boolean()) return Error(key, absl::StrCat("must be a boolean, got ", v->type_name()));
    return v->get<bool>();
  }

  // A token id (an integer, or a list whose first element is used); -1 when absent.
  absl::StatusOr<int32_t> TokenId(const char* key, int32_t dflt) const {
    const json* v = Get(key);
    if (v != nullptr && v->is_array()) v = v->empty() ? nullptr : &(*v)[0];
    if (v == nullptr) return dflt;
    auto x = IntValue(key, *v, 0);
    if (!x.ok()) return x.status();
    if (*x > std::numeric_limits<int32_t>::max()) return Error(key, "is out of range");
    return static_cast<int32_t>(*x);
  }

  // An optional string value ("" when absent).
  absl::StatusOr<std::string> String(const char* key) const {
    const json* v = Get(key);
    if (v == nullptr) return std::string();
    if (!v->is_string()) return Error(key, absl::StrCat("must be a string, got ", v->type_name()));
    return v->get<std::string>();
  }

  const std::string& path() const { return path_; }

 private:
  const json& j_;
  const std::string& path_;
};

// The Llama-family architectures config.json can name.
enum class Family { kLlama, kMistral, kQwen2, kQwen3, kPhi3 };

#define HF_ASSIGN_OR_RETURN(lhs, expr)        \
  do {                                    \
    auto _v = (expr);                     \
    if (!_v.ok()) return _v.status();     \
    lhs = *std::move(_v);                 \
  } while (0)

// A list of positive finite numbers under `key` of object `obj` (longrope's factors).
absl::StatusOr<std::vector<float>> FloatList(const ConfigReader& r, const json& obj, const char* key) {
  auto it = obj.find(key);
  const std::string name = absl::StrCat("rope_scaling.", key);
  if (it == obj.end() || it->is_null()) return r.Error(name, "is missing");
  if (!it->is_array()) return r.Error(name, "must be a list of numbers");
  std::vector<float> out;
  for (const json& v : *it) {
    if (!v.is_number()) return r.Error(name, "must be a list of numbers");
    const double x = v.get<double>();
    if (!std::isfinite(x) || !(x > 0.0) || x > 1e30) return r.Error(name, "holds a value not positive and finite");
    out.push_back(static_cast<float>(x));
  }
  return out;
}

// rope_scaling {"type": "longrope" (or "su"), "short_factor", "long_factor"}, with
// original_max_position_embeddings in it or at the top level (Phi-3), as HF's
// _compute_longrope_parameters reads them.
absl::Status ParseLongRope(const ConfigReader& r, const json& rs, ModelConfig* c) {
  RopeScaling& s = c->rope_scaling;
  s.kind = RopeScalingKind::kLongRope;
  HF_ASSIGN_OR_RETURN(s.short_factor, FloatList(r, rs, "short_factor"));
  HF_ASSIGN_OR_RETURN(s.long_factor, FloatList(r, rs, "long_factor"));
  if (auto it = rs.find("original_max_position_embeddings"); it != rs.end() && !it->is_null()) {
    HF_ASSIGN_OR_RETURN(s.original_context, r.IntValue("rope_scaling.original_max_position_embeddings", *it, 1));
  } else if (r.Get("original_max_position_embeddings") != nullptr) {
    HF_ASSIGN_OR_RETURN(s.original_context, r.Int("original_max_position_embeddings", std::nullopt));
  } else {
    return r.Error("original_max_position_embeddings", "is missing (longrope needs it)");
  }
  if (auto it = rs.find("attention_factor"); it != rs.end() && !it->is_null()) {
    HF_ASSIGN_OR_RETURN(s.attention_factor, r.Float("attention_factor", std::nullopt, &rs));
    return absl::OkStatus();
  }
  // HF (Phi-3): the scale is the ratio of the context to the original one, and the
  // attention factor sqrt(1 + ln(scale) / ln(original)) when it exceeds 1.
  const double scale = static_cast<double>(c->context_length) / static_cast<double>(s.original_context);
  s.attention_factor = scale > 1.0 ? static_cast<float>(std::sqrt(
                                         1.0 + std::log(scale) / std::log(static_cast<double>(s.original_context))))
                                   : 1.0f;
  return absl::OkStatus();
}

absl::Status ParseRopeScaling(const ConfigReader& r, ModelConfig* c) {
  const json* rs = r.Get("rope_scaling");
  if (rs == nullptr) return absl::OkStatus();
  if (!rs->is_object()) return r.Error("rope_scaling", "must be an object or null");
  std::string type;
  for (const char* k : {"rope_type", "type"}) {
    auto it = rs->find(k);
    if (it != rs->end() && !it->is_null()) {
      if (!it->is_string()) return r.Error("rope_scaling", absl::StrCat("\"", k, "\" must be a string"));
      type = it->get<std::string>();
      break;
    }
  }
  RopeScaling& s = c->rope_scaling;
  if (type.empty()) return r.Error("rope_scaling", "has no \"rope_type\" or \"type\"");
  if (type == "default") return absl::OkStatus();
  if (type == "longrope" || type == "su") return ParseLongRope(r, *rs, c);
  if (type != "linear" && type != "llama3") {
    return absl::UnimplementedError(absl::StrCat(r.path(), ": rope_scaling type \"", type,
                                                 "\" is not supported (only linear, llama3 and longrope)"));
  }
  HF_ASSIGN_OR_RETURN(s.factor, r.Float("factor", std::nullopt, rs));
  if (type == "linear") {
    s.kind = RopeScalingKind::kLinear;
    return absl::OkStatus();
  }
  s.kind = RopeScalingKind::kLlama3;
  HF_ASSIGN_OR_RETURN(s.low_freq_factor, r.Float("low_freq_factor", std::nullopt, rs));
  HF_ASSIGN_OR_RETURN(s.high_freq_factor, r.Float("high_freq_factor", std::nullopt, rs));
  auto it = rs->find("original_max_position_embeddings");
  if (it == rs->end()) return r.Error("rope_scaling", "lacks original_max_position_embeddings");
  HF_ASSIGN_OR_RETURN(s.original_context, r.IntValue("rope_scaling.original_max_position_embeddings", *it, 1));
  return absl::OkStatus();
}

// The sliding window: Mistral's and Phi-3's `sliding_window` on every layer; Qwen2/3's
// only with use_sliding_window, on the layers `layer_types` calls "sliding_attention"
// or, without it, on layers >= max_window_layers (HF's Qwen2Config). A window that
// covers the whole context is no window.
absl::Status ParseSlidingWindow(const ConfigReader& r, Family family, ModelConfig* c) {
  if (family == Family::kLlama) return absl::OkStatus();  // LlamaForCausalLM has none
  const bool qwen = family == Family::kQwen2 || family == Family::kQwen3;
  bool use = true;
  if (qwen) HF_ASSIGN_OR_RETURN(use, r.Bool("use_sliding_window", false));
  if (!use || r.Get("sliding_window") == nullptr) return absl::OkStatus();
  int64_t window;
  HF_ASSIGN_OR_RETURN(window, r.Int("sliding_window", std::nullopt));
  if (window >= c->context_length) return absl::OkStatus();
  c->sliding_window = window;
  if (!qwen) return absl::OkStatus();
  c->sliding_layers.assign(static_cast<size_t>(c->num_layers), false);
  if (const json* types = r.Get("layer_types")) {
    if (!types->is_array() || static_cast<int64_t>(types->size()) != c->num_layers) {
      return r.Error("layer_types", absl::StrCat("must be a list of ", c->num_layers, " strings"));
    }
    for (size_t i = 0; i < types->size(); ++i) {
      const json& t = (*types)[i];
      if (t == "sliding_attention") {
        c->sliding_layers[i] = true;
      } else if (t != "full_attention") {
        return r.Error("layer_types", absl::StrCat("entry ", i, " is not \"sliding_attention\" or \"full_attention\""));
      }
    }
  } else {
    int64_t from;
    HF_ASSIGN_OR_RETURN(from, r.Int("max_window_layers", 28, 0));
    for (int64_t i = from; i < c->num_layers; ++i) c->sliding_layers[static_cast<size_t>(i)] = true;
  }
  if (std::find(c->sliding_layers.begin(), c->sliding_layers.end(), true) == c->sliding_layers.end()) {
    c->sliding_window = 0;
    c->sliding_layers.clear();
  }
  return absl::OkStatus();
}

// LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Phi3ForCausalLM.
absl::Status ParseLlamaFamily(const ConfigReader& r, Family family, ModelConfig* c) {
  switch (family) {
    case Family::kLlama:
    case Family::kMistral: c->arch = Architecture::kLlama; break;
    case Family::kQwen2: c->arch = Architecture::kQwen2; break;
    case Family::kQwen3: c->arch = Architecture::kQwen3; break;
    case Family::kPhi3: c->arch = Architecture::kPhi3; break;
  }
  c->norm = NormKind::kRmsNorm;
  c->position = PositionKind::kRope;
  c->rope_layout = RopeLayout::kHalf;
  c->activation = Activation::kSilu;
  HF_ASSIGN_OR_RETURN(c->hidden_size, r.Int("hidden_size", std::nullopt));
  HF_ASSIGN_OR_RETURN(c->ffn_dim, r.Int("intermediate_size", std::nullopt));
  HF_ASSIGN_OR_RETURN(c->num_layers, r.Int("num_hidden_layers", std::nullopt));
  HF_ASSIGN_OR_RETURN(c->num_heads, r.Int("num_attention_heads", std::nullopt));
  HF_ASSIGN_OR_RETURN(c->num_kv_heads, r.Int("num_key_value_heads", c->num_heads));
  if (r.Get("head_dim") == nullptr && c->hidden_size % c->num_heads != 0) {
    return r.Error("num_attention_heads", absl::StrCat("(", c->num_heads, ") does not divide hidden_size (",
                                                       c->hidden_size, ") and there is no head_dim"));
  }
  HF_ASSIGN_OR_RETURN(c->head_dim, r.Int("head_dim", c->hidden_size / c->num_heads));
  c->rope_dim = c->head_dim;
  if (r.Get("partial_rotary_factor") != nullptr) {  // Phi-3 family (Phi-4-mini: 0.75)
    float fraction;
    HF_ASSIGN_OR_RETURN(fraction, r.Float("partial_rotary_factor", std::nullopt));
    if (!(fraction > 0.0f && fraction <= 1.0f)) return r.Error("partial_rotary_factor", "must be in (0, 1]");
    c->rope_dim = static_cast<int64_t>(static_cast<double>(c->head_dim) * fraction);  // HF: int(head_dim * f)
  }
  HF_ASSIGN_OR_RETURN(c->norm_eps, r.Float("rms_norm_eps", 1e-6f));
  HF_ASSIGN_OR_RETURN(c->rope_theta, r.Float("rope_theta", 10000.0f));
  HF_ASSIGN_OR_RETURN(c->context_length, r.Int("max_position_embeddings", std::nullopt));
  if (absl::Status s = ParseRopeScaling(r, c); !s.ok()) return s;
  HF_ASSIGN_OR_RETURN(c->vocab_size, r.Int("vocab_size", std::nullopt));
  HF_ASSIGN_OR_RETURN(c->tied_embeddings, r.Bool("tie_word_embeddings", false));
  HF_ASSIGN_OR_RETURN(c->bos_id, r.TokenId("bos_token_id", -1));
  HF_ASSIGN_OR_RETURN(c->eos_id, r.TokenId("eos_token_id", -1));
  bool attention_bias;
  HF_ASSIGN_OR_RETURN(attention_bias, r.Bool("attention_bias", false));
  const bool qwen2 = family == Family::kQwen2;
  c->qkv_bias = qwen2 || attention_bias;
  c->out_bias = !qwen2 && attention_bias;
  c->qk_norm = family == Family::kQwen3;
  HF_ASSIGN_OR_RETURN(c->mlp_bias, r.Bool("mlp_bias", false));
  std::string act;
  HF_ASSIGN_OR_RETURN(act, r.String("hidden_act"));
  if (!act.empty() && act != "silu") {
    return absl::UnimplementedError(absl::StrCat(r.path(), ": hidden_act \"", act, "\" is not supported (silu)"));
  }
  return ParseSlidingWindow(r, family, c);
}

absl::Status ParseGpt2(const ConfigReader& r, ModelConfig* c) {
  c->arch = Architecture::kGpt2;
  c->norm = NormKind::kLayerNorm;
  c->norm_bias = true;
  c->position = PositionKind::kLearned;
  c->rope_dim = 0;
  c->activation = Activation::kGeluTanh;
  c->qkv_bias = c->out_bias = c->mlp_bias = true;
  HF_ASSIGN_OR_RETURN(c->hidden_size, r.Int("n_embd", std::nullopt));
  HF_ASSIGN_OR_RETURN(c->num_layers, r.Int("n_layer", std::nullopt));
  HF_ASSIGN_OR_RETURN(c->num_heads, r.Int("n_head", std::nullopt));
  c->num_kv_heads = c->num_heads;
  if (c->hidden_size % c->num_heads != 0) {
    return r.Error("n_head", absl::StrCat("(", c->num_heads, ") does not divide n_embd (", c->hidden_size, ")"));
  }
  c->head_dim = c->hidden_size / c->num_heads;
  const char* ctx_key = r.Get("n_positions") != nullptr ? "n_positions" : "n_ctx";
  HF_ASSIGN_OR_RETURN(c->context_length, r.Int(ctx_key, std::nullopt));
  HF_ASSIGN_OR_RETURN(c->ffn_dim, r.Int("n_inner", 4 * c->hidden_size));
  HF_ASSIGN_OR_RETURN(c->norm_eps, r.Float("layer_norm_epsilon", 1e-5f));
  HF_ASSIGN_OR_RETURN(c->vocab_size, r.Int("vocab_size", std::nullopt));
  HF_ASSIGN_OR_RETURN(c->tied_embeddings, r.Bool("tie_word_embeddings", true));
  HF_ASSIGN_OR_RETURN(c->bos_id, r.TokenId("bos_token_id", 50256));
  HF_ASSIGN_OR_RETURN(c->eos_id, r.TokenId("eos_token_id", 50256));
  std::string act;
  HF_ASSIGN_OR_RETURN(act, r.String("activation_function"));
  if (!act.empty() && act != "gelu_new" && act != "gelu_pytorch_tanh" && act != "gelu_fast") {
    return absl::UnimplementedError(
        absl::StrCat(r.path(), ": activation_function \"", act, "\" is not supported (tanh-approximated gelu)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ModelConfig> ParseHfConfig(const std::string& path) {
  auto file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  const MappedFile& f = **file;
  if (f.size() == 0) return absl::InvalidArgumentError(absl::StrCat(path, ": empty config file"));
  if (f.size() > kMaxConfigBytes) return absl::InvalidArgumentError(absl::StrCat(path, ": config file too large"));
  const char* text = reinterpret_cast<const char*>(f.data());
  json j = json::parse(text, text + f.size(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(path, ": not valid JSON"));
  if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  ConfigReader r(j, path);

  std::string arch;
  if (const json* a = r.Get("architectures")) {
    if (!a->is_array() || (!a->empty() && !(*a)[0].is_string())) {
      return r.Error("architectures", "must be a list of strings");
    }
    if (!a->empty()) arch = (*a)[0].get<std::string>();
  }
  if (arch.empty()) {
    std::string type;
    HF_ASSIGN_OR_RETURN(type, r.String("model_type"));
    if (type == "llama") arch = "LlamaForCausalLM";
    else if (type == "mistral") arch = "MistralForCausalLM";
    else if (type == "qwen2") arch = "Qwen2ForCausalLM";
    else if (type == "qwen3") arch = "Qwen3ForCausalLM";
    else if (type == "phi3") arch = "Phi3ForCausalLM";
    else if (type == "gpt2") arch = "GPT2LMHeadModel";
    else if (type.empty()) return r.Error("architectures", "and model_type are both missing");
    else return absl::UnimplementedError(absl::StrCat(path, ": model_type \"", type, "\" is not supported"));
  }

  ModelConfig c;
  c.format = "hf";
  c.name = std::filesystem::path(path).parent_path().filename().string();
  absl::Status s;
  if (arch == "LlamaForCausalLM") {
    s = ParseLlamaFamily(r, Family::kLlama, &c);
  } else if (arch == "MistralForCausalLM") {
    s = ParseLlamaFamily(r, Family::kMistral, &c);
  } else if (arch == "Qwen2ForCausalLM") {
    s = ParseLlamaFamily(r, Family::kQwen2, &c);
  } else if (arch == "Qwen3ForCausalLM") {
    s = ParseLlamaFamily(r, Family::kQwen3, &c);
  } else if (arch == "Phi3ForCausalLM") {
    s = ParseLlamaFamily(r, Family::kPhi3, &c);
  } else if (arch == "GPT2LMHeadModel") {
    s = ParseGpt2(r, &c);
  } else {
    return absl::UnimplementedError(absl::StrCat(
        path, ": architecture \"", arch,
        "\" is not supported (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
        "Phi3ForCausalLM, GPT2LMHeadModel)"));
  }
  if (!s.ok()) return s;
  if (const json* eos = r.Get("eos_token_id")) {  // Llama 3 Instruct: [end_of_text, eom, eot]
    absl::StatusOr<std::vector<int32_t>> ids = TokenIdList(*eos, absl::StrCat(path, ": config key \"eos_token_id\""));
    if (!ids.ok()) return ids.status();
    AppendUniqueIds(*ids, &c.eos_ids);
  }
  if (s = c.Validate(); !s.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  return c;
}

#undef HF_ASSIGN_OR_RETURN

}  // namespace llmserve
