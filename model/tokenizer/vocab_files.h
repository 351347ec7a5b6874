// GPT-2-style vocabulary file pairs for byte-level BPE: `vocab.json` + `merges.txt`
// (GPT-2, Qwen2) or `encoder.json` + `vocab.bpe` (Llama 3, as tiktoken-converted files).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "model/tokenizer/tokenizer_spec.h"

namespace llmserve {

// Reads the pair into a kByteLevelBpe spec using the named pre-tokenizer (gpt2, llama3,
// qwen2, ... as PreTokenizer accepts). The vocabulary is a JSON object piece -> id; the
// merges file has one "left right" per line, optionally after a "#version" line.
// Per pre-tokenizer:
//   gpt2:   "<|endoftext|>" becomes a control token and both BOS and EOS.
//   llama3: ignore_merges; a 128000-token vocabulary gets Meta's 256 special tokens
//           (128000 <|begin_of_text|> = BOS, 128001 <|end_of_text|> = EOS, ...), add_bos.
//   qwen2:  NFC normalization.
// A tokenizer_config.json beside the vocabulary adds its added_tokens_decoder entries
// (e.g. Qwen2's <|endoftext|>, <|im_start|>, <|im_end|> at 151643..) and names BOS/EOS.
// NOT_FOUND for a missing file; INVALID_ARGUMENT (naming the file) for malformed content
// or an unknown pre-tokenizer.
absl::StatusOr<TokenizerSpec> TokenizerSpecFromVocabMerges(const std::string& vocab_path,
                                                           const std::string& merges_path,
                                                           const std::string& pretokenizer);

}  // namespace llmserve
