#include "model/tokenizer/hf_json_util.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace llmserve::hfjson {

using nlohmann::json;

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not a file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot open"));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat(path, ": read error"));
  return ss.str();
}

absl::StatusOr<json> ParseJson(const std::string& text, const std::string& path) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(path, ": not valid JSON"));
  return j;
}

namespace {

// A token name in tokenizer_config.json: a string, {"content": ...}, or null/absent.
std::optional<std::string> TokenName(const json& cfg, const char* key) {
  auto it = cfg.find(key);
  if (it == cfg.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    auto c = it->find("content");
    if (c != it->end() && c->is_string()) return c->get<std::string>();
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<TokenizerConfig> ReadTokenizerConfig(const std::string& dir) {
  TokenizerConfig config;
  const std::string path = (std::filesystem::path(dir) / "tokenizer_config.json").string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return config;
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  auto parsed = ParseJson(*text, path);
  if (!parsed.ok()) return parsed.status();
  const json& cfg = *parsed;
  if (!cfg.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  config.present = true;
  if (auto it = cfg.find("add_bos_token"); it != cfg.end() && it->is_boolean()) config.add_bos_token = it->get<bool>();
  config.bos_token = TokenName(cfg, "bos_token");
  config.eos_token = TokenName(cfg, "eos_token");
  config.unk_token = TokenName(cfg, "unk_token");
  config.pad_token = TokenName(cfg, "pad_token");
  if (auto it = cfg.find("chat_template"); it != cfg.end() && !it->is_null()) {
    if (it->is_string()) {
      config.chat_template = it->get<std::string>();
    } else if (it->is_array()) {  // [{"name": "default", "template": "..."}, {"name": "tool_use", ...}]
      for (const json& named : *it) {
        auto name = named.is_object() ? named.find("name") : named.end();
        auto tmpl = named.is_object() ? named.find("template") : named.end();
        if (name == named.end() || tmpl == named.end() || !name->is_string() || !tmpl->is_string()) {
          return absl::InvalidArgumentError(absl::StrCat(path, ": chat_template list entries need string name and template"));
        }
        if (name->get<std::string>() == "default") config.chat_template = tmpl->get<std::string>();
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(path, ": chat_template is neither a string nor a list"));
    }
  }
  const std::string jinja = (std::filesystem::path(dir) / "chat_template.jinja").string();
  if (std::filesystem::is_regular_file(jinja, ec)) {
    auto tmpl = ReadFile(jinja);
    if (!tmpl.ok()) return tmpl.status();
    config.chat_template = *std::move(tmpl);
  }
  if (auto it = cfg.find("added_tokens_decoder"); it != cfg.end() && !it->is_null()) {
    if (!it->is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": added_tokens_decoder is not an object"));
    for (const auto& [key, value] : it->items()) {
      AddedToken t;
      // Keys are decimal ids; reject anything else rather than guess.
      if (key.empty() || key.size() > 9 || key.find_first_not_of("0123456789") != std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": added_tokens_decoder key \"", key, "\" is not an id"));
      }
      t.id = std::stoll(key);
      auto content = value.is_object() ? value.find("content") : value.end();
      if (!value.is_object() || content == value.end() || !content->is_string()) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": added token ", key, " has no string \"content\""));
      }
      t.content = content->get<std::string>();
      if (auto s = value.find("special"); s != value.end() && s->is_boolean()) t.special = s->get<bool>();
      config.added_tokens.push_back(std::move(t));
    }
  }
  return config;
}

std::string PlaceholderPiece(int64_t id) { return absl::StrCat("[PAD", id, "]"); }

absl::Status GrowTokens(TokenizerSpec* spec, int64_t size, int64_t limit, const std::string& source) {
  if (size <= static_cast<int64_t>(spec->tokens.size())) return absl::OkStatus();
  if (size > kMaxVocabSize || size > limit) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": token id ", size - 1,
                                                   " is implausibly large for a vocabulary of this size"));
  }
  if (spec->types.size() < spec->tokens.size()) spec->types.resize(spec->tokens.size(), TokenType::kNormal);
  const int64_t old = static_cast<int64_t>(spec->tokens.size());
  spec->tokens.resize(static_cast<size_t>(size));
  spec->types.resize(static_cast<size_t>(size), TokenType::kUnused);
  for (int64_t id = old; id < size; ++id) spec->tokens[static_cast<size_t>(id)] = PlaceholderPiece(id);
  return absl::OkStatus();
}

absl::Status ApplyAddedTokens(TokenizerSpec* spec, const std::vector<AddedToken>& added, int64_t limit,
                              const std::string& source) {
  for (const AddedToken& t : added) {
    if (t.id < 0) return absl::InvalidArgumentError(absl::StrCat(source, ": added token has negative id ", t.id));
    if (absl::Status s = GrowTokens(spec, t.id + 1, limit, source); !s.ok()) return s;
    if (spec->types.size() < spec->tokens.size()) spec->types.resize(spec->tokens.size(), TokenType::kNormal);
    spec->tokens[static_cast<size_t>(t.id)] = t.content;
    spec->types[static_cast<size_t>(t.id)] = t.special ? TokenType::kControl : TokenType::kUserDefined;
  }
  return absl::OkStatus();
}

int32_t FindToken(const TokenizerSpec& spec, const std::string& piece) {
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    if (spec.tokens[i] == piece) return static_cast<int32_t>(i);
  }
  return -1;
}

void ApplyConfigSpecials(const TokenizerConfig& config, TokenizerSpec* spec) {
  if (!config.present) return;
  if (config.add_bos_token.has_value()) spec->add_bos = *config.add_bos_token;
  if (config.bos_token) spec->bos_id = FindToken(*spec, *config.bos_token);
  if (config.eos_token) spec->eos_id = FindToken(*spec, *config.eos_token);
  if (config.unk_token) spec->unk_id = FindToken(*spec, *config.unk_token);
  if (config.pad_token) spec->pad_id = FindToken(*spec, *config.pad_token);
  if (!config.chat_template.empty()) spec->chat_template = config.chat_template;
}

}  // namespace llmserve::hfjson
