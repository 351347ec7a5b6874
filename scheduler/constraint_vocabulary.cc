#include "scheduler/constraint_vocabulary.h"

namespace llmserve {

absl::StatusOr<std::shared_ptr<const constraint::TokenVocabulary>> ConstraintVocabulary(
    const Tokenizer& tokenizer, std::vector<int32_t> end_of_generation) {
  constraint::VocabularyInput in;
  const int32_t n = tokenizer.vocab_size();
  in.token_bytes.reserve(n);
  in.special.reserve(n);
  for (int32_t id = 0; id < n; ++id) {
    // Control tokens (BOS, EOS, chat markers) are never part of constrained text; unused
    // and byte-fallback pieces are ordinary bytes.
    const bool control = tokenizer.IsControl(id);
    in.special.push_back(control);
    in.token_bytes.push_back(control ? std::string() : tokenizer.TokenBytes(id));
  }
  in.end_of_generation = std::move(end_of_generation);
  return constraint::TokenVocabulary::Create(std::move(in));
}

}  // namespace llmserve
