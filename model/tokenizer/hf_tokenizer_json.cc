#include "model/tokenizer/hf_tokenizer_json.h"

#include <exception>
#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/tokenizer/hf_json_util.h"
#include "model/tokenizer/pretokenizer.h"

namespace llmserve {

namespace {

using nlohmann::json;

constexpr const char* kSpmSpace = "\xE2\x96\x81";  // "▁"

// HF's original spellings of regexes llama.cpp rewrites.
constexpr const char* kHfLlama3 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kHfQwen2 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kHfGpt2 = R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";

std::string Type(const json& node) {
  auto it = node.find("type");
  return it != node.end() && it->is_string() ? it->get<std::string>() : "";
}

// The components of a normalizer / pre-tokenizer / decoder / post-processor, with
// Sequences flattened (their children live under `children_key`).
std::vector<json> Flatten(const json& node, const char* children_key) {
  std::vector<json> out;
  if (!node.is_object()) return out;
  if (Type(node) == "Sequence") {
    auto it = node.find(children_key);
    if (it != node.end() && it->is_array()) {
      for (const json& child : *it) {
        for (json& c : Flatten(child, children_key)) out.push_back(std::move(c));
      }
    }
    return out;
  }
  out.push_back(node);
  return out;
}

bool Bool(const json& node, const char* key, bool dflt) {
  auto it = node.find(key);
  return it != node.end() && it->is_boolean() ? it->get<bool>() : dflt;
}

std::string Str(const json& node, const char* key) {
  auto it = node.find(key);
  return it != node.end() && it->is_string() ? it->get<std::string>() : "";
}

// The pattern of a Split/Replace: {"Regex": r} or {"String": s}; *is_regex says which.
std::string Pattern(const json& node, bool* is_regex) {
  *is_regex = false;
  auto it = node.find("pattern");
  if (it == node.end() || !it->is_object()) return "";
  if (auto r = it->find("Regex"); r != it->end() && r->is_string()) {
    *is_regex = true;
    return r->get<std::string>();
  }
  if (auto s = it->find("String"); s != it->end() && s->is_string()) return s->get<std::string>();
  return "";
}

// Names the byte-level pre-tokenizer a tokenizer.json describes, or an error.
absl::StatusOr<std::string> ByteLevelPreTokenizer(const std::vector<json>& pre, const std::string& path) {
  std::vector<std::string> splits;
  bool digits = false, byte_level = false, use_regex = true;
  for (const json& p : pre) {
    const std::string type = Type(p);
    if (type == "ByteLevel") {
      byte_level = true;
      use_regex = Bool(p, "use_regex", true);
      if (Bool(p, "add_prefix_space", false)) {
        return absl::UnimplementedError(absl::StrCat(path, ": ByteLevel pre-tokenizer with add_prefix_space"));
      }
    } else if (type == "Split") {
      bool is_regex = false;
      std::string pattern = Pattern(p, &is_regex);
      if (!is_regex || Str(p, "behavior") != "Isolated" || Bool(p, "invert", false)) {
        return absl::UnimplementedError(absl::StrCat(
            path, ": Split pre-tokenizer other than an isolated regex (behavior ", Str(p, "behavior"), ")"));
      }
      splits.push_back(std::move(pattern));
    } else if (type == "Digits") {
      if (!Bool(p, "individual_digits", false)) {
        return absl::UnimplementedError(absl::StrCat(path, ": Digits pre-tokenizer without individual_digits"));
      }
      digits = true;
    } else {
      return absl::UnimplementedError(absl::StrCat(path, ": pre-tokenizer type \"", type, "\" is not supported"));
    }
  }
  if (splits.empty()) {
    if (!byte_level || !use_regex) {
      return absl::UnimplementedError(absl::StrCat(path, ": byte-level tokenizer without a pre-tokenizer regex"));
    }
    return std::string(digits ? "starcoder" : "gpt2");
  }
  if (!use_regex && !digits) {
    const std::vector<std::pair<std::string, std::vector<std::string>>> hf_forms = {
        {"llama3", {kHfLlama3}}, {"qwen2", {kHfQwen2}}, {"gpt2", {kHfGpt2}}};
    for (const auto& [name, patterns] : hf_forms) {
      if (splits == patterns) return name;
    }
    for (const std::string& name : PreTokenizerNames()) {
      if (splits == PreTokenizerRegexes(name)) return name;
    }
  }
  return absl::UnimplementedError(absl::StrCat(path, ": unrecognised pre-tokenizer regex sequence [",
                                               absl::StrJoin(splits, ", "), "]",
                                               use_regex ? " followed by ByteLevel's own regex" : ""));
}

// True if `piece` is "<0xXX>" with two upper-case hex digits.
bool IsByteToken(const std::string& piece) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
  return piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && hex(piece[3]) && hex(piece[4]) && piece[5] == '>';
}

absl::Status ReadVocabAndMerges(const json& model, const std::string& path, int64_t limit, TokenizerSpec* spec) {
  auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": model.vocab is not an object"));
  }
  int64_t max_id = -1;
  for (const auto& [piece, id] : vocab->items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": vocab id of \"", piece, "\" is not a non-negative integer"));
    }
    max_id = std::max(max_id, id.get<int64_t>());
  }
  if (absl::Status s = hfjson::GrowTokens(spec, max_id + 1, limit, path); !s.ok()) return s;
  std::vector<bool> seen(spec->tokens.size(), false);
  for (const auto& [piece, id] : vocab->items()) {
    const auto i = static_cast<size_t>(id.get<int64_t>());
    if (seen[i]) return absl::InvalidArgumentError(absl::StrCat(path, ": vocab id ", i, " is given to two pieces"));
    seen[i] = true;
    spec->tokens[i] = piece;
    spec->types[i] = TokenType::kNormal;
  }
  auto merges = model.find("merges");
  if (merges == model.end() || !merges->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": model.merges is not an array"));
  }
  spec->merges.reserve(merges->size());
  for (const json& m : *merges) {
    if (m.is_string()) {
      spec->merges.push_back(m.get<std::string>());
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      const std::string a = m[0].get<std::string>();
      const std::string b = m[1].get<std::string>();
      if (a.empty() || b.empty() || a.find(' ', 1) != std::string::npos) {
        return absl::UnimplementedError(absl::StrCat(path, ": merge [\"", a, "\", \"", b, "\"] cannot be represented"));
      }
      spec->merges.push_back(absl::StrCat(a, " ", b));
    } else {
      return absl::InvalidArgumentError(absl::StrCat(path, ": merge ", spec->merges.size(), " is malformed"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<hfjson::AddedToken>> ReadAddedTokens(const json& j, const std::string& path) {
  std::vector<hfjson::AddedToken> out;
  auto it = j.find("added_tokens");
  if (it == j.end() || it->is_null()) return out;
  if (!it->is_array()) return absl::InvalidArgumentError(absl::StrCat(path, ": added_tokens is not an array"));
  for (const json& t : *it) {
    auto id = t.is_object() ? t.find("id") : t.end();
    auto content = t.is_object() ? t.find("content") : t.end();
    if (id == t.end() || !id->is_number_integer() || content == t.end() || !content->is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": added token without integer id and string content"));
    }
    out.push_back({id->get<int64_t>(), content->get<std::string>(), Bool(t, "special", false)});
  }
  return out;
}

// Post-processor: does the single-sequence template start with a special token? Gives its name.
std::string TemplateBos(const json& j) {
  auto pp = j.find("post_processor");
  if (pp == j.end()) return "";
  for (const json& p : Flatten(*pp, "processors")) {
    if (Type(p) != "TemplateProcessing") continue;
    auto single = p.find("single");
    if (single == p.end() || !single->is_array() || single->empty()) continue;
    const json& first = (*single)[0];
    auto st = first.is_object() ? first.find("SpecialToken") : first.end();
    if (st != first.end() && st->is_object()) return Str(*st, "id");
  }
  return "";
}

absl::StatusOr<TokenizerSpec> Build(const json& j, const std::string& path) {
  if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  auto model_it = j.find("model");
  if (model_it == j.end() || !model_it->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no \"model\" object"));
  }
  const json& model = *model_it;
  std::string type = Type(model);
  auto vocab_it = model.find("vocab");
  if (type.empty()) {
    type = model.contains("merges") ? "BPE" : (vocab_it != model.end() && vocab_it->is_array() ? "Unigram" : "WordPiece");
  }
  if (type != "BPE") {
    return absl::UnimplementedError(
        absl::StrCat(path, ": tokenizer model type \"", type, "\" is not supported (only BPE)"));
  }
  if (!Str(model, "continuing_subword_prefix").empty() || !Str(model, "end_of_word_suffix").empty()) {
    return absl::UnimplementedError(absl::StrCat(path, ": BPE with a subword prefix/suffix is not supported"));
  }
  auto added = ReadAddedTokens(j, path);
  if (!added.ok()) return added.status();

  const std::vector<json> norms = Flatten(j.value("normalizer", json()), "normalizers");
  const std::vector<json> pres = Flatten(j.value("pre_tokenizer", json()), "pretokenizers");
  const std::vector<json> decs = Flatten(j.value("decoder", json()), "decoders");
  bool byte_level = false, metaspace = false;
  for (const json& p : pres) byte_level |= Type(p) == "ByteLevel";
  for (const json& p : pres) metaspace |= Type(p) == "Metaspace";
  for (const json& d : decs) byte_level |= Type(d) == "ByteLevel";

  TokenizerSpec spec;
  spec.source = path;
  const size_t vocab_count = vocab_it == model.end() ? 0 : vocab_it->size();
  const int64_t limit = static_cast<int64_t>(vocab_count + added->size()) * 2 + 65536;
  if (absl::Status s = ReadVocabAndMerges(model, path, limit, &spec); !s.ok()) return s;

  if (byte_level) {
    spec.kind = TokenizerKind::kByteLevelBpe;
    for (const json& n : norms) {
      if (Type(n) != "NFC") {
        return absl::UnimplementedError(absl::StrCat(path, ": normalizer \"", Type(n), "\" with byte-level BPE"));
      }
      spec.nfc = true;
    }
    auto name = ByteLevelPreTokenizer(pres, path);
    if (!name.ok()) return name.status();
    spec.pretokenizer = *name;
    spec.ignore_merges = Bool(model, "ignore_merges", false);
  } else {
    bool prepend = false, replace = false;
    for (const json& n : norms) {
      const std::string t = Type(n);
      bool is_regex = false;
      if (t == "Prepend" && Str(n, "prepend") == kSpmSpace) {
        prepend = true;
      } else if (t == "Replace" && Pattern(n, &is_regex) == " " && !is_regex && Str(n, "content") == kSpmSpace) {
        replace = true;
      } else {
        return absl::UnimplementedError(absl::StrCat(path, ": normalizer \"", t, "\" with SentencePiece-style BPE"));
      }
    }
    bool meta_prefix = false;
    for (const json& p : pres) {
      if (Type(p) != "Metaspace") {
        return absl::UnimplementedError(absl::StrCat(path, ": pre-tokenizer \"", Type(p), "\" with SentencePiece-style BPE"));
      }
      const std::string scheme = Str(p, "prepend_scheme");
      meta_prefix = scheme.empty() ? Bool(p, "add_prefix_space", true) : scheme != "never";
    }
    if (!prepend && !replace && !metaspace && !Bool(model, "byte_fallback", false)) {
      return absl::UnimplementedError(
          absl::StrCat(path, ": BPE that is neither byte-level nor SentencePiece-style is not supported"));
    }
    spec.kind = TokenizerKind::kSentencePiece;
    spec.add_space_prefix = prepend || meta_prefix;
    spec.byte_fallback = Bool(model, "byte_fallback", false);
    for (size_t i = 0; i < spec.tokens.size(); ++i) {
      if (spec.types[i] == TokenType::kNormal && IsByteToken(spec.tokens[i])) spec.types[i] = TokenType::kByte;
    }
  }

  if (absl::Status s = hfjson::ApplyAddedTokens(&spec, *added, limit, path); !s.ok()) return s;
  if (const std::string unk = Str(model, "unk_token"); !unk.empty()) spec.unk_id = hfjson::FindToken(spec, unk);

  // BOS/EOS: tokenizer_config.json, else the post-processor template, else common names.
  if (const std::string bos = TemplateBos(j); !bos.empty()) {
    spec.bos_id = hfjson::FindToken(spec, bos);
    spec.add_bos = spec.bos_id >= 0;
  }
  const std::string dir = std::filesystem::path(path).parent_path().string();
  auto config = hfjson::ReadTokenizerConfig(dir.empty() ? "." : dir);
  if (!config.ok()) return config.status();
  hfjson::ApplyConfigSpecials(*config, &spec);
  for (const char* name : {"<s>", "<|begin_of_text|>", "<|endoftext|>"}) {
    if (spec.bos_id < 0) spec.bos_id = hfjson::FindToken(spec, name);
  }
  for (const char* name : {"</s>", "<|end_of_text|>", "<|endoftext|>"}) {
    if (spec.eos_id < 0) spec.eos_id = hfjson::FindToken(spec, name);
  }
  for (int32_t id : {spec.bos_id, spec.eos_id}) {
    if (id >= 0 && spec.types[static_cast<size_t>(id)] == TokenType::kNormal) {
      spec.types[static_cast<size_t>(id)] = TokenType::kControl;
    }
  }
  if (spec.unk_id >= 0 && spec.types[static_cast<size_t>(spec.unk_id)] != TokenType::kUnused) {
    spec.types[static_cast<size_t>(spec.unk_id)] = TokenType::kUnknown;
  }
  return spec;
}

}  // namespace

absl::StatusOr<TokenizerSpec> TokenizerSpecFromHfJson(const std::string& tokenizer_json_path) {
  auto text = hfjson::ReadFile(tokenizer_json_path);
  if (!text.ok()) return text.status();
  auto parsed = hfjson::ParseJson(*text, tokenizer_json_path);
  if (!parsed.ok()) return parsed.status();
  try {
    return Build(*parsed, tokenizer_json_path);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(tokenizer_json_path, ": malformed tokenizer.json: ", e.what()));
  }
}

}  // namespace llmserve
