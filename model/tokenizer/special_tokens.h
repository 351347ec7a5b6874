// Splits input text around special (control) and added (user-defined) tokens, so the
// tokenizer's algorithm only ever sees the text between them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/tokenizer/tokenizer_spec.h"

namespace llmserve {

// A piece of input: plain text (token == -1) or one special token.
struct TextFragment {
  std::string_view text;
  int32_t token = -1;
};

// Immutable; Thread-safe.
class SpecialTokenSplitter {
 public:
  // Indexes the spec's control, unknown and user-defined tokens (non-empty pieces).
  explicit SpecialTokenSplitter(const TokenizerSpec& spec);

  // Splits `text` left to right, taking the longest special token at each position.
  // User-defined tokens are always recognised; control and unknown tokens only when
  // `parse_special` is set. Fragments view `text`.
  std::vector<TextFragment> Split(std::string_view text, bool parse_special) const;

 private:
  struct Entry {
    std::string text;
    int32_t id;
    bool always;  // user-defined: split even without parse_special
  };
  std::vector<Entry> entries_;
  // For each first byte, indices into entries_ ordered longest first.
  std::array<std::vector<uint32_t>, 256> by_first_byte_;
};

}  // namespace llmserve
