// SentencePiece-style BPE tokenizer: llama.cpp's SPM tokenizer (llm_tokenizer_spm),
// SentencePiece's BPE model, and HF tokenizers' BPE with byte_fallback (Llama 2, Mistral,
// Phi-3, TinyLlama), all of which agree on the algorithm:
//
//   text between special tokens --(" " -> "▁", "▁" prefix)--> UTF-8 characters
//   --repeatedly merge the best adjacent pair whose concatenation is a vocabulary piece-->
//   pieces; a character with no piece becomes <0xXX> byte tokens (or unk).
//
// Best pair = highest score of the merged piece (spec.merges empty; leftmost on ties), or
// lowest merge rank (spec.merges given, HF tokenizer.json; leftmost on ties).
// Special tokens (SpecialTokenSplitter) are cut out first; as in llama.cpp, the "▁" prefix
// (add_space_prefix) goes on the first text fragment and on every fragment after a special
// token. Unused pieces are split back into their parts (SentencePiece). Decoding: "▁" -> " ",
// "<0xXX>" -> that byte, control/unknown tokens -> their text; one leading space is dropped.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/tokenizer_spec.h"

namespace llmserve {

// Builds a SentencePiece-style BPE tokenizer from `spec` (kind kSentencePiece).
// INVALID_ARGUMENT naming spec.source if the spec is inconsistent: token/score/type counts
// differ, special ids out of range, NaN scores, merges naming unknown pieces or merging into
// a piece that is not in the vocabulary, neither scores nor merges given.
absl::StatusOr<std::unique_ptr<Tokenizer>> NewSentencePieceTokenizer(TokenizerSpec spec);

}  // namespace llmserve
