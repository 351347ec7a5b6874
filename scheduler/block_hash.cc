#include "scheduler/block_hash.h"

#include "absl/hash/hash.h"
#include "absl/types/span.h"

namespace llmserve {

uint64_t HashBlockTokens(uint64_t parent_key, std::span<const int32_t> tokens) {
  return absl::HashOf(parent_key, absl::MakeConstSpan(tokens.data(), tokens.size()));
}

uint64_t SaltKey(std::string_view salt) {
  // The tag keeps a salt's key apart from any block's key.
  return absl::HashOf(std::string_view("llmserve.cache_salt"), salt);
}

}  // namespace llmserve
