// BlockPool: the KV cache's fixed-size blocks, handed out by integer id.
//
// Blocks carry no pointers: a sequence's block table is a vector of ids, and the
// KvCache (model/kv_cache.h) maps (layer, id, head) to memory. Each block has a
// reference count (prefix sharing can hold one block from several tables later);
// a block returns to the free list when its count drops to zero.
//
//   ids:       0   1   2   3   4   5   ...  N-1
//   refcount:  1   0   2   0   1   0        0
//   free list: [5, 3, 1, ...]   (LIFO: recently freed blocks are reused first, warm)
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace llmserve {

// Engine thread only.
class BlockPool {
 public:
  // A pool of `num_blocks` free blocks (ids 0 .. num_blocks-1); num_blocks >= 0.
  explicit BlockPool(int32_t num_blocks);

  // Appends `n` fresh blocks (refcount 1) to `table`; false and nothing changed if
  // fewer than n are free.
  bool Allocate(int32_t n, std::vector<int32_t>& table);
  // Adds a reference to a block in use.
  void Ref(int32_t id);
  // Drops one reference; the block is free again when none are left.
  void Release(int32_t id);
  // Releases every id of `table` (in order) and clears it.
  void ReleaseAll(std::vector<int32_t>& table);

  int32_t num_total() const { return static_cast<int32_t>(refcount_.size()); }
  int32_t num_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t num_used() const { return num_total() - num_free(); }
  // Reference count of block `id` (0 = free).
  int32_t ref_count(int32_t id) const;

 private:
  std::vector<int32_t> refcount_;  // per block id
  std::vector<int32_t> free_;      // free ids, stack
};

}  // namespace llmserve
