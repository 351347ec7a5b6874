#include "model/tokenizer/llama2c_tokenizer.h"

#include <cmath>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/byte_reader.h"
#include "model/mapped_file.h"

namespace llmserve {
namespace {

constexpr int32_t kUnkId = 0;  // run.c: "the first 3 vocab elements are <unk>, <s>, </s>"
constexpr int32_t kBosId = 1;
constexpr int32_t kEosId = 2;

bool IsByteToken(std::string_view piece) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'); };
  return piece.size() == 6 && piece.substr(0, 3) == "<0x" && hex(piece[3]) && hex(piece[4]) && piece[5] == '>';
}

// " " -> "▁" (undoes tokenizer.py's `t.replace('▁', ' ')`; SentencePiece pieces never hold a space).
std::string EscapeSpaces(std::string_view piece) {
  std::string out;
  out.reserve(piece.size());
  for (char c : piece) {
    if (c == ' ') {
      out += "\xE2\x96\x81";
    } else {
      out += c;
    }
  }
  return out;
}

// "\n<s>\n" -> "<s>": the export's decoration of BOS/EOS.
std::string StripNewlines(std::string_view piece) {
  if (piece.size() >= 2 && piece.front() == '\n' && piece.back() == '\n') return std::string(piece.substr(1, piece.size() - 2));
  return std::string(piece);
}

}  // namespace

absl::StatusOr<TokenizerSpec> TokenizerSpecFromLlama2cBytes(std::span<const uint8_t> bytes,
                                                             const std::string& source, int64_t vocab_size) {
  ByteReader r(bytes, source);
  int32_t max_len = 0;
  if (absl::Status s = r.Read(&max_len, "max_token_length"); !s.ok()) return s;
  if (max_len <= 0) return r.Error(absl::StrCat("max_token_length is ", max_len, ", must be positive"));

  TokenizerSpec spec;
  spec.kind = TokenizerKind::kSentencePiece;
  spec.source = source;
  // Every record takes at least 8 bytes, so this reservation is bounded by the file size.
  spec.tokens.reserve(r.remaining() / 8);
  spec.scores.reserve(r.remaining() / 8);
  while (r.remaining() > 0 && (vocab_size <= 0 || static_cast<int64_t>(spec.tokens.size()) < vocab_size)) {
    const size_t index = spec.tokens.size();
    const std::string what = absl::StrCat("token ", index);
    float score = 0;
    int32_t len = 0;
    if (absl::Status s = r.Read(&score, absl::StrCat(what, " score")); !s.ok()) return s;
    if (std::isnan(score)) return r.Error(absl::StrCat(what, ": score is NaN"));
    if (absl::Status s = r.Read(&len, absl::StrCat(what, " length")); !s.ok()) return s;
    if (len < 0) return r.Error(absl::StrCat(what, ": negative length ", len));
    if (len > max_len) {
      return r.Error(absl::StrCat(what, ": length ", len, " exceeds max_token_length ", max_len));
    }
    std::string_view piece;
    if (absl::Status s = r.ReadBytes(static_cast<uint64_t>(len), &piece, absl::StrCat(what, " text")); !s.ok()) {
      return s;
    }
    spec.tokens.emplace_back(piece);
    spec.scores.push_back(score);
  }
  if (vocab_size > 0 && static_cast<int64_t>(spec.tokens.size()) < vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": holds ", spec.tokens.size(), " tokens, the model has ", vocab_size,
        ": the file is truncated or belongs to another model"));
  }
  if (vocab_size > 0 && r.remaining() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": holds more than the model's ", vocab_size, " tokens (", r.remaining(),
        " bytes follow them): the file belongs to another model"));
  }
  if (spec.tokens.size() < 3) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": only ", spec.tokens.size(),
                                                   " tokens; a llama2.c vocabulary starts with <unk>, <s>, </s>"));
  }
  if (spec.tokens.size() > static_cast<size_t>(INT32_MAX)) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": too many tokens"));
  }

  spec.types.assign(spec.tokens.size(), TokenType::kNormal);
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    std::string& piece = spec.tokens[i];
    if (i == kUnkId) {
      spec.types[i] = TokenType::kUnknown;
    } else if (i == kBosId || i == kEosId) {
      spec.types[i] = TokenType::kControl;
      piece = StripNewlines(piece);
    } else if (IsByteToken(piece)) {
      spec.types[i] = TokenType::kByte;
    } else {
      piece = EscapeSpaces(piece);
    }
  }
  spec.unk_id = kUnkId;
  spec.bos_id = kBosId;
  spec.eos_id = kEosId;
  spec.add_bos = true;            // run.c's generate() encodes with bos=1
  spec.add_space_prefix = true;   // run.c: dummy " " prefix when the text is non-empty
  spec.byte_fallback = true;      // run.c: unknown code points become byte tokens
  return spec;
}

absl::StatusOr<TokenizerSpec> TokenizerSpecFromLlama2cBin(const std::string& path, int64_t vocab_size) {
  auto file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  return TokenizerSpecFromLlama2cBytes((*file)->bytes(), path, vocab_size);
}

}  // namespace llmserve
