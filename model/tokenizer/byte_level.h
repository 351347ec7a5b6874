// GPT-2's byte <-> unicode mapping (bytes_to_unicode in openai/gpt-2 encoder.py): every
// byte is shown as one printable character, so byte-level BPE vocabularies are text.
// Printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') map to themselves; the other 68
// bytes map, in increasing order, to U+0100, U+0101, ... (space 0x20 -> 'Ġ' U+0120).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace llmserve::byte_level {

// The code point byte `b` is shown as.
uint32_t ByteToCodePoint(uint8_t b);

// The byte code point `cp` stands for, or -1 if `cp` is not in the mapping's range.
int CodePointToByte(uint32_t cp);

// Maps raw bytes to their byte-level text ("hello world" -> "helloĠworld").
std::string Encode(std::string_view bytes);

// Maps byte-level text back to raw bytes. Characters outside the mapping (and invalid
// UTF-8) are copied through unchanged; `*exact` (if given) is set false when that happens.
std::string Decode(std::string_view text, bool* exact = nullptr);

}  // namespace llmserve::byte_level
