// CreateTokenizer: picks the implementation a TokenizerSpec asks for.
#include "model/tokenizer/bpe_tokenizer.h"
#include "model/tokenizer/spm_tokenizer.h"
#include "model/tokenizer/tokenizer.h"

namespace llmserve {

absl::StatusOr<std::unique_ptr<Tokenizer>> CreateTokenizer(TokenizerSpec spec) {
  switch (spec.kind) {
    case TokenizerKind::kSentencePiece: return NewSentencePieceTokenizer(std::move(spec));
    case TokenizerKind::kByteLevelBpe: return NewByteLevelBpeTokenizer(std::move(spec));
  }
  return absl::InvalidArgumentError("unknown tokenizer kind");
}

}  // namespace llmserve
