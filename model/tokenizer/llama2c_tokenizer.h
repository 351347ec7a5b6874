// karpathy/llama2.c `tokenizer.bin` (written by its tokenizer.py export):
//
//   int32 max_token_length
//   repeated until the end of the file (the token count is not stored):
//     f32 score   int32 len   len bytes (the piece, no terminator)
//
// The export replaced SentencePiece's "▁" by " " in every piece and wrote BOS/EOS as
// "\n<s>\n" / "\n</s>\n". We turn it back into a SentencePiece spec ("▁" pieces,
// "<s>"/"</s>" control tokens, "<unk>" unknown, "<0xXX>" byte tokens, score-ordered merges,
// dummy space prefix, BOS 1 / EOS 2 / UNK 0 as run.c hard-codes them), so that the
// SentencePiece tokenizer reproduces run.c's encode() and SentencePiece itself.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "model/tokenizer/tokenizer_spec.h"

namespace llmserve {

// Reads a llama2.c tokenizer.bin. NOT_FOUND if missing; INVALID_ARGUMENT naming the file
// and byte offset for truncated records, negative or oversized lengths, NaN scores, or
// fewer than 3 tokens (<unk>, <s>, </s>). The file does not record how many tokens it
// holds: run.c reads as many as the model's vocab_size. With `vocab_size` > 0 the file
// must hold exactly that many (INVALID_ARGUMENT otherwise: a truncated file, or another
// model's tokenizer); with 0 every record up to the end of the file is read.
absl::StatusOr<TokenizerSpec> TokenizerSpecFromLlama2cBin(const std::string& path, int64_t vocab_size = 0);

// Same, from bytes already in memory; `source` names them in messages.
absl::StatusOr<TokenizerSpec> TokenizerSpecFromLlama2cBytes(std::span<const uint8_t> bytes,
                                                             const std::string& source, int64_t vocab_size = 0);

}  // namespace llmserve
