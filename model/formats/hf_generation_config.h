// HuggingFace `generation_config.json` (beside config.json): the end-of-generation ids and
// the sampling defaults a model ships.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/model_config.h"
#include "nlohmann/json_fwd.hpp"

namespace llmserve {

// The ids of a token-id value as HF writes them: one integer, a list of integers, or null
// (none). INVALID_ARGUMENT, starting with `where`, for anything else or an id outside
// [0, 2^31).
absl::StatusOr<std::vector<int32_t>> TokenIdList(const nlohmann::json& value, const std::string& where);

// Reads `path` when it exists (a missing file is not an error): every id of eos_token_id
// is added to config->eos_ids, and temperature, top_k, top_p, min_p and
// repetition_penalty become config->generation (the defaults for fields a request leaves
// unset; vLLM reads the same fields). do_sample is not read: like vLLM, a shipped
// temperature applies. INVALID_ARGUMENT naming the file and key for malformed values.
absl::Status ReadGenerationConfig(const std::string& path, ModelConfig* config);

// Appends the ids of `more` that `ids` does not hold yet, in order.
void AppendUniqueIds(const std::vector<int32_t>& more, std::vector<int32_t>* ids);

}  // namespace llmserve
