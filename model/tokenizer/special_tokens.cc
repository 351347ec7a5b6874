#include "model/tokenizer/special_tokens.h"

#include <algorithm>

namespace llmserve {

SpecialTokenSplitter::SpecialTokenSplitter(const TokenizerSpec& spec) {
  for (size_t id = 0; id < spec.types.size() && id < spec.tokens.size(); ++id) {
    const TokenType t = spec.types[id];
    const bool user = t == TokenType::kUserDefined;
    if (!user && t != TokenType::kControl && t != TokenType::kUnknown) continue;
    if (spec.tokens[id].empty()) continue;
    entries_.push_back({spec.tokens[id], static_cast<int32_t>(id), user});
  }
  for (uint32_t i = 0; i < entries_.size(); ++i) {
    by_first_byte_[static_cast<uint8_t>(entries_[i].text[0])].push_back(i);
  }
  for (auto& list : by_first_byte_) {
    std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      return entries_[a].text.size() > entries_[b].text.size();
    });
  }
}

std::vector<TextFragment> SpecialTokenSplitter::Split(std::string_view text, bool parse_special) const {
  std::vector<TextFragment> out;
  if (entries_.empty()) {
    if (!text.empty()) out.push_back({text, -1});
    return out;
  }
  size_t plain_start = 0;
  size_t i = 0;
  while (i < text.size()) {
    const Entry* match = nullptr;
    for (uint32_t idx : by_first_byte_[static_cast<uint8_t>(text[i])]) {
      const Entry& e = entries_[idx];
      if (!parse_special && !e.always) continue;
      if (text.compare(i, e.text.size(), e.text) == 0) {
        match = &e;
        break;
      }
    }
    if (match == nullptr) {
      ++i;
      continue;
    }
    if (i > plain_start) out.push_back({text.substr(plain_start, i - plain_start), -1});
    out.push_back({text.substr(i, match->text.size()), match->id});
    i += match->text.size();
    plain_start = i;
  }
  if (plain_start < text.size()) out.push_back({text.substr(plain_start), -1});
  return out;
}

}  // namespace llmserve
