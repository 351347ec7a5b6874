#include "model/tokenizer/bpe_tokenizer.h"

#include <utf8proc.h>

#include <array>
#include <climits>
#include <cstdlib>
#include <queue>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/tokenizer/byte_level.h"
#include "model/tokenizer/pretokenizer.h"
#include "model/tokenizer/special_tokens.h"
#include "model/tokenizer/utf8.h"

namespace llmserve {

namespace {

constexpr int32_t kNoRank = INT32_MAX;
// Words up to this many bytes use the quadratic scan (cache-friendly, no heap); longer
// ones a priority queue.
constexpr size_t kLinearMaxBytes = 128;

bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

// Unicode NFC of valid UTF-8 `s` (utf8proc). On failure returns `s` unchanged.
std::string NfcRun(std::string_view s) {
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()), &out,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  std::string result = n < 0 ? std::string(s) : std::string(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  std::free(out);
  return result;
}

// NFC of valid UTF-8 `s`, normalizing only around non-ASCII text: an ASCII character is a
// starter that never composes with what precedes it, so the text can be cut before every
// ASCII character; each non-ASCII run is normalized together with the character before it
// (which a combining mark may compose with).
std::string Nfc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      out.push_back(s[i++]);
      continue;
    }
    size_t start = i;
    if (i > 0) {  // the previous character is ASCII (non-ASCII runs are consumed whole)
      --start;
      out.pop_back();
    }
    size_t end = i;
    while (end < s.size() && static_cast<unsigned char>(s[end]) >= 0x80) ++end;
    out += NfcRun(s.substr(start, end - start));
    i = end;
  }
  return out;
}

class ByteLevelBpeTokenizer final : public Tokenizer {
 public:
  explicit ByteLevelBpeTokenizer(TokenizerSpec spec) : Tokenizer(std::move(spec)), splitter_(spec_) {}

  absl::Status Init(std::unique_ptr<PreTokenizer> pretok);

  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text, const EncodeOptions& opts) const override;

  std::string TokenBytes(int32_t id) const override {
    if (id < 0 || id >= vocab_size()) return "";
    return token_bytes_[static_cast<size_t>(id)];
  }

 private:
  struct Merge {
    int32_t rank;
    int32_t id;  // the merged token
  };
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  // Rank of merging tokens a and b (kNoRank if none); sets *merged.
  int32_t Lookup(int32_t a, int32_t b, int32_t* merged) const {
    if (a < 0 || b < 0) return kNoRank;
    auto it = merges_.find(PairKey(a, b));
    if (it == merges_.end()) return kNoRank;
    *merged = it->second.id;
    return it->second.rank;
  }

  void EncodeWord(std::string_view word, std::vector<int32_t>* out) const;
  void BpeLinear(std::string_view word, std::vector<int32_t>* out) const;
  void BpeHeap(std::string_view word, std::vector<int32_t>* out) const;

  SpecialTokenSplitter splitter_;
  std::unique_ptr<PreTokenizer> pretok_;
  std::vector<std::string> token_bytes_;                      // id -> decoded bytes
  absl::flat_hash_map<std::string, int32_t> bytes_to_id_;     // raw bytes -> normal token
  std::array<int32_t, 256> byte_id_{};                        // single-byte tokens (-1: none)
  absl::flat_hash_map<uint64_t, Merge> merges_;
};

absl::Status ByteLevelBpeTokenizer::Init(std::unique_ptr<PreTokenizer> pretok) {
  pretok_ = std::move(pretok);
  const size_t n = spec_.tokens.size();
  token_bytes_.resize(n);
  bytes_to_id_.reserve(n);
  for (size_t id = 0; id < n; ++id) {
    const TokenType t = Type(static_cast<int32_t>(id));
    const std::string& piece = spec_.tokens[id];
    if (t == TokenType::kControl || t == TokenType::kUserDefined) {
      token_bytes_[id] = piece;  // added tokens are stored as plain text
      continue;
    }
    if (t == TokenType::kUnused) continue;  // placeholders decode to nothing
    token_bytes_[id] = byte_level::Decode(piece);
    bytes_to_id_.emplace(token_bytes_[id], static_cast<int32_t>(id));  // first occurrence wins
  }
  for (int b = 0; b < 256; ++b) {
    auto it = bytes_to_id_.find(std::string(1, static_cast<char>(b)));
    byte_id_[b] = it == bytes_to_id_.end() ? -1 : it->second;
  }

  merges_.reserve(spec_.merges.size());
  for (size_t rank = 0; rank < spec_.merges.size(); ++rank) {
    const std::string& m = spec_.merges[rank];
    // As llama.cpp: split at the first space after the first character.
    const size_t sp = m.size() < 2 ? std::string::npos : m.find(' ', 1);
    if (sp == std::string::npos || sp + 1 >= m.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(spec_.source, ": merge ", rank, " \"", m, "\" is not of the form \"left right\""));
    }
    const std::string_view left(m.data(), sp);
    const std::string_view right(m.data() + sp + 1, m.size() - sp - 1);
    const int32_t a = PieceToId(left);
    const int32_t b = PieceToId(right);
    if (a < 0 || b < 0) {
      return absl::InvalidArgumentError(absl::StrCat(spec_.source, ": merge ", rank, " \"", m,
                                                     "\" names a piece that is not in the vocabulary"));
    }
    const int32_t merged = PieceToId(std::string(left) + std::string(right));
    if (merged < 0) continue;  // can never produce a token
    merges_.emplace(PairKey(a, b), Merge{static_cast<int32_t>(rank), merged});  // first rank wins
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> ByteLevelBpeTokenizer::Encode(std::string_view text,
                                                                    const EncodeOptions& opts) const {
  if (!utf8::IsValid(text)) return absl::InvalidArgumentError("text to encode is not valid UTF-8");
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 2);
  if (opts.add_bos && spec_.bos_id >= 0) ids.push_back(spec_.bos_id);
  std::vector<std::string_view> words;
  std::string normalized;
  for (const TextFragment& frag : splitter_.Split(text, opts.parse_special)) {
    if (frag.token >= 0) {
      ids.push_back(frag.token);
      continue;
    }
    std::string_view fragment = frag.text;
    if (spec_.nfc && !IsAscii(fragment)) {
      normalized = Nfc(fragment);
      fragment = normalized;
    }
    words.clear();
    pretok_->Split(fragment, &words);
    for (std::string_view w : words) EncodeWord(w, &ids);
  }
  return ids;
}

void ByteLevelBpeTokenizer::EncodeWord(std::string_view word, std::vector<int32_t>* out) const {
  if (word.empty()) return;
  if (spec_.ignore_merges) {
    auto it = bytes_to_id_.find(absl::string_view(word.data(), word.size()));
    if (it != bytes_to_id_.end()) {
      out->push_back(it->second);
      return;
    }
  }
  if (word.size() == 1) {
    const int32_t id = byte_id_[static_cast<uint8_t>(word[0])];
    if (id >= 0) out->push_back(id);
    return;
  }
  if (word.size() <= kLinearMaxBytes) {
    BpeLinear(word, out);
  } else {
    BpeHeap(word, out);
  }
}

// Symbols are the word's bytes, linked in a list; rank[i] is the rank of merging symbol i
// with its successor. Each step scans the live symbols for the lowest rank (the first one
// on ties) and merges that pair; only the ranks around it change.
void ByteLevelBpeTokenizer::BpeLinear(std::string_view word, std::vector<int32_t>* out) const {
  const int n = static_cast<int>(word.size());
  std::array<int32_t, kLinearMaxBytes> id, next, prev, rank, merged;
  for (int i = 0; i < n; ++i) {
    id[i] = byte_id_[static_cast<uint8_t>(word[i])];
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  for (int i = 0; i < n; ++i) rank[i] = next[i] < 0 ? kNoRank : Lookup(id[i], id[i + 1], &merged[i]);
  while (true) {
    int32_t best = kNoRank;
    int bi = -1;
    for (int i = 0; i >= 0; i = next[i]) {
      if (rank[i] < best) {
        best = rank[i];
        bi = i;
      }
    }
    if (bi < 0) break;
    const int j = next[bi];
    id[bi] = merged[bi];
    next[bi] = next[j];
    if (next[j] >= 0) prev[next[j]] = bi;
    rank[bi] = next[bi] < 0 ? kNoRank : Lookup(id[bi], id[next[bi]], &merged[bi]);
    if (prev[bi] >= 0) rank[prev[bi]] = Lookup(id[prev[bi]], id[bi], &merged[prev[bi]]);
  }
  for (int i = 0; i >= 0; i = next[i]) {
    if (id[i] >= 0) out->push_back(id[i]);
  }
}

// The same algorithm with a priority queue of candidate pairs ordered by (rank, left
// position); stale candidates are recognised by the ids they were made for.
void ByteLevelBpeTokenizer::BpeHeap(std::string_view word, std::vector<int32_t>* out) const {
  struct Cand {
    int32_t rank;
    int32_t left;
    int32_t left_id;
    int32_t right_id;
    int32_t merged;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  const int n = static_cast<int>(word.size());
  std::vector<int32_t> id(n), next(n), prev(n);
  for (int i = 0; i < n; ++i) {
    id[i] = byte_id_[static_cast<uint8_t>(word[i])];
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto push = [&](int l) {
    if (l < 0 || next[l] < 0) return;
    int32_t m = -1;
    const int32_t r = Lookup(id[l], id[next[l]], &m);
    if (r != kNoRank) heap.push(Cand{r, l, id[l], id[next[l]], m});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    const int l = c.left;
    const int r = next[l];
    if (id[l] != c.left_id || r < 0 || id[r] != c.right_id) continue;  // stale
    id[l] = c.merged;
    id[r] = -1;
    next[l] = next[r];
    if (next[r] >= 0) prev[next[r]] = l;
    push(prev[l]);
    push(l);
  }
  for (int i = 0; i >= 0; i = next[i]) {
    if (id[i] >= 0) out->push_back(id[i]);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> NewByteLevelBpeTokenizer(TokenizerSpec spec) {
  const std::string& src = spec.source;
  if (spec.kind != TokenizerKind::kByteLevelBpe) {
    return absl::InvalidArgumentError(absl::StrCat(src, ": not a byte-level BPE tokenizer spec"));
  }
  const size_t n = spec.tokens.size();
  if (n == 0) return absl::InvalidArgumentError(absl::StrCat(src, ": the vocabulary is empty"));
  if (n > static_cast<size_t>(INT32_MAX)) return absl::InvalidArgumentError(absl::StrCat(src, ": vocabulary too large"));
  if (!spec.types.empty() && spec.types.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": ", spec.types.size(), " token types for ", n, " tokens"));
  }
  if (!spec.scores.empty() && spec.scores.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(src, ": ", spec.scores.size(), " scores for ", n, " tokens"));
  }
  const std::pair<const char*, int32_t> specials[] = {
      {"bos", spec.bos_id}, {"eos", spec.eos_id}, {"unk", spec.unk_id}, {"pad", spec.pad_id}};
  for (const auto& [name, id] : specials) {
    if (id < -1 || id >= static_cast<int64_t>(n)) {
      return absl::InvalidArgumentError(
          absl::StrCat(src, ": ", name, " id ", id, " is outside the vocabulary (size ", n, ")"));
    }
  }
  auto pretok = PreTokenizer::Create(spec.pretokenizer);
  if (!pretok.ok()) return absl::InvalidArgumentError(absl::StrCat(src, ": ", pretok.status().message()));
  auto tok = std::make_unique<ByteLevelBpeTokenizer>(std::move(spec));
  if (absl::Status s = tok->Init(*std::move(pretok)); !s.ok()) return s;
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

}  // namespace llmserve
