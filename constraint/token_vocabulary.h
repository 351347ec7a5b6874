// The vocabulary as the matcher sees it: each token's bytes, laid out as a trie.
// Built once per tokenizer (at model load) and shared by every compiled constraint.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

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

// Immutable; Thread-safe.
class TokenVocabulary {
 public:
  // One trie node: the byte that leads to it, its token (or -1), and where its subtree ends
  // in the depth-first node array (so a dead subtree is skipped in one step).
  struct Node {
    uint32_t token_plus_one_and_byte;  // (token + 1) << 8 | byte
    uint32_t subtree_end;               // index one past this node's last descendant
    uint8_t byte() const { return token_plus_one_and_byte & 0xFF; }
    int32_t token() const { return static_cast<int32_t>(token_plus_one_and_byte >> 8) - 1; }
  };

  static absl::StatusOr<std::shared_ptr<const TokenVocabulary>> Create(VocabularyInput input);

  int32_t size() const { return static_cast<int32_t>(token_bytes_.size()); }
  const std::string& bytes(int32_t id) const { return token_bytes_[id]; }
  bool special(int32_t id) const { return special_[id]; }
  const std::vector<int32_t>& end_of_generation() const { return eog_; }
  bool IsEndOfGeneration(int32_t id) const;

  // Depth-first trie of the non-special, non-empty tokens. nodes()[0] is the root (no byte).
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<uint16_t>& depths() const { return depths_; }  // node -> depth (root 0)
  // Tokens with the same bytes as another token share its node; the extra ids are here.
  const std::vector<std::pair<uint32_t, int32_t>>& duplicate_tokens() const { return duplicates_; }
  size_t max_token_bytes() const { return max_token_bytes_; }

 private:
  std::vector<std::string> token_bytes_;
  std::vector<bool> special_;
  std::vector<int32_t> eog_;
  std::vector<Node> nodes_;
  std::vector<uint16_t> depths_;
  std::vector<std::pair<uint32_t, int32_t>> duplicates_;  // (node, extra token id), by node
  size_t max_token_bytes_ = 0;
};

}  // namespace llmserve::constraint
