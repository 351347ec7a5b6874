// Block keys for prefix caching: a full KV block is named by a 64-bit hash of the key of
// the block before it and the block's token ids; the first block's "parent" is the
// request's cache salt. Equal keys mean "probably the same prefix": the pool checks the
// token ids, the parent block and the salt on every hit (block_pool.h), so a collision
// costs a recomputation, never wrong KV.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace llmserve {

// A block's key from its parent's key and its tokens.
using BlockHashFn = uint64_t (*)(uint64_t parent_key, std::span<const int32_t> tokens);

// The default BlockHashFn (absl::Hash: 64 bits, seeded per process; keys never leave it).
uint64_t HashBlockTokens(uint64_t parent_key, std::span<const int32_t> tokens);

// The parent key of a sequence's first block: a hash of its cache salt ("" = none).
uint64_t SaltKey(std::string_view salt);

}  // namespace llmserve
