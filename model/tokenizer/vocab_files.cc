#include "model/tokenizer/vocab_files.h"

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/tokenizer/hf_json_util.h"
#include "model/tokenizer/pretokenizer.h"

namespace llmserve {

namespace {

using nlohmann::json;

constexpr int64_t kLlama3BaseVocab = 128000;

// Meta's Llama 3.1 / 3.2 special tokens, ids 128000..128255.
std::vector<hfjson::AddedToken> Llama3SpecialTokens() {
  static const char* const kNamed[] = {
      "<|begin_of_text|>",           "<|end_of_text|>",    "<|reserved_special_token_0|>",
      "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>",
      "<|start_header_id|>",         "<|end_header_id|>",  "<|eom_id|>",
      "<|eot_id|>",                  "<|python_tag|>",
  };
  std::vector<hfjson::AddedToken> out;
  for (int i = 0; i < 256; ++i) {
    hfjson::AddedToken t;
    t.id = kLlama3BaseVocab + i;
    t.content = i < 11 ? std::string(kNamed[i]) : absl::StrCat("<|reserved_special_token_", i - 8, "|>");
    t.special = true;
    out.push_back(std::move(t));
  }
  return out;
}

// Reads a JSON object piece -> id into spec->tokens (placeholders fill unnamed ids).
absl::Status ReadVocabJson(const std::string& path, TokenizerSpec* spec, int64_t* limit) {
  auto text = hfjson::ReadFile(path);
  if (!text.ok()) return text.status();
  auto parsed = hfjson::ParseJson(*text, path);
  if (!parsed.ok()) return parsed.status();
  const json& vocab = *parsed;
  if (!vocab.is_object() || vocab.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected a non-empty JSON object of piece -> id"));
  }
  int64_t max_id = -1;
  for (const auto& [piece, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": id of \"", piece, "\" is not a non-negative integer"));
    }
    max_id = std::max(max_id, id.get<int64_t>());
  }
  *limit = static_cast<int64_t>(vocab.size()) * 2 + 65536;
  if (absl::Status s = hfjson::GrowTokens(spec, max_id + 1, *limit, path); !s.ok()) return s;
  std::vector<bool> seen(spec->tokens.size(), false);
  for (const auto& [piece, id] : vocab.items()) {
    const auto i = static_cast<size_t>(id.get<int64_t>());
    if (seen[i]) return absl::InvalidArgumentError(absl::StrCat(path, ": id ", i, " is given to two pieces"));
    seen[i] = true;
    spec->tokens[i] = piece;
    spec->types[i] = TokenType::kNormal;
  }
  return absl::OkStatus();
}

absl::Status ReadMergesFile(const std::string& path, TokenizerSpec* spec) {
  auto text = hfjson::ReadFile(path);
  if (!text.ok()) return text.status();
  std::string_view rest = *text;
  size_t line_no = 0;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.substr(0, 8) == "#version") continue;
    const size_t sp = line.find(' ', 1);
    if (line.size() < 3 || sp == std::string_view::npos || sp + 1 >= line.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": line ", line_no, " is not a merge \"left right\": \"", std::string(line), "\""));
    }
    spec->merges.emplace_back(line);
  }
  if (spec->merges.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no merges"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TokenizerSpec> TokenizerSpecFromVocabMerges(const std::string& vocab_path,
                                                           const std::string& merges_path,
                                                           const std::string& pretokenizer) {
  const std::string name = CanonicalPreTokenizerName(pretokenizer);
  if (name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(vocab_path, ": unknown pre-tokenizer \"", pretokenizer,
                                                   "\" (known: gpt2, llama3, qwen2, deepseek-llm, deepseek-coder, "
                                                   "falcon, starcoder, mpt, refact, default)"));
  }
  TokenizerSpec spec;
  spec.kind = TokenizerKind::kByteLevelBpe;
  spec.source = vocab_path;
  spec.pretokenizer = name;
  spec.nfc = name == "qwen2";
  spec.ignore_merges = name == "llama3";
  int64_t limit = 0;
  if (absl::Status s = ReadVocabJson(vocab_path, &spec, &limit); !s.ok()) return s;
  if (absl::Status s = ReadMergesFile(merges_path, &spec); !s.ok()) return s;

  if (name == "llama3" && static_cast<int64_t>(spec.tokens.size()) == kLlama3BaseVocab) {
    if (absl::Status s = hfjson::ApplyAddedTokens(&spec, Llama3SpecialTokens(), limit, vocab_path); !s.ok()) return s;
    spec.bos_id = static_cast<int32_t>(kLlama3BaseVocab);
    spec.eos_id = static_cast<int32_t>(kLlama3BaseVocab + 1);
    spec.add_bos = true;
  }

  const std::string dir = std::filesystem::path(vocab_path).parent_path().string();
  auto config = hfjson::ReadTokenizerConfig(dir.empty() ? "." : dir);
  if (!config.ok()) return config.status();
  if (absl::Status s = hfjson::ApplyAddedTokens(&spec, config->added_tokens, limit, vocab_path); !s.ok()) return s;

  // GPT-2 convention: <|endoftext|> separates documents and is both BOS and EOS.
  if (const int32_t eot = hfjson::FindToken(spec, "<|endoftext|>"); eot >= 0 && spec.bos_id < 0) {
    spec.types[static_cast<size_t>(eot)] = TokenType::kControl;
    spec.bos_id = eot;
    spec.eos_id = eot;
  }
  hfjson::ApplyConfigSpecials(*config, &spec);
  return spec;
}

}  // namespace llmserve
