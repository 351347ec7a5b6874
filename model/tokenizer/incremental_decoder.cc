#include "model/tokenizer/incremental_decoder.h"

#include "model/tokenizer/utf8.h"

namespace llmserve {

IncrementalDecoder::IncrementalDecoder(const Tokenizer& tokenizer, DecodeOptions options)
    : tokenizer_(tokenizer), options_(options) {}

void IncrementalDecoder::Prime(std::span<const int32_t> context) {
  for (const int32_t id : context) Push(id);
}

std::string IncrementalDecoder::Push(int32_t id) {
  if (id < 0 || id >= tokenizer_.vocab_size()) return {};
  if (options_.skip_special && tokenizer_.IsControl(id)) return {};
  std::string bytes = tokenizer_.TokenBytes(id);
  if (bytes.empty()) return {};
  if (at_start_) {
    // Decode() drops the first byte of the whole text if it is a space: that byte is the
    // first byte of the first token that has any bytes.
    at_start_ = false;
    if (tokenizer_.StripsLeadingSpace() && bytes[0] == ' ') bytes.erase(0, 1);
  }
  pending_ += bytes;
  // Decode()'s replacement of invalid bytes looks at most one character ahead, so every
  // byte before a trailing incomplete-but-valid sequence is decided the same way now as
  // it would be with the whole text.
  const size_t ready = utf8::CompletePrefixLength(pending_);
  std::string out;
  out.reserve(ready);
  utf8::AppendReplacingInvalid(std::string_view(pending_).substr(0, ready), &out);
  pending_.erase(0, ready);
  return out;
}

std::string IncrementalDecoder::Finish() {
  std::string out;
  utf8::AppendReplacingInvalid(pending_, &out);
  pending_.clear();
  at_start_ = true;
  return out;
}

}  // namespace llmserve
