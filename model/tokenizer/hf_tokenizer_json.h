// HuggingFace `tokenizer.json` (the `tokenizers` library's serialization) -> TokenizerSpec.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "model/tokenizer/tokenizer_spec.h"

namespace llmserve {

// Reads a tokenizer.json whose model.type is "BPE", in either flavour:
//  * SentencePiece-style (Llama 2, TinyLlama, Mistral, Phi-3): byte_fallback, a normalizer
//    Prepend("▁") + Replace(" " -> "▁") or a Metaspace pre-tokenizer. -> kSentencePiece,
//    merges in rank order, add_space_prefix from Prepend/Metaspace, "<0xXX>" -> kByte.
//  * byte-level (GPT-2, Llama 3, Qwen2, ...): a ByteLevel pre-tokenizer, possibly after
//    Split regexes (matched against the known pre-tokenizers) or Digits (starcoder);
//    NFC normalizer -> nfc; model.ignore_merges -> ignore_merges. -> kByteLevelBpe.
// Added tokens: special -> kControl, others -> kUserDefined; ids beyond the vocabulary
// grow the table, with kUnused placeholders for ids nothing names. A tokenizer_config.json
// beside the file gives add_bos_token and the BOS/EOS/UNK/PAD names; otherwise a
// TemplateProcessing post-processor that starts with a special token means add_bos.
// UNIMPLEMENTED (naming it) for other model types (WordPiece, Unigram) and for
// pre-tokenizers/normalizers llmserve does not implement; NOT_FOUND for a missing file;
// INVALID_ARGUMENT for malformed content. Never throws.
absl::StatusOr<TokenizerSpec> TokenizerSpecFromHfJson(const std::string& tokenizer_json_path);

}  // namespace llmserve
