#include "model/tokenizer/tokenizer.h"

#include "model/tokenizer/utf8.h"

namespace llmserve {

Tokenizer::Tokenizer(TokenizerSpec spec) : spec_(std::move(spec)) {
  piece_to_id_.reserve(spec_.tokens.size());
  for (size_t i = 0; i < spec_.tokens.size(); ++i) {
    // First occurrence wins for duplicated pieces (some vocabularies have them).
    piece_to_id_.emplace(spec_.tokens[i], static_cast<int32_t>(i));
  }
}

std::string_view Tokenizer::Piece(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return spec_.tokens[static_cast<size_t>(id)];
}

int32_t Tokenizer::PieceToId(std::string_view piece) const {
  auto it = piece_to_id_.find(absl::string_view(piece.data(), piece.size()));
  return it == piece_to_id_.end() ? -1 : it->second;
}

TokenType Tokenizer::Type(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return TokenType::kUndefined;
  if (spec_.types.empty()) return TokenType::kNormal;
  return spec_.types[static_cast<size_t>(id)];
}

std::string Tokenizer::Decode(std::span<const int32_t> ids, const DecodeOptions& opts) const {
  std::string bytes;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) continue;
    if (opts.skip_special && IsControl(id)) continue;
    bytes += TokenBytes(id);
  }
  if (StripsLeadingSpace() && !bytes.empty() && bytes[0] == ' ') bytes.erase(0, 1);
  std::string out;
  out.reserve(bytes.size());
  utf8::AppendReplacingInvalid(bytes, &out);
  return out;
}

}  // namespace llmserve
