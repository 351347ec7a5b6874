#include "model/formats/hf_model.h"

#include <cstring>
#include <filesystem>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "model/checked_math.h"
#include "model/formats/hf_config.h"
#include "model/formats/hf_generation_config.h"
#include "model/formats/safetensors_file.h"
#include "nlohmann/json.hpp"

namespace llmserve {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxIndexBytes = size_t{64} << 20;

struct ModuleMap {
  const char* hf;
  const char* canonical;
  bool transpose;
};

// Per-layer modules ("<module>.weight" / "<module>.bias") below "model.layers.N.".
constexpr ModuleMap kLlamaLayer[] = {
    {"self_attn.q_proj", "attn_q", false},         {"self_attn.k_proj", "attn_k", false},
    {"self_attn.v_proj", "attn_v", false},         {"self_attn.o_proj", "attn_output", false},
    {"mlp.gate_proj", "ffn_gate", false},          {"mlp.up_proj", "ffn_up", false},
    {"mlp.down_proj", "ffn_down", false},          {"input_layernorm", "attn_norm", false},
    {"post_attention_layernorm", "ffn_norm", false},
    {"self_attn.q_norm", "attn_q_norm", false},    {"self_attn.k_norm", "attn_k_norm", false},  // Qwen3
    {"self_attn.qkv_proj", "attn_qkv", false},     {"mlp.gate_up_proj", "ffn_gate_up", false},  // Phi-3
};

// Per-layer modules below "h.N." (GPT-2 Conv1D weights are stored [in, out]).
constexpr ModuleMap kGpt2Layer[] = {
    {"ln_1", "attn_norm", false},       {"attn.c_attn", "attn_qkv", true}, {"attn.c_proj", "attn_output", true},
    {"ln_2", "ffn_norm", false},        {"mlp.c_fc", "ffn_up", true},      {"mlp.c_proj", "ffn_down", true},
};

// Splits "<N>.<rest>" (N decimal, no leading zeros, < 100000).
bool SplitLayer(absl::string_view s, std::string* n, absl::string_view* rest) {
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == 0 || i > 5 || i >= s.size() || s[i] != '.' || (s[0] == '0' && i > 1)) return false;
  *n = std::string(s.substr(0, i));
  *rest = s.substr(i + 1);
  return true;
}

// Maps "<module>.<weight|bias>" through `table`.
template <size_t K>
std::optional<HfTensorName> MapLayer(const ModuleMap (&table)[K], const std::string& layer, absl::string_view rest) {
  const size_t dot = rest.rfind('.');
  if (dot == absl::string_view::npos) return std::nullopt;
  const absl::string_view module = rest.substr(0, dot), param = rest.substr(dot + 1);
  if (param != "weight" && param != "bias") return std::nullopt;
  for (const ModuleMap& m : table) {
    if (module == m.hf) {
      return HfTensorName{absl::StrCat("blk.", layer, ".", m.canonical, ".", param), m.transpose && param == "weight"};
    }
  }
  return std::nullopt;
}

std::optional<HfTensorName> MapLlama(absl::string_view s) {
  if (s == "model.embed_tokens.weight") return HfTensorName{"token_embd.weight"};
  if (s == "model.norm.weight") return HfTensorName{"output_norm.weight"};
  if (s == "lm_head.weight") return HfTensorName{"output.weight"};
  std::string n;
  absl::string_view rest;
  if (!absl::ConsumePrefix(&s, "model.layers.") || !SplitLayer(s, &n, &rest)) return std::nullopt;
  std::optional<HfTensorName> m = MapLayer(kLlamaLayer, n, rest);
  if (!m) return m;
  const std::string param = std::string(rest.substr(rest.rfind('.')));  // ".weight" / ".bias"
  const std::string b = absl::StrCat("blk.", n, ".");
  if (absl::StrContains(m->canonical, ".attn_qkv.")) {
    m->parts = {b + "attn_q" + param, b + "attn_k" + param, b + "attn_v" + param};
  } else if (absl::StrContains(m->canonical, ".ffn_gate_up.")) {
    m->parts = {b + "ffn_gate" + param, b + "ffn_up" + param};
  }
  return m;
}

std::optional<HfTensorName> MapGpt2(absl::string_view s) {
  if (s == "lm_head.weight") return HfTensorName{"output.weight"};  // used only when untied
  absl::ConsumePrefix(&s, "transformer.");
  if (s == "wte.weight") return HfTensorName{"token_embd.weight"};
  if (s == "wpe.weight") return HfTensorName{"position_embd.weight"};
  if (s == "ln_f.weight") return HfTensorName{"output_norm.weight"};
  if (s == "ln_f.bias") return HfTensorName{"output_norm.bias"};
  std::string n;
  absl::string_view rest;
  if (!absl::ConsumePrefix(&s, "h.") || !SplitLayer(s, &n, &rest)) return std::nullopt;
  return MapLayer(kGpt2Layer, n, rest);
}

// `s` with `prefix` prepended to its message, same code.
absl::Status Prefixed(const absl::Status& s, absl::string_view prefix) {
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

// Transposes a row-major [rows, cols] matrix of `elem`-byte elements into [cols, rows].
std::vector<uint8_t> Transpose(const uint8_t* src, size_t rows, size_t cols, size_t elem) {
  std::vector<uint8_t> dst(rows * cols * elem);
  constexpr size_t kTile = 32;
  for (size_t r0 = 0; r0 < rows; r0 += kTile) {
    for (size_t c0 = 0; c0 < cols; c0 += kTile) {
      const size_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (size_t r = r0; r < r1; ++r) {
        for (size_t c = c0; c < c1; ++c) {
          std::memcpy(&dst[(c * rows + r) * elem], src + (r * cols + c) * elem, elem);
        }
      }
    }
  }
  return dst;
}

// One tensor to consider: its HF name and the shard that holds it.
struct Source {
  std::string hf_name;
  const SafetensorsFile* shard;
};

// Reads model.safetensors.index.json and opens every shard it names once.
absl::Status OpenSharded(const std::filesystem::path& dir, const std::string& index_path,
                         std::vector<std::unique_ptr<SafetensorsFile>>* shards, std::vector<Source>* sources) {
  auto file = MappedFile::Open(index_path);
  if (!file.ok()) return file.status();
  auto bad = [&](absl::string_view what) { return absl::InvalidArgumentError(absl::StrCat(index_path, ": ", what)); };
  if ((*file)->size() > kMaxIndexBytes) return bad("index file too large");
  const char* text = reinterpret_cast<const char*>((*file)->data());
  json j = json::parse(text, text + (*file)->size(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad("not valid JSON");
  if (!j.is_object()) return bad("not a JSON object");
  auto wm = j.find("weight_map");
  if (wm == j.end() || !wm->is_object()) return bad("missing \"weight_map\" object");
  std::map<std::string, const SafetensorsFile*> opened;
  for (const auto& [name, v] : wm->items()) {
    if (!v.is_string()) return bad(absl::StrCat("weight_map entry \"", name, "\" is not a string"));
    const std::string shard = v.get<std::string>();
    if (shard.empty() || absl::StrContains(shard, "/") || absl::StrContains(shard, "\\") ||
        absl::StrContains(shard, "..")) {
      return bad(absl::StrCat("shard name \"", shard, "\" (for ", name, ") is not a plain file name"));
    }
    auto it = opened.find(shard);
    if (it == opened.end()) {
      auto st = SafetensorsFile::Open((dir / shard).string());
      if (!st.ok()) return Prefixed(st.status(), absl::StrCat(index_path, ": shard \"", shard, "\": "));
      shards->push_back(*std::move(st));
      it = opened.emplace(shard, shards->back().get()).first;
    }
    sources->push_back({name, it->second});
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<HfTensorName> MapHfTensorName(Architecture arch, const std::string& hf_name) {
  return arch == Architecture::kGpt2 ? MapGpt2(hf_name) : MapLlama(hf_name);
}

absl::StatusOr<std::unique_ptr<ModelWeights>> LoadHfModel(const std::string& dir_str) {
  const std::filesystem::path dir(dir_str);
  auto config = ParseHfConfig((dir / "config.json").string());
  if (!config.ok()) return config.status();
  if (absl::Status s = ReadGenerationConfig((dir / "generation_config.json").string(), &*config); !s.ok()) return s;
  if (absl::Status s = config->Validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat((dir / "generation_config.json").string(), ": ", s.message()));
  }
  auto weights = std::make_unique<ModelWeights>();
  weights->config = *std::move(config);

  std::vector<std::unique_ptr<SafetensorsFile>> shards;
  std::vector<Source> sources;
  const std::string single = (dir / "model.safetensors").string();
  const std::string index = (dir / "model.safetensors.index.json").string();
  std::error_code ec;
  std::string source_name;  // names the weights in "missing tensor" messages
  if (std::filesystem::exists(single, ec)) {
    auto st = SafetensorsFile::Open(single);
    if (!st.ok()) return st.status();
    shards.push_back(*std::move(st));
    for (const auto& [name, e] : shards.back()->entries()) sources.push_back({name, shards.back().get()});
    source_name = single;
  } else if (std::filesystem::exists(index, ec)) {
    if (absl::Status s = OpenSharded(dir, index, &shards, &sources); !s.ok()) return s;
    source_name = index;
  } else {
    return absl::NotFoundError(
        absl::StrCat(dir_str, ": neither model.safetensors nor model.safetensors.index.json exists"));
  }

  std::set<std::string> needed;
  for (const ExpectedTensor& e : ExpectedTensors(weights->config)) needed.insert(e.name);
  for (const Source& src : sources) {
    auto mapped = MapHfTensorName(weights->config.arch, src.hf_name);
    if (!mapped) continue;
    const bool fused = !mapped->parts.empty();
    if (fused ? !needed.count(mapped->parts[0]) : !needed.count(mapped->canonical)) continue;  // not read
    const std::string& path = src.shard->path();
    const SafetensorsEntry* entry = src.shard->Find(src.hf_name);
    if (entry == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(index, ": weight_map puts tensor \"", src.hf_name,
                                                     "\" in ", path, ", which does not contain it"));
    }
    auto view = src.shard->View(*entry, mapped->canonical);
    if (!view.ok()) return view.status();
    if (mapped->transpose) {
      if (view->shape.size() != 2) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": tensor \"", src.hf_name, "\" has shape ",
                                                       ShapeString(view->shape), ", expected a matrix"));
      }
      const size_t in = view->shape[0], out = view->shape[1];
      view->data = weights->Own(Transpose(view->data, in, out, DTypeSize(view->dtype)));
      view->shape = {view->shape[1], view->shape[0]};
    }
    std::vector<TensorView> parts;
    if (fused) {
      const ModelConfig& c = weights->config;
      const int64_t q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
      const std::vector<int64_t> rows =
          mapped->parts.size() == 3 ? std::vector<int64_t>{q, kv, kv} : std::vector<int64_t>{c.ffn_dim, c.ffn_dim};
      auto split = SplitRows(*view, mapped->parts, rows);
      if (!split.ok()) return Prefixed(split.status(), absl::StrCat(path, ": tensor \"", src.hf_name, "\": "));
      parts = *std::move(split);
    } else {
      parts.push_back(*std::move(view));
    }
    for (TensorView& part : parts) {
      if (absl::Status s = weights->Add(std::move(part)); !s.ok()) {
        return Prefixed(s, absl::StrCat(path, ": tensor \"", src.hf_name, "\": "));
      }
    }
  }
  for (const auto& shard : shards) weights->KeepAlive(shard->file());
  if (absl::Status s = weights->CheckComplete(source_name); !s.ok()) return s;
  return weights;
}

}  // namespace llmserve
