#include "model/formats/hf_generation_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "absl/strings/str_cat.h"
#include "model/mapped_file.h"
#include "model/sampling_params.h"
#include "nlohmann/json.hpp"

namespace llmserve {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxGenerationConfigBytes = size_t{1} << 20;

absl::StatusOr<std::vector<int32_t>> IdsOf(const json& v, const std::string& where) {
  std::vector<int32_t> ids;
  if (v.is_null()) return ids;
  auto one = [&](const json& x) -> absl::Status {
    if (!x.is_number_integer()) {
      return absl::InvalidArgumentError(absl::StrCat(where, " must be an integer or a list of integers, got ",
                                                     x.type_name()));
    }
    if (x.is_number_unsigned() ? x.get<uint64_t>() > uint64_t{std::numeric_limits<int32_t>::max()}
                               : (x.get<int64_t>() < 0 || x.get<int64_t>() > std::numeric_limits<int32_t>::max())) {
      return absl::InvalidArgumentError(absl::StrCat(where, " holds an id out of range: ", x.dump()));
    }
    ids.push_back(static_cast<int32_t>(x.get<int64_t>()));
    return absl::OkStatus();
  };
  if (v.is_array()) {
    for (const json& x : v) {
      if (absl::Status s = one(x); !s.ok()) return s;
    }
  } else if (absl::Status s = one(v); !s.ok()) {
    return s;
  }
  return ids;
}

// The finite number at `key` of `j` into `out` (absent or null: left unset).
absl::Status ReadFloat(const json& j, const char* key, const std::string& path, std::optional<float>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_number()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": key \"", key, "\" must be a number, got ", it->type_name()));
  }
  const double x = it->get<double>();
  if (!std::isfinite(x) || std::fabs(x) > 1e6) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": key \"", key, "\" is out of range"));
  }
  *out = static_cast<float>(x);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> TokenIdList(const json& value, const std::string& where) {
  return IdsOf(value, where);
}

void AppendUniqueIds(const std::vector<int32_t>& more, std::vector<int32_t>* ids) {
  for (int32_t id : more) {
    if (std::find(ids->begin(), ids->end(), id) == ids->end()) ids->push_back(id);
  }
}

absl::Status ReadGenerationConfig(const std::string& path, ModelConfig* config) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return absl::OkStatus();
  auto file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  const MappedFile& f = **file;
  if (f.size() > kMaxGenerationConfigBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": file too large"));
  }
  const char* text = reinterpret_cast<const char*>(f.data());
  json j = f.size() == 0 ? json() : json::parse(text, text + f.size(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));

  if (auto it = j.find("eos_token_id"); it != j.end()) {
    absl::StatusOr<std::vector<int32_t>> ids = IdsOf(*it, absl::StrCat(path, ": key \"eos_token_id\""));
    if (!ids.ok()) return ids.status();
    AppendUniqueIds(*ids, &config->eos_ids);
  }
  GenerationDefaults& g = config->generation;
  for (auto [key, out] : {std::pair{"temperature", &g.temperature}, std::pair{"top_p", &g.top_p},
                          std::pair{"min_p", &g.min_p}, std::pair{"repetition_penalty", &g.repetition_penalty}}) {
    if (absl::Status s = ReadFloat(j, key, path, out); !s.ok()) return s;
  }
  if (auto it = j.find("top_k"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": key \"top_k\" must be a non-negative integer"));
    }
    g.top_k = static_cast<int32_t>(it->get<int64_t>());
  }
  // The defaults must be valid requests' values (the message names the field).
  if (absl::Status s = DefaultSamplingParams(g).Validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace llmserve
