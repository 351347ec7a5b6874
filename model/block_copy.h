// BlockCopy: one KV cache block's contents (every layer, K and V, every KV head) copied
// into another block before a forward pass computes any row. The scheduler plans them to
// reuse a cached partial block's leading rows in a block a sequence owns (prefix caching,
// scheduler/block_pool.h); the model's Forward carries them out.
#pragma once

#include <cstdint>

namespace llmserve {

struct BlockCopy {
  int32_t src = 0;  // block read (src == dst: nothing to do)
  int32_t dst = 0;  // block written
};

}  // namespace llmserve
