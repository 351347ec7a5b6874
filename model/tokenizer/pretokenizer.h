// Regex pre-tokenizers for byte-level BPE: split text into the "words" BPE runs on.
//
// A pre-tokenizer is a sequence of PCRE2 regexes (UTF + UCP, JIT-compiled). The first
// regex splits the text; each following one splits every piece the previous produced.
// Both the matches and the gaps between them become pieces, as llama.cpp's
// unicode_regex_split and HF's Split(behavior = Isolated) do. The named regex sets are
// llama.cpp's (llama-vocab.cpp, per tokenizer.ggml.pre).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace llmserve {

// The canonical pre-tokenizer name for `name` (accepting GGUF tokenizer.ggml.pre spellings
// such as "gpt-2" or "llama-bpe"), or "" if it is unknown.
std::string CanonicalPreTokenizerName(std::string_view name);

// The canonical names: gpt2, llama3, qwen2, deepseek-llm, deepseek-coder, falcon,
// starcoder, mpt, refact, default.
std::vector<std::string> PreTokenizerNames();

// The regexes of a canonical pre-tokenizer name (empty if unknown).
std::vector<std::string> PreTokenizerRegexes(std::string_view name);

// Immutable after creation; Thread-safe.
class PreTokenizer {
 public:
  // The named regex set (any spelling CanonicalPreTokenizerName accepts).
  // INVALID_ARGUMENT for an unknown name.
  static absl::StatusOr<std::unique_ptr<PreTokenizer>> Create(std::string_view name);

  // A custom sequence of regexes. INVALID_ARGUMENT if one does not compile.
  static absl::StatusOr<std::unique_ptr<PreTokenizer>> FromRegexes(const std::vector<std::string>& regexes);

  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // Appends the pieces of `text` (valid UTF-8) to `pieces`; they view `text` and, joined,
  // give `text` back. Empty pieces are never produced.
  void Split(std::string_view text, std::vector<std::string_view>* pieces) const;

 private:
  struct Regex;
  PreTokenizer() = default;
  std::vector<std::unique_ptr<Regex>> regexes_;
};

}  // namespace llmserve
