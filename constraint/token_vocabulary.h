// The vocabulary as the matcher sees it: each token's bytes, laid out as a trie.
// Built once per tokenizer (at model load) and shared by every compiled constraint.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace llmserve::constraint {

// A bitset over token ids.
class TokenMask {
 public:
  TokenMask() = default;
  explicit TokenMask(int32_t vocab_size) { Reset(vocab_size); }
  void Reset(int32_t vocab_size) { size_ = vocab_size; words_.assign((vocab_size + 63) / 64, 0); }
  void Clear() { std::fill(words_.begin(), words_.end(), 0); }
  void Set(int32_t id) { words_[id >> 6] |= uint64_t{1} << (id & 63); }
  bool Has(int32_t id) const { return id >= 0 && id < size_ && ((words_[id >> 6] >> (id & 63)) & 1); }
  void Or(const TokenMask& o) { for (size_t i = 0; i < words_.size(); ++i) words_[i] |= o.words_[i]; }
  int32_t Count() const;
  int32_t size() const { return size_; }
  std::vector<uint64_t>& words() { return words_; }
  const std::vector<uint64_t>& words() const { return words_; }

 private:
  int32_t size_ = 0;
  std::vector<uint64_t> words_;
};

struct VocabularyInput {
  std::vector<std::string> token_bytes;  // id -> bytes (what the token adds to the text)
  std::vector<bool> special;             // id -> control token: never allowed by a constraint
  std::vector<int32_t> end_of_generation;  // ids that end generation (allowed where it accepts)
};

// A depth-first token trie laid flat: skipping a dead subtree is one jump.
struct TokenTrie {
  // One node: the byte that leads to it, its token (or -1), and where its subtree ends.
  struct Node {
    uint32_t token_plus_one_and_byte;  // (token + 1) << 8 | byte
    uint32_t subtree_end;               // index one past this node's last descendant
    uint8_t byte() const { return token_plus_one_and_byte & 0xFF; }
    int32_t token() const { return static_cast<int32_t>(token_plus_one_and_byte >> 8) - 1; }
  };
  std::vector<Node> nodes;        // nodes[0] is the root (no byte)
  std::vector<uint16_t> depths;   // node -> depth (root 0)
  size_t max_depth = 0;

  // Builds the trie of `ids` (bytes non-empty). Tokens with the same bytes share the
  // first one's node; the others are duplicates, appended to `duplicates` as (node, id).
  static TokenTrie Build(const std::vector<std::string>& bytes, std::vector<int32_t> ids,
                         std::vector<std::pair<uint32_t, int32_t>>* duplicates);
  // This trie without the tokens in `drop` (and the nodes left with no token below).
  TokenTrie Without(const TokenMask& drop) const;
};

// The tokens made only of bytes from one set, and the trie of all the others: where a
// lexer state loops on exactly those bytes, every such token keeps it where it is.
struct ByteSlice {
  TokenMask tokens;
  TokenTrie rest;
};

// A slice: the tokens made only of whole characters from one set, at most max_chars of
// them (0: any number). Where the lexer provably allows every string of such characters
// (up to the bound) without ending a lexeme, the mask is the slice's precomputed tokens
// plus a walk of the other tokens' (much smaller) trie. The JSON string body is the slice
// that matters: inside a free string almost every token is allowed.
struct TokenSlice {
  std::string name;
  std::vector<std::pair<uint32_t, uint32_t>> chars;  // code point ranges
  uint32_t max_chars = 0;
  TokenMask tokens;   // the slice's tokens
  TokenTrie rest;     // every other non-special token
  // One character of the set as a byte DFA: state 0 starts a character, kAccept ends one.
  static constexpr uint8_t kDead = 0xFF, kAccept = 0xFE;
  std::vector<std::array<uint8_t, 256>> char_dfa;
};

// Immutable; Thread-safe.
class TokenVocabulary {
 public:
  static absl::StatusOr<std::shared_ptr<const TokenVocabulary>> Create(VocabularyInput input);

  int32_t size() const { return static_cast<int32_t>(token_bytes_.size()); }
  const std::string& bytes(int32_t id) const { return token_bytes_[id]; }
  bool special(int32_t id) const { return special_[id]; }
  const std::vector<int32_t>& end_of_generation() const { return eog_; }
  bool IsEndOfGeneration(int32_t id) const;

  // The trie of the non-special, non-empty tokens.
  const TokenTrie& trie() const { return trie_; }
  // Tokens with the same bytes as another token share its node; the extra ids are here,
  // as (primary token, extra id).
  const std::vector<std::pair<int32_t, int32_t>>& duplicate_tokens() const { return duplicates_; }
  const std::vector<TokenSlice>& slices() const { return slices_; }
  // The ByteSlice of a byte set (256 bits), built on first use and kept for every
  // constraint on this vocabulary; null once kMaxByteSlices sets are kept. Thread-safe.
  static constexpr size_t kMaxByteSlices = 256;
  std::shared_ptr<const ByteSlice> SliceOfBytes(const std::array<uint64_t, 4>& bytes) const;

 private:
  std::vector<std::string> token_bytes_;
  std::vector<bool> special_;
  std::vector<int32_t> eog_;
  TokenTrie trie_;
  std::vector<std::pair<int32_t, int32_t>> duplicates_;
  std::vector<TokenSlice> slices_;
  mutable absl::Mutex byte_slices_mu_;
  mutable absl::flat_hash_map<std::array<uint64_t, 4>, std::shared_ptr<const ByteSlice>> byte_slices_
      ABSL_GUARDED_BY(byte_slices_mu_);
};

}  // namespace llmserve::constraint
