// Small UTF-8 helpers shared by the tokenizers and the incremental decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace llmserve::utf8 {

// Length of the sequence a lead byte announces (1-4), or 0 for a continuation or invalid byte.
inline size_t SequenceLength(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// Length of the valid UTF-8 sequence at the start of `s` (1-4), or 0 if it is invalid
// or truncated. Rejects overlongs, surrogates and code points above U+10FFFF.
size_t ValidSequenceAt(std::string_view s);

// True if the whole string is valid UTF-8.
bool IsValid(std::string_view s);

// Decodes the code point of a valid sequence of length `len` at `s`.
uint32_t DecodeAt(std::string_view s, size_t len);

// Appends the UTF-8 encoding of `cp` (must be a valid scalar value).
void Append(uint32_t cp, std::string* out);

// Copies `bytes` to `out`, replacing every invalid or truncated sequence with U+FFFD.
void AppendReplacingInvalid(std::string_view bytes, std::string* out);

// Number of leading bytes of `bytes` that can be released now without ever splitting a
// character: everything except a trailing incomplete-but-still-valid prefix (at most 3 bytes).
size_t CompletePrefixLength(std::string_view bytes);

}  // namespace llmserve::utf8
