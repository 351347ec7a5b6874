#include "constraint/token_vocabulary.h"

#include <algorithm>
#include <bit>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace llmserve::constraint {

int32_t TokenMask::Count() const {
  int32_t n = 0;
  for (uint64_t w : words_) n += std::popcount(w);
  return n;
}

bool TokenVocabulary::IsEndOfGeneration(int32_t id) const {
  return std::find(eog_.begin(), eog_.end(), id) != eog_.end();
}

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

  std::vector<int32_t> order;
  for (size_t id = 0; id < n; ++id) {
    if (!v->special_[id] && !v->token_bytes_[id].empty()) order.push_back(static_cast<int32_t>(id));
    v->max_token_bytes_ = std::max(v->max_token_bytes_, v->token_bytes_[id].size());
  }
  if (v->max_token_bytes_ > UINT16_MAX) return absl::InvalidArgumentError("a token is longer than 65535 bytes");
  // std::string orders by unsigned bytes (char_traits<char> compares like memcmp); equal
  // strings by id, so the first id owns the node and the others are its duplicates.
  auto less = [&](int32_t a, int32_t b) {
    const std::string& x = v->token_bytes_[a];
    const std::string& y = v->token_bytes_[b];
    return x != y ? x < y : a < b;
  };
  std::sort(order.begin(), order.end(), less);

  auto& nodes = v->nodes_;
  auto& depths = v->depths_;
  nodes.push_back(Node{0, 0});
  depths.push_back(0);
  std::vector<uint32_t> path = {0};  // node index per depth
  std::string prev;
  for (int32_t id : order) {
    const std::string& s = v->token_bytes_[id];
    size_t common = 0;
    while (common < s.size() && common < prev.size() && s[common] == prev[common]) ++common;
    while (path.size() > common + 1) {
      nodes[path.back()].subtree_end = static_cast<uint32_t>(nodes.size());
      path.pop_back();
    }
    for (size_t i = common; i < s.size(); ++i) {
      path.push_back(static_cast<uint32_t>(nodes.size()));
      nodes.push_back(Node{static_cast<uint8_t>(s[i]), 0});
      depths.push_back(static_cast<uint16_t>(i + 1));
    }
    Node& last = nodes[path.back()];
    if (last.token() < 0) {
      last.token_plus_one_and_byte = (static_cast<uint32_t>(id + 1) << 8) | last.byte();
    } else {
      v->duplicates_.emplace_back(path.back(), id);
    }
    prev = s;
  }
  while (!path.empty()) {
    nodes[path.back()].subtree_end = static_cast<uint32_t>(nodes.size());
    path.pop_back();
  }
  return std::shared_ptr<const TokenVocabulary>(std::move(v));
}

}  // namespace llmserve::constraint
