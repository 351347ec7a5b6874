// The tokenizer embedded in a GGUF file (tokenizer.ggml.* metadata) as a TokenizerSpec.
#pragma once

#include "absl/status/statusor.h"
#include "model/formats/gguf_file.h"
#include "model/tokenizer/tokenizer_spec.h"

namespace llmserve {

// tokenizer.ggml.model `llama` -> SentencePiece (tokens, scores, token_type),
// `gpt2` -> byte-level BPE (tokens, merges, token_type, tokenizer.ggml.pre mapped to a
// pre-tokenizer name). UNIMPLEMENTED for other models (bert, t5, rwkv, ...) and unknown
// pre-tokenizers; INVALID_ARGUMENT naming the file for inconsistent metadata.
absl::StatusOr<TokenizerSpec> TokenizerSpecFromGguf(const GgufFile& gguf);

}  // namespace llmserve
