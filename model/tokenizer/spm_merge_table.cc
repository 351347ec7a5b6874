#include "model/tokenizer/spm_merge_table.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "model/tokenizer/utf8.h"

namespace llmserve {
namespace {

absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Calls f(character) for each UTF-8 character of `piece`; stops at the first malformed lead.
template <typename F>
void ForEachChar(std::string_view piece, F f) {
  for (size_t pos = 0, len = 0; pos < piece.size(); pos += len) {
    len = utf8::SequenceLength(static_cast<uint8_t>(piece[pos]));
    if (len == 0 || pos + len > piece.size()) return;
    f(pos, piece.substr(pos, len));
  }
}

}  // namespace

absl::Status SpmMergeTable::Build(const Tokenizer& vocab, const std::vector<uint8_t>& symbol_ok) {
  vocab_ = &vocab;
  symbol_ok_ = &symbol_ok;
  if (!vocab.spec().merges.empty()) {
    if (absl::Status s = BuildRanked(); !s.ok()) return s;
  } else {
    BuildScored();
  }
  BuildJoinable();
  return absl::OkStatus();
}

int32_t SpmMergeTable::SymbolId(std::string_view piece) const {
  const int32_t id = vocab_->PieceToId(piece);
  return id >= 0 && (*symbol_ok_)[static_cast<size_t>(id)] ? id : -1;
}

int32_t SpmMergeTable::CharId(std::string_view ch) const {
  const int32_t id = SymbolId(ch);
  if (id >= 0 || virtual_chars_.empty()) return id;
  const auto it = virtual_chars_.find(AV(ch));
  return it == virtual_chars_.end() ? -1 : it->second;
}

// HF tokenizer.json style: "left right" lines in rank order.
absl::Status SpmMergeTable::BuildRanked() {
  const TokenizerSpec& spec = vocab_->spec();
  const std::string src = spec.source.empty() ? std::string("<tokenizer spec>") : spec.source;
  merges_.reserve(spec.merges.size());
  for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
    const std::string& m = spec.merges[rank];
    int32_t left = -1, right = -1;
    size_t split = m.find(' ');
    // A piece could in principle contain a space: take the first split naming two pieces.
    for (; split != std::string::npos; split = m.find(' ', split + 1)) {
      left = vocab_->PieceToId(std::string_view(m).substr(0, split));
      right = vocab_->PieceToId(std::string_view(m).substr(split + 1));
      if (left >= 0 && right >= 0) break;
    }
    if (split == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(src, ": merge ", rank, " \"", m, "\" does not name two vocabulary pieces"));
    }
    const std::string joined = m.substr(0, split) + m.substr(split + 1);
    const int32_t result = vocab_->PieceToId(joined);
    if (result < 0) {
      return absl::InvalidArgumentError(absl::StrCat(src, ": merge ", rank, " \"", m, "\" makes \"", joined,
                                                     "\", which is not in the vocabulary"));
    }
    merges_.try_emplace(Key(left, right), Merge{-static_cast<float>(rank), result});
  }
  return absl::OkStatus();
}

// SentencePiece style: any split of a piece into two symbols is a rule scored by the piece.
// SentencePiece and llama.cpp merge by text, so a character that is no piece but occurs in
// one can still merge: it gets a virtual id.
void SpmMergeTable::BuildScored() {
  const TokenizerSpec& spec = vocab_->spec();
  int64_t next_virtual = vocab_->vocab_size();
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    if (!(*symbol_ok_)[i]) continue;
    ForEachChar(spec.tokens[i], [&](size_t, std::string_view ch) {
      if (SymbolId(ch) >= 0 || virtual_chars_.contains(AV(ch))) return;
      if (next_virtual >= std::numeric_limits<int32_t>::max()) return;
      virtual_chars_.emplace(std::string(ch), static_cast<int32_t>(next_virtual++));
    });
  }
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    const auto id = static_cast<int32_t>(i);
    const std::string_view piece = spec.tokens[i];
    if (!(*symbol_ok_)[i] || vocab_->PieceToId(piece) != id) continue;  // first of duplicated pieces only
    ForEachChar(piece, [&](size_t pos, std::string_view) {
      if (pos == 0) return;
      const int32_t left = CharId(piece.substr(0, pos));
      const int32_t right = CharId(piece.substr(pos));
      if (left >= 0 && right >= 0) merges_.try_emplace(Key(left, right), Merge{spec.scores[i], id});
    });
  }
}

void SpmMergeTable::BuildJoinable() {
  joinable_dense_.assign(static_cast<size_t>(kDense * kDense), false);
  absl::flat_hash_set<int32_t> results;
  for (const auto& [pair, merge] : merges_) results.insert(merge.result);
  for (int32_t r : results) {
    int32_t prev = -1, prev_dense = -1;
    ForEachChar(vocab_->Piece(r), [&](size_t, std::string_view ch) {
      // A character without an id never takes part in a merge: nothing to record for it.
      const int32_t id = CharId(ch);
      const int32_t dense = Dense(ch);
      if (prev >= 0 && id >= 0) {
        if (prev_dense >= 0 && dense >= 0) {
          joinable_dense_[static_cast<size_t>(prev_dense * kDense + dense)] = true;
        } else {
          joinable_.insert(Key(prev, id));
        }
      }
      prev = id;
      prev_dense = dense;
    });
  }
}

}  // namespace llmserve
