// The token ids that end a model's generation as EOS.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "model/tokenizer/tokenizer.h"

namespace llmserve {

// The model's end-of-generation ids (config.eos_ids, or eos_id when the file lists none:
// end of text, of turn, of message), then the tokenizer's EOS when it is another id
// (tokenizer_config.json's eos_token may be the end-of-turn token). In order, no repeats.
std::vector<int32_t> EndOfGenerationIds(const ModelConfig& config, const Tokenizer& tokenizer);

}  // namespace llmserve
