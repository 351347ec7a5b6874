// Streaming detokenization: turns ids arriving one at a time into UTF-8 text deltas.
//
//   Push(id) -> bytes of the token (Tokenizer::TokenBytes) appended to a pending buffer;
//               everything that Decode() would already have decided is released, i.e. all
//               but a trailing, still-valid, incomplete UTF-8 sequence (at most 3 bytes);
//               invalid bytes become U+FFFD exactly as in Decode().
//   Finish() -> flushes the rest (an incomplete sequence becomes U+FFFD per byte).
//
// Invariant: Push(ids[0]) + ... + Push(ids[n-1]) + Finish() == tokenizer.Decode(ids, opts),
// and every returned string is valid UTF-8 (so it never ends inside a character).
// SentencePiece's dummy-prefix space (the first byte of the decoded text, when it is a
// space and the tokenizer StripsLeadingSpace()) is dropped, as Decode() does.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "model/tokenizer/tokenizer.h"

namespace llmserve {

// One per stream; not thread-safe. The tokenizer must outlive it.
class IncrementalDecoder {
 public:
  // `options.skip_special`: control tokens contribute no text (as in Decode()).
  explicit IncrementalDecoder(const Tokenizer& tokenizer, DecodeOptions options = {});

  // The stream continues text made of `context` (a prompt): feeds those ids and discards
  // their text, so the continuation keeps its leading space and completes a character the
  // context left unfinished. Call before the first Push.
  void Prime(std::span<const int32_t> context);

  // Adds one id; returns the newly completed text (possibly empty). Out-of-range ids are skipped.
  std::string Push(int32_t id);

  // Returns whatever is still held back and resets the decoder to its initial state.
  std::string Finish();

  // Bytes held back waiting for the rest of a character (0-3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  DecodeOptions options_;
  bool at_start_ = true;  // no token bytes seen yet: the leading-space rule still applies
  std::string pending_;
};

}  // namespace llmserve
