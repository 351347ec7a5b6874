// The tokenizer's vocabulary as the constraint matcher sees it (constraint/): each token's
// bytes, which ids are control tokens, and which end generation.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "constraint/token_vocabulary.h"
#include "model/tokenizer/tokenizer.h"

namespace llmserve {

// `end_of_generation`: the ids that end a generation (the model's EOS set); a constraint
// allows them only where its output may end.
absl::StatusOr<std::shared_ptr<const constraint::TokenVocabulary>> ConstraintVocabulary(
    const Tokenizer& tokenizer, std::vector<int32_t> end_of_generation = {});

}  // namespace llmserve
