#include "model/end_of_generation.h"

#include <algorithm>

namespace llmserve {

std::vector<int32_t> EndOfGenerationIds(const ModelConfig& config, const Tokenizer& tokenizer) {
  std::vector<int32_t> ids;
  auto add = [&](int32_t id) {
    if (id >= 0 && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  };
  add(config.eos_id);
  for (int32_t id : config.eos_ids) add(id);
  add(tokenizer.eos_id());
  return ids;
}

}  // namespace llmserve
