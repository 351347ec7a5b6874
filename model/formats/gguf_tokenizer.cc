#include "model/formats/gguf_tokenizer.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace llmserve {
namespace {

absl::Status Invalid(const GgufFile& g, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(g.path(), ": ", message));
}

// A key the tokenizer needs is missing: the file is invalid (not "file not found").
absl::Status Required(const absl::Status& s) {
  if (absl::IsNotFound(s)) return absl::InvalidArgumentError(s.message());
  return s;
}

// Maps llama.cpp's tokenizer.ggml.pre to one of our pre-tokenizer regex sets
// (names and regex sharing as in llama.cpp's llama-vocab.cpp).
absl::Status ApplyPretokenizer(const GgufFile& g, const std::string& pre, TokenizerSpec* spec) {
  if (pre.empty() || pre == "default" || pre == "gpt-2" || pre == "gpt2" || pre == "phi-2" || pre == "olmo") {
    spec->pretokenizer = "gpt2";  // olmo: llama.cpp uses the GPT-2 regex
  } else if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3") {
    spec->pretokenizer = "llama3";
    spec->ignore_merges = true;
  } else if (pre == "dbrx" || pre == "smaug-bpe") {
    spec->pretokenizer = "llama3";  // same regex as llama3, without ignore_merges
  } else if (pre == "qwen2" || pre == "deepseek-r1-qwen") {
    spec->pretokenizer = "qwen2";
    spec->nfc = true;
  } else if (pre == "smollm") {
    spec->pretokenizer = "starcoder";  // llama.cpp shares the starcoder regex
  } else if (pre == "deepseek-llm" || pre == "deepseek-coder" || pre == "falcon" || pre == "starcoder" ||
             pre == "mpt" || pre == "refact") {
    spec->pretokenizer = pre;
  } else {
    return absl::UnimplementedError(
        absl::StrCat(g.path(), ": pre-tokenizer '", pre, "' (tokenizer.ggml.pre) is not supported"));
  }
  return absl::OkStatus();
}

// Reads an optional token id: -1 when absent, else it must be a valid index.
absl::Status ReadId(const GgufFile& g, const std::string& key, size_t n_tokens, int32_t* out) {
  auto id = g.GetIntOr(key, -1);
  if (!id.ok()) return id.status();
  if (*id == -1 && g.Find(key) == nullptr) {
    *out = -1;
    return absl::OkStatus();
  }
  if (*id < 0 || static_cast<uint64_t>(*id) >= n_tokens) {
    return Invalid(g, absl::StrCat(key, " ", *id, " is outside the vocabulary of ", n_tokens, " tokens"));
  }
  *out = static_cast<int32_t>(*id);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TokenizerSpec> TokenizerSpecFromGguf(const GgufFile& g) {
  TokenizerSpec spec;
  spec.source = g.path();
  auto model = g.GetString("tokenizer.ggml.model");
  if (!model.ok()) return Required(model.status());
  bool spm;
  if (*model == "llama") {
    spm = true;
    spec.kind = TokenizerKind::kSentencePiece;
  } else if (*model == "gpt2") {
    spm = false;
    spec.kind = TokenizerKind::kByteLevelBpe;
  } else {
    return absl::UnimplementedError(absl::StrCat(g.path(), ": tokenizer model '", *model,
                                                 "' (tokenizer.ggml.model) is not supported (only llama and gpt2)"));
  }

  auto tokens = g.GetStringArray("tokenizer.ggml.tokens");
  if (!tokens.ok()) return Required(tokens.status());
  if (tokens->empty()) return Invalid(g, "tokenizer.ggml.tokens is empty");
  if (tokens->size() > static_cast<size_t>(INT32_MAX)) return Invalid(g, "tokenizer.ggml.tokens is too large");
  const size_t n = tokens->size();
  spec.tokens.assign(tokens->begin(), tokens->end());

  if (g.Find("tokenizer.ggml.token_type") != nullptr) {
    auto types = g.GetIntArray("tokenizer.ggml.token_type");
    if (!types.ok()) return types.status();
    if (types->size() != n) {
      return Invalid(g, absl::StrCat("tokenizer.ggml.token_type has ", types->size(), " entries for ", n, " tokens"));
    }
    spec.types.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const int64_t t = (*types)[i];
      if (t < 0 || t > static_cast<int64_t>(TokenType::kByte)) {
        return Invalid(g, absl::StrCat("tokenizer.ggml.token_type[", i, "] = ", t, " is not a valid token type"));
      }
      spec.types.push_back(static_cast<TokenType>(t));
    }
  }

  if (spm) {
    if (g.Find("tokenizer.ggml.scores") != nullptr) {
      auto scores = g.GetFloatArray("tokenizer.ggml.scores");
      if (!scores.ok()) return scores.status();
      if (scores->size() != n) {
        return Invalid(g, absl::StrCat("tokenizer.ggml.scores has ", scores->size(), " entries for ", n, " tokens"));
      }
      spec.scores = *std::move(scores);
    } else {
      spec.scores.assign(n, 0.0f);  // as llama.cpp does
    }
    auto prefix = g.GetBoolOr("tokenizer.ggml.add_space_prefix", true);
    if (!prefix.ok()) return prefix.status();
    spec.add_space_prefix = *prefix;
    spec.byte_fallback =
        spec.types.empty()
            ? std::find(spec.tokens.begin(), spec.tokens.end(), "<0x00>") != spec.tokens.end()
            : std::find(spec.types.begin(), spec.types.end(), TokenType::kByte) != spec.types.end();
  } else {
    auto merges = g.GetStringArray("tokenizer.ggml.merges");
    if (!merges.ok()) return Required(merges.status());
    spec.merges.assign(merges->begin(), merges->end());
    auto pre = g.GetStringOr("tokenizer.ggml.pre", "");
    if (!pre.ok()) return pre.status();
    if (absl::Status s = ApplyPretokenizer(g, *pre, &spec); !s.ok()) return s;
  }

  for (auto [key, out] : {std::pair{"tokenizer.ggml.bos_token_id", &spec.bos_id},
                          std::pair{"tokenizer.ggml.eos_token_id", &spec.eos_id},
                          std::pair{"tokenizer.ggml.unknown_token_id", &spec.unk_id},
                          std::pair{"tokenizer.ggml.padding_token_id", &spec.pad_id}}) {
    if (absl::Status s = ReadId(g, key, n, out); !s.ok()) return s;
  }
  // llama.cpp's defaults: add BOS for SentencePiece and for Llama 3's BPE, not for GPT-2-style BPE.
  // (ignore_merges is set exactly for the llama3 family.)
  auto add_bos = g.GetBoolOr("tokenizer.ggml.add_bos_token", spm || spec.ignore_merges);
  if (!add_bos.ok()) return add_bos.status();
  spec.add_bos = *add_bos;
  auto chat_template = g.GetStringOr("tokenizer.chat_template", "");
  if (!chat_template.ok()) return chat_template.status();
  spec.chat_template = *std::move(chat_template);
  return spec;
}

}  // namespace llmserve
