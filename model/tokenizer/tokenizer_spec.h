// TokenizerSpec: a format-neutral description of a tokenizer. Each file format
// (GGUF metadata, HF tokenizer.json, vocab+merges pairs, llama2.c tokenizer.bin)
// is parsed into one of these; CreateTokenizer() builds the tokenizer from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace llmserve {

enum class TokenizerKind {
  kSentencePiece,  // SPM-style BPE over characters, "▁" for spaces, <0xXX> byte fallback
  kByteLevelBpe,   // GPT-2-style byte-level BPE with a regex pre-tokenizer
};

// Token types, numbered as GGUF's tokenizer.ggml.token_type (llama.cpp).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      // special tokens (<s>, </s>, <|endoftext|>): split out only with parse_special
  kUserDefined = 4,  // added tokens that are always split out of the text
  kUnused = 5,
  kByte = 6,         // <0xXX> byte-fallback tokens
};

struct TokenizerSpec {
  TokenizerKind kind = TokenizerKind::kSentencePiece;
  std::string source;                 // file it came from, for messages

  std::vector<std::string> tokens;    // id -> piece exactly as in the vocabulary ("▁the", "Ġthe", "<0x0A>")
  std::vector<float> scores;          // SPM merge priority per token; empty when `merges` is used
  std::vector<TokenType> types;       // per token; empty means all kNormal
  std::vector<std::string> merges;    // "left right" in rank order (rank 0 first); empty => use scores

  int32_t bos_id = -1;                // -1: none
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  bool add_bos = false;               // the model's default for "add BOS" (e.g. Llama 2: true)
  // The model's Jinja chat template (tokenizer_config.json's chat_template or a
  // chat_template.jinja beside it; GGUF tokenizer.chat_template); empty: none.
  std::string chat_template;

  // SentencePiece only.
  bool add_space_prefix = true;       // prepend "▁" to the text (and strip one leading space on decode)
  bool byte_fallback = true;          // unknown characters become <0xXX> tokens

  // Byte-level BPE only.
  std::string pretokenizer = "gpt2";  // regex set: gpt2, llama3, qwen2, deepseek-llm, deepseek-coder,
                                      // falcon, starcoder, mpt, refact
  bool nfc = false;                   // apply Unicode NFC before pre-tokenizing (Qwen2)
  bool ignore_merges = false;         // a pre-token that is itself in the vocab is one token (Llama 3)
};

}  // namespace llmserve
