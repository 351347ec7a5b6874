// The merge rules of a SentencePiece-style BPE vocabulary, indexed by symbol ids, for
// spm_tokenizer.cc. Two sources of rules:
//   - scores (SentencePiece / GGUF / llama2.c): every split of a piece P into two symbol
//     pieces L+R is a rule L,R -> P with priority score(P);
//   - ranked merges (HF tokenizer.json): "L R" at rank k is a rule L,R -> LR, priority -k.
// Higher priority merges first. It also knows which characters can ever be joined, so the
// tokenizer can cut text into independent segments.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "model/tokenizer/tokenizer.h"

namespace llmserve {

// Immutable after Build(); Thread-safe.
class SpmMergeTable {
 public:
  struct Merge {
    float priority;  // higher first
    int32_t result;  // token id of the merged piece
  };

  // Builds the rules of `vocab` (its spec's scores, or its merges if any). `symbol_ok[id]`
  // says whether token `id` may be a symbol (not a control, unknown or byte token).
  // INVALID_ARGUMENT for merges naming unknown pieces or making a piece not in the vocabulary.
  absl::Status Build(const Tokenizer& vocab, const std::vector<uint8_t>& symbol_ok);

  // Id of a character (or piece) as a symbol: its token id, or for a character that is no
  // piece but occurs inside one (score rules only), a virtual id >= vocab size; else -1.
  int32_t CharId(std::string_view ch) const;

  // The rule for the adjacent symbols (left, right), or nullptr.
  const Merge* Find(int32_t left, int32_t right) const {
    const auto it = merges_.find(Key(left, right));
    return it == merges_.end() ? nullptr : &it->second;
  }

  // Dense index of an ASCII character (its byte) or of "▁" (128), else -1.
  static int32_t Dense(std::string_view ch) {
    if (ch.size() == 1 && static_cast<uint8_t>(ch[0]) < 0x80) return static_cast<uint8_t>(ch[0]);
    return ch == "\xE2\x96\x81" ? 128 : -1;
  }

  // True if some merge result holds character a then character b (ids from CharId, dense
  // indices from Dense) side by side. If false, no merge can ever cross between them.
  bool Joinable(int32_t a_dense, int32_t a, int32_t b_dense, int32_t b) const {
    if (a < 0 || b < 0) return false;
    if (a_dense >= 0 && b_dense >= 0) return joinable_dense_[static_cast<size_t>(a_dense * kDense + b_dense)];
    return joinable_.contains(Key(a, b));
  }

 private:
  static constexpr int32_t kDense = 129;
  static uint64_t Key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  int32_t SymbolId(std::string_view piece) const;
  absl::Status BuildRanked();
  void BuildScored();
  void BuildJoinable();

  const Tokenizer* vocab_ = nullptr;
  const std::vector<uint8_t>* symbol_ok_ = nullptr;
  absl::flat_hash_map<uint64_t, Merge> merges_;
  absl::flat_hash_map<std::string, int32_t> virtual_chars_;
  std::vector<bool> joinable_dense_;       // [a_dense * kDense + b_dense]
  absl::flat_hash_set<uint64_t> joinable_;  // pairs where a character is not dense
};

}  // namespace llmserve
