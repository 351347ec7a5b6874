#include "scheduler/block_pool.h"

#include <cassert>
#include <cstdlib>

namespace llmserve {

BlockPool::BlockPool(int32_t num_blocks) : refcount_(static_cast<size_t>(num_blocks < 0 ? 0 : num_blocks), 0) {
  free_.reserve(refcount_.size());
  // Stack with block 0 on top: fresh pools hand out ids in ascending order.
  for (int32_t id = num_total() - 1; id >= 0; --id) free_.push_back(id);
}

bool BlockPool::Allocate(int32_t n, std::vector<int32_t>& table) {
  if (n < 0 || n > num_free()) return false;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t id = free_.back();
    free_.pop_back();
    refcount_[static_cast<size_t>(id)] = 1;
    table.push_back(id);
  }
  return true;
}

void BlockPool::Ref(int32_t id) {
  assert(id >= 0 && id < num_total() && refcount_[static_cast<size_t>(id)] > 0);
  ++refcount_[static_cast<size_t>(id)];
}

void BlockPool::Release(int32_t id) {
  // A double release is an engine bug that would corrupt another sequence's cache.
  if (id < 0 || id >= num_total() || refcount_[static_cast<size_t>(id)] <= 0) std::abort();
  if (--refcount_[static_cast<size_t>(id)] == 0) free_.push_back(id);
}

void BlockPool::ReleaseAll(std::vector<int32_t>& table) {
  for (const int32_t id : table) Release(id);
  table.clear();
}

int32_t BlockPool::ref_count(int32_t id) const {
  if (id < 0 || id >= num_total()) return 0;
  return refcount_[static_cast<size_t>(id)];
}

}  // namespace llmserve
