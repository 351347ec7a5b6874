// StopStringMatcher: finds stop strings in streamed text across token boundaries and
// holds back only as much text as could still become a stop string.
//
//   Push("Hel")  -> ""       (with stop "Hello!": "Hel" may start it; held back)
//   Push("lo ")  -> "Hello " (no longer a possible prefix; released)
//   Push("Hel"), Push("lo!x") -> matched "Hello!"; released text ends before it,
//                               everything from the match on is dropped.
//
// Text in and out is UTF-8; released text never ends inside a character (a held-back
// suffix always starts at a character boundary). The earliest match in the text wins;
// among stop strings matching at the same position, the first listed wins.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmserve {

// One per stream; not thread-safe.
class StopStringMatcher {
 public:
  struct Result {
    std::string release;                // text now safe to emit
    std::optional<size_t> matched;      // index into the stop strings if one matched
  };

  // `stops`: non-empty strings (empty ones are ignored).
  explicit StopStringMatcher(std::vector<std::string> stops);

  // Appends `text`; returns what can be released. After a match, further pushes release nothing.
  Result Push(std::string_view text);
  // End of stream: returns the held-back text, cut before a match still waiting on an
  // earlier partial one (matched() then turns true).
  std::string Flush();

  bool matched() const { return matched_.has_value(); }
  // Index into the stop strings of the match, if any (also set by Flush).
  std::optional<size_t> matched_index() const { return matched_; }
  // Number of bytes currently held back.
  size_t held_bytes() const { return held_.size(); }

 private:
  std::vector<std::string> stops_;
  size_t max_len_ = 0;
  std::string held_;
  std::optional<size_t> matched_;

  // (position, index) of the earliest match in held_, position npos if none.
  std::pair<size_t, size_t> EarliestMatch() const;
};

}  // namespace llmserve
