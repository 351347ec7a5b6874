// Helpers shared by the vocabulary-file readers (vocab.json+merges, tokenizer.json):
// reading files, parsing JSON without exceptions, HF tokenizer_config.json, and
// growing a TokenizerSpec's token table safely. Internal to model/tokenizer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/tokenizer/tokenizer_spec.h"
#include "nlohmann/json.hpp"

namespace llmserve::hfjson {

// Largest token table a vocabulary file may ask for.
inline constexpr int64_t kMaxVocabSize = int64_t{1} << 22;

// Whole file. NOT_FOUND if it does not exist, INVALID_ARGUMENT if unreadable.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Parses `text` (from `path`, for messages); INVALID_ARGUMENT if it is not JSON.
absl::StatusOr<nlohmann::json> ParseJson(const std::string& text, const std::string& path);

// An entry of tokenizer.json's added_tokens or tokenizer_config.json's added_tokens_decoder.
struct AddedToken {
  int64_t id = -1;
  std::string content;
  bool special = false;
};

// What llmserve uses from a HF tokenizer_config.json.
struct TokenizerConfig {
  bool present = false;                  // the file exists
  std::optional<bool> add_bos_token;
  std::optional<std::string> bos_token;  // token text; unset when absent or null
  std::optional<std::string> eos_token;
  std::optional<std::string> unk_token;
  std::optional<std::string> pad_token;
  std::vector<AddedToken> added_tokens;  // added_tokens_decoder
  std::string chat_template;             // chat_template.jinja, else chat_template ("" if none)
};

// Reads `dir`/tokenizer_config.json; present=false if there is none. INVALID_ARGUMENT
// (naming the file) if it exists but is malformed. The chat template is `dir`/chat_template.jinja
// when that exists (newer transformers save it there), else the config's chat_template:
// a string, or a list of {name, template} of which "default" is taken.
absl::StatusOr<TokenizerConfig> ReadTokenizerConfig(const std::string& dir);

// The placeholder piece for an id no vocabulary entry names (as llama.cpp's converter).
std::string PlaceholderPiece(int64_t id);

// Grows spec->tokens/types to `size` with kUnused placeholders. INVALID_ARGUMENT (naming
// `source`) if size exceeds kMaxVocabSize or `limit`.
absl::Status GrowTokens(TokenizerSpec* spec, int64_t size, int64_t limit, const std::string& source);

// Puts added tokens into the table (growing it as needed): special -> kControl,
// otherwise kUserDefined. The added content replaces whatever piece the id had.
absl::Status ApplyAddedTokens(TokenizerSpec* spec, const std::vector<AddedToken>& added, int64_t limit,
                              const std::string& source);

// Id of the first token whose piece is `piece`, or -1.
int32_t FindToken(const TokenizerSpec& spec, const std::string& piece);

// Sets bos/eos/unk/pad ids, add_bos and the chat template from the config where it names them.
void ApplyConfigSpecials(const TokenizerConfig& config, TokenizerSpec* spec);

}  // namespace llmserve::hfjson
