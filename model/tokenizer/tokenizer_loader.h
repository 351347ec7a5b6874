// LoadTokenizer: opens a tokenizer from any supported file or directory.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/tokenizer_spec.h"

namespace llmserve {

struct TokenizerLoadOptions {
  // Pre-tokenizer for GPT-2-style vocab+merges pairs, which do not name it:
  // "gpt2", "llama3" or "qwen2". Empty: guess (128000-token vocab -> llama3,
  // a Qwen2Tokenizer tokenizer_config.json beside it -> qwen2, else gpt2).
  std::string pretokenizer;
  // The model's vocabulary size, 0 = unknown. A llama2.c tokenizer.bin, which does not
  // record its own size, must then hold exactly this many tokens.
  int64_t model_vocab_size = 0;
};

// Reads the tokenizer description at `path`, which may be:
//   *.gguf                      embedded tokenizer.ggml.* metadata
//   tokenizer.json              HuggingFace tokenizers file (any *.json with a "model" key)
//   vocab.json / encoder.json   byte-level vocab; merges.txt / vocab.bpe beside it
//   merges.txt / vocab.bpe      merges; vocab.json / encoder.json beside it
//   a directory                 tokenizer.json, else vocab+merges, else tokenizer.bin, else one *.gguf
//   any other file              llama2.c tokenizer.bin
absl::StatusOr<TokenizerSpec> LoadTokenizerSpec(const std::string& path, const TokenizerLoadOptions& options = {});

// LoadTokenizerSpec + CreateTokenizer.
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path,
                                                         const TokenizerLoadOptions& options = {});

}  // namespace llmserve
