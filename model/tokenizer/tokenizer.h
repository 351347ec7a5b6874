// Tokenizer: text <-> token ids. One interface for every vocabulary kind.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "model/tokenizer/tokenizer_spec.h"

namespace llmserve {

struct EncodeOptions {
  bool add_bos = false;        // prepend the BOS id (if the vocabulary has one)
  bool parse_special = false;  // recognise control tokens written in the text ("<s>", "<|endoftext|>")
};

struct DecodeOptions {
  bool skip_special = true;    // control tokens (BOS/EOS/...) contribute no text
};

// Immutable after construction; Thread-safe.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Text -> ids. INVALID_ARGUMENT if `text` is not valid UTF-8.
  virtual absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text, const EncodeOptions& opts) const = 0;

  // The bytes token `id` stands for in decoded text, before the leading-space rule:
  // SPM "▁a" -> " a", "<0x0A>" -> "\n"; byte-level "Ġa" -> " a"; a control token -> its text.
  // Empty for an id outside the vocabulary.
  virtual std::string TokenBytes(int32_t id) const = 0;

  // True when decoding drops one leading space of the text (SentencePiece's dummy prefix).
  virtual bool StripsLeadingSpace() const { return false; }

  // Ids -> text. Out-of-range ids are skipped; invalid UTF-8 byte runs become U+FFFD.
  std::string Decode(std::span<const int32_t> ids, const DecodeOptions& opts = {}) const;

  int32_t vocab_size() const { return static_cast<int32_t>(spec_.tokens.size()); }
  int32_t bos_id() const { return spec_.bos_id; }
  int32_t eos_id() const { return spec_.eos_id; }
  bool add_bos_default() const { return spec_.add_bos; }
  const TokenizerSpec& spec() const { return spec_; }

  // The vocabulary piece for `id` ("" if out of range).
  std::string_view Piece(int32_t id) const;
  // Id of an exact vocabulary piece, or -1.
  int32_t PieceToId(std::string_view piece) const;
  TokenType Type(int32_t id) const;
  // Control (special) token: skipped by Decode with skip_special.
  bool IsControl(int32_t id) const { return Type(id) == TokenType::kControl; }

 protected:
  explicit Tokenizer(TokenizerSpec spec);

  TokenizerSpec spec_;
  absl::flat_hash_map<std::string, int32_t> piece_to_id_;
};

// Builds the tokenizer the spec describes. INVALID_ARGUMENT (naming spec.source) for
// inconsistent specs: sizes of tokens/scores/types differ, special ids out of range,
// merges naming unknown pieces, unknown pre-tokenizer.
absl::StatusOr<std::unique_ptr<Tokenizer>> CreateTokenizer(TokenizerSpec spec);

}  // namespace llmserve
