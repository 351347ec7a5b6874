#include "constraint/token_vocabulary.h"

#include <algorithm>
#include <bit>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "constraint/regex.h"

namespace llmserve::constraint {

int32_t TokenMask::Count() const {
  int32_t n = 0;
  for (uint64_t w : words_) n += std::popcount(w);
  return n;
}

bool TokenVocabulary::IsEndOfGeneration(int32_t id) const {
  return std::find(eog_.begin(), eog_.end(), id) != eog_.end();
}

TokenTrie TokenTrie::Build(const std::vector<std::string>& bytes, std::vector<int32_t> ids,
                           std::vector<std::pair<uint32_t, int32_t>>* duplicates) {
  // std::string orders by unsigned bytes (char_traits<char> compares like memcmp); equal
  // strings by id, so the first id owns the node and the others are its duplicates.
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return bytes[a] != bytes[b] ? bytes[a] < bytes[b] : a < b;
  });
  TokenTrie t;
  t.nodes.push_back(Node{0, 0});
  t.depths.push_back(0);
  std::vector<uint32_t> path = {0};  // node index per depth
  const std::string* prev = nullptr;
  for (int32_t id : ids) {
    const std::string& s = bytes[id];
    size_t common = 0;
    if (prev) {
      while (common < s.size() && common < prev->size() && s[common] == (*prev)[common]) ++common;
    }
    while (path.size() > common + 1) {
      t.nodes[path.back()].subtree_end = static_cast<uint32_t>(t.nodes.size());
      path.pop_back();
    }
    for (size_t i = common; i < s.size(); ++i) {
      path.push_back(static_cast<uint32_t>(t.nodes.size()));
      t.nodes.push_back(Node{static_cast<uint8_t>(s[i]), 0});
      t.depths.push_back(static_cast<uint16_t>(i + 1));
    }
    t.max_depth = std::max(t.max_depth, s.size());
    Node& last = t.nodes[path.back()];
    if (last.token() < 0) {
      last.token_plus_one_and_byte = (static_cast<uint32_t>(id + 1) << 8) | last.byte();
    } else if (duplicates) {
      duplicates->emplace_back(path.back(), id);
    }
    prev = &s;
  }
  while (!path.empty()) {
    t.nodes[path.back()].subtree_end = static_cast<uint32_t>(t.nodes.size());
    path.pop_back();
  }
  return t;
}

TokenTrie TokenTrie::Without(const TokenMask& drop) const {
  const size_t n = nodes.size();
  // keep[i]: node i has a token not dropped, at itself or below.
  std::vector<uint8_t> keep(n, 0);
  std::vector<uint32_t> parent(n, 0), path = {0};
  for (uint32_t i = 1; i < n; ++i) {
    path.resize(depths[i]);
    parent[i] = path.back();
    path.push_back(i);
  }
  keep[0] = 1;
  for (uint32_t i = static_cast<uint32_t>(n); i-- > 1;) {
    const int32_t tok = nodes[i].token();
    if (tok >= 0 && !drop.Has(tok)) keep[i] = 1;
    if (keep[i]) keep[parent[i]] = 1;
  }
  std::vector<uint32_t> new_index(n + 1, 0);  // kept nodes before old index i
  for (size_t i = 0; i < n; ++i) new_index[i + 1] = new_index[i] + keep[i];
  TokenTrie t;
  t.nodes.reserve(new_index[n]);
  t.depths.reserve(new_index[n]);
  for (size_t i = 0; i < n; ++i) {
    if (!keep[i]) continue;
    Node node = nodes[i];
    const int32_t tok = node.token();
    if (tok >= 0 && drop.Has(tok)) node.token_plus_one_and_byte = node.byte();
    node.subtree_end = new_index[nodes[i].subtree_end];
    t.nodes.push_back(node);
    t.depths.push_back(depths[i]);
    t.max_depth = std::max<size_t>(t.max_depth, depths[i]);
  }
  return t;
}

std::shared_ptr<const ByteSlice> TokenVocabulary::SliceOfBytes(const std::array<uint64_t, 4>& bytes) const {
  {
    absl::MutexLock lock(&byte_slices_mu_);
    auto it = byte_slices_.find(bytes);
    if (it != byte_slices_.end()) return it->second;
    if (byte_slices_.size() >= kMaxByteSlices) return nullptr;
  }
  auto slice = std::make_shared<ByteSlice>();
  slice->tokens.Reset(size());
  auto in_set = [&](uint8_t b) { return (bytes[b >> 6] >> (b & 63)) & 1; };
  for (int32_t id = 0; id < size(); ++id) {
    if (special_[id] || token_bytes_[id].empty()) continue;
    bool all = true;
    for (char ch : token_bytes_[id]) {
      if (!in_set(static_cast<uint8_t>(ch))) { all = false; break; }
    }
    if (all) slice->tokens.Set(id);
  }
  slice->rest = trie_.Without(slice->tokens);
  absl::MutexLock lock(&byte_slices_mu_);
  auto [it, fresh] = byte_slices_.try_emplace(bytes, std::move(slice));
  return it->second;
}

namespace {

// One character from `chars` as a byte DFA (TokenSlice::char_dfa).
std::vector<std::array<uint8_t, 256>> CharDfa(const std::vector<std::pair<uint32_t, uint32_t>>& chars) {
  RegexPool pool;
  RegexId start = pool.CodepointRanges(chars);
  std::vector<RegexId> states = {start};
  std::vector<std::array<uint8_t, 256>> dfa;
  for (size_t i = 0; i < states.size(); ++i) {
    std::array<uint8_t, 256> row;
    for (int b = 0; b < 256; ++b) {
      RegexId d = pool.DerivativeOf(states[i], static_cast<uint8_t>(b));
      if (d == pool.Nothing()) {
        row[b] = TokenSlice::kDead;
      } else if (d == pool.Empty()) {
        row[b] = TokenSlice::kAccept;
      } else {
        auto it = std::find(states.begin(), states.end(), d);
        row[b] = static_cast<uint8_t>(it - states.begin());
        if (it == states.end()) states.push_back(d);
      }
    }
    dfa.push_back(row);
  }
  return dfa;
}

// The token is 1..max_chars whole characters of the slice's set.
bool InSlice(const TokenSlice& s, const std::string& bytes) {
  uint8_t u = 0;
  uint32_t chars = 0;
  for (char c : bytes) {
    u = s.char_dfa[u][static_cast<uint8_t>(c)];
    if (u == TokenSlice::kDead) return false;
    if (u == TokenSlice::kAccept) {
      ++chars;
      u = 0;
    }
  }
  return u == 0 && chars > 0 && (s.max_chars == 0 || chars <= s.max_chars);
}

}  // namespace

absl::StatusOr<std::shared_ptr<const TokenVocabulary>> TokenVocabulary::Create(VocabularyInput in) {
  const size_t n = in.token_bytes.size();
  if (n == 0) return absl::InvalidArgumentError("the vocabulary is empty");
  if (n >= (1u << 24) - 1) return absl::InvalidArgumentError("the vocabulary is too large for the constraint trie");
  if (in.special.size() != n) in.special.resize(n, false);
  for (int32_t id : in.end_of_generation) {
    if (id < 0 || static_cast<size_t>(id) >= n) {
      return absl::InvalidArgumentError(absl::StrCat("end-of-generation token ", id, " is outside the vocabulary"));
    }
  }
  auto v = std::shared_ptr<TokenVocabulary>(new TokenVocabulary());
  v->token_bytes_ = std::move(in.token_bytes);
  v->special_ = std::move(in.special);
  v->eog_ = std::move(in.end_of_generation);

  std::vector<int32_t> ids;
  for (size_t id = 0; id < n; ++id) {
    if (v->token_bytes_[id].size() > UINT16_MAX) return absl::InvalidArgumentError("a token is longer than 65535 bytes");
    if (!v->special_[id] && !v->token_bytes_[id].empty()) ids.push_back(static_cast<int32_t>(id));
  }
  std::vector<std::pair<uint32_t, int32_t>> dups;
  v->trie_ = TokenTrie::Build(v->token_bytes_, ids, &dups);
  for (auto [node, id] : dups) v->duplicates_.emplace_back(v->trie_.nodes[node].token(), id);

  // The JSON string body: any character but the quote, the backslash and controls.
  const std::vector<std::pair<uint32_t, uint32_t>> json_chars = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x10FFFF}};
  for (uint32_t max_chars : {0u, 16u}) {
    TokenSlice s;
    s.name = max_chars ? absl::StrCat("json-string-", max_chars) : "json-string";
    s.chars = json_chars;
    s.max_chars = max_chars;
    s.char_dfa = CharDfa(s.chars);
    s.tokens.Reset(static_cast<int32_t>(n));
    std::vector<int32_t> rest;
    for (int32_t id : ids) {
      if (InSlice(s, v->token_bytes_[id])) s.tokens.Set(id);
      else rest.push_back(id);
    }
    s.rest = TokenTrie::Build(v->token_bytes_, std::move(rest), nullptr);
    v->slices_.push_back(std::move(s));
  }
  return std::shared_ptr<const TokenVocabulary>(std::move(v));
}

}  // namespace llmserve::constraint
