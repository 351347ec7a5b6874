// Byte-level BPE tokenizer (GPT-2, Llama 3, Qwen2, and llama.cpp's other byte-level
// pre-tokenizer types), built from a TokenizerSpec with kind kByteLevelBpe.
//
// Encode: special/added tokens are split out first (SpecialTokenSplitter); each text
// fragment is NFC-normalized (spec.nfc), split by the regex pre-tokenizer
// (spec.pretokenizer), and every piece is BPE-merged over its raw bytes: repeatedly merge
// the adjacent pair with the lowest merge rank (leftmost on ties). With spec.ignore_merges
// a piece that is itself a vocabulary token becomes that token directly.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/tokenizer_spec.h"

namespace llmserve {

// Builds the tokenizer. INVALID_ARGUMENT (naming spec.source) when the spec is
// inconsistent: wrong kind, empty vocabulary, types/scores sized differently from tokens,
// special ids out of range, an unknown pre-tokenizer, or a merge that is not "left right"
// or names a piece missing from the vocabulary. A merge whose result is not in the
// vocabulary can never produce a token and is skipped.
absl::StatusOr<std::unique_ptr<Tokenizer>> NewByteLevelBpeTokenizer(TokenizerSpec spec);

}  // namespace llmserve
