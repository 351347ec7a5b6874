// StopStringMatcher: earliest-match search over the held-back text plus what was pushed,
// then release up to the longest suffix that could still grow into a stop string.
#include "model/stop_matcher.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "model/tokenizer/utf8.h"

namespace llmserve {
namespace {

// True for a UTF-8 continuation byte (10xxxxxx).
bool IsContinuation(char c) { return (static_cast<uint8_t>(c) & 0xC0) == 0x80; }

}  // namespace

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) {
  for (std::string& s : stops) {
    // Empty strings are ignored, but keep the slot so indices match the caller's list.
    max_len_ = std::max(max_len_, s.size());
    stops_.push_back(std::move(s));
  }
}

StopStringMatcher::Result StopStringMatcher::Push(std::string_view text) {
  Result r;
  if (matched_) {
    r.matched = matched_;
    return r;
  }
  held_.append(text.data(), text.size());

  const auto [match_pos, match_idx] = EarliestMatch();
  // Earliest start of a proper prefix of a stop string running to the end of the text:
  // nothing before it can still become (part of) a match.
  const size_t n = held_.size();
  size_t partial = n;
  const size_t first = max_len_ > 0 && n > max_len_ - 1 ? n - (max_len_ - 1) : 0;
  for (size_t i = first; i < n && partial == n; ++i) {
    const size_t len = n - i;
    for (const std::string& s : stops_) {
      if (s.size() > len && s[0] == held_[i] && std::memcmp(s.data(), held_.data() + i, len) == 0) {
        partial = i;
        break;
      }
    }
  }
  bool final_match = match_pos != std::string::npos && match_pos <= partial;
  if (final_match && match_pos == partial) {
    // A stop listed before the matched one may still complete at the same position.
    const size_t len = n - match_pos;
    for (size_t j = 0; j < match_idx && final_match; ++j) {
      const std::string& s = stops_[j];
      if (s.size() > len && std::memcmp(s.data(), held_.data() + match_pos, len) == 0) {
        final_match = false;
      }
    }
  }
  if (final_match) {
    // No stop that would win over this match can still complete.
    r.release = held_.substr(0, match_pos);
    r.matched = match_idx;
    matched_ = match_idx;
    held_.clear();
    return r;
  }
  // Hold from the partial prefix (a match after it, if any, waits: it is re-found on the
  // next push or by Flush). Never release a trailing incomplete character, and start the
  // held suffix at a character boundary (a prefix starting mid-character means invalid
  // UTF-8 came in; back off at most 3 continuation bytes and carry on).
  size_t hold_from = std::min(partial, utf8::CompletePrefixLength(held_));
  for (int back = 0; back < 3 && hold_from > 0 && hold_from < n && IsContinuation(held_[hold_from]);
       ++back) {
    --hold_from;
  }
  r.release = held_.substr(0, hold_from);
  held_.erase(0, hold_from);
  return r;
}

std::pair<size_t, size_t> StopStringMatcher::EarliestMatch() const {
  // Earliest position; at equal positions the first listed stop wins (strict <).
  size_t best_pos = std::string::npos, best_idx = 0;
  for (size_t i = 0; i < stops_.size(); ++i) {
    if (stops_[i].empty()) continue;
    const size_t pos = held_.find(stops_[i]);
    if (pos < best_pos) {
      best_pos = pos;
      best_idx = i;
    }
  }
  return {best_pos, best_idx};
}

std::string StopStringMatcher::Flush() {
  if (matched_) return {};
  std::string out;
  const auto [match_pos, match_idx] = EarliestMatch();
  if (match_pos != std::string::npos) {
    // A match was waiting on an earlier partial one that the stream never completed.
    out = held_.substr(0, match_pos);
    matched_ = match_idx;
    held_.clear();
    return out;
  }
  out.swap(held_);
  return out;
}

}  // namespace llmserve
