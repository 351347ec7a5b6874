#include "scheduler/block_pool.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace llmserve {
namespace {

// A broken pool contract: continuing would corrupt some sequence's cache.
[[noreturn]] void PoolBug(const char* what, int32_t id) {
  std::fprintf(stderr, "llmserve block pool bug: %s (block %d)\n", what, id);
  std::abort();
}

}  // namespace

BlockPool::BlockPool(int32_t num_blocks, int32_t block_size)
    : block_size_(std::max(block_size, 1)),
      refcount_(static_cast<size_t>(std::max(num_blocks, 0)), 0),
      meta_(refcount_.size()),
      tokens_(refcount_.size() * static_cast<size_t>(block_size_), 0) {
  free_.reserve(refcount_.size());
  // Stack with block 0 on top: fresh pools hand out ids in ascending order.
  for (int32_t id = num_total() - 1; id >= 0; --id) free_.push_back(id);
}

bool BlockPool::Allocate(int32_t n, std::vector<int32_t>& table) {
  if (n < 0 || n > num_available()) return false;
  for (int32_t i = 0; i < n; ++i) {
    int32_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = Evict();
    }
    refcount_[static_cast<size_t>(id)] = 1;
    ++meta_[static_cast<size_t>(id)].gen;  // blocks registered after its old content now fail Match
    table.push_back(id);
  }
  return true;
}

int32_t BlockPool::Evict() {
  const int32_t id = lru_head_;
  if (id < 0) PoolBug("evicting from an empty cache", id);
  Unregister(id);
  ++evictions_;
  return id;
}

void BlockPool::Unregister(int32_t id) {
  LruUnlink(id);
  Meta& m = meta_[static_cast<size_t>(id)];
  if (m.partial > 0) {
    auto it = partial_.find(m.key);
    if (it == partial_.end()) PoolBug("partial block not found by its parent key", id);
    std::vector<int32_t>& ids = it->second;
    ids.erase(std::find(ids.begin(), ids.end(), id));
    if (ids.empty()) partial_.erase(it);
  } else {
    by_key_.erase(m.key);
  }
  m.registered = false;
  m.partial = 0;
  m.salt.clear();
}

void BlockPool::Ref(int32_t id) {
  if (id < 0 || id >= num_total()) PoolBug("Ref of an unknown block", id);
  int32_t& rc = refcount_[static_cast<size_t>(id)];
  if (rc == 0) {
    if (!meta_[static_cast<size_t>(id)].registered) PoolBug("Ref of a free block", id);
    if (meta_[static_cast<size_t>(id)].partial > 0) PoolBug("Ref of a partial block (it is copied, never shared)", id);
    LruUnlink(id);
  }
  ++rc;
}

void BlockPool::Release(int32_t id) {
  // A double release is an engine bug that would corrupt another sequence's cache.
  if (id < 0 || id >= num_total() || refcount_[static_cast<size_t>(id)] <= 0) PoolBug("Release of a free block", id);
  if (--refcount_[static_cast<size_t>(id)] > 0) return;
  if (meta_[static_cast<size_t>(id)].registered) {
    LruPushBack(id);
  } else {
    free_.push_back(id);
  }
}

void BlockPool::ReleaseAll(std::vector<int32_t>& table) {
  for (auto it = table.rbegin(); it != table.rend(); ++it) Release(*it);
  table.clear();
}

int32_t BlockPool::Register(int32_t id, uint64_t key, int32_t parent, std::span<const int32_t> tokens,
                            std::string_view salt) {
  if (id < 0 || id >= num_total() || refcount_[static_cast<size_t>(id)] <= 0) PoolBug("Register of a free block", id);
  if (parent >= num_total() || parent == id) PoolBug("Register with a bad parent", id);
  if (tokens.size() != static_cast<size_t>(block_size_)) PoolBug("Register with a partial block", id);
  Meta& m = meta_[static_cast<size_t>(id)];
  if (m.registered) PoolBug("Register of a registered block", id);
  if (const auto it = by_key_.find(key); it != by_key_.end()) {
    const int32_t other = it->second;
    const Meta& o = meta_[static_cast<size_t>(other)];
    if (Follows(o, parent, salt) && std::equal(tokens.begin(), tokens.end(), Tokens(other).begin())) return other;
    const bool orphan = o.parent >= 0 && (!meta_[static_cast<size_t>(o.parent)].registered ||
                                          meta_[static_cast<size_t>(o.parent)].gen != o.parent_gen);
    if (!orphan || refcount_[static_cast<size_t>(other)] > 0) return -1;
    Unregister(other);
    free_.push_back(other);
  }
  by_key_.emplace(key, id);
  m.key = key;
  m.parent = parent;
  m.parent_gen = parent >= 0 ? meta_[static_cast<size_t>(parent)].gen : 0;
  m.registered = true;
  m.salt = parent < 0 ? std::string(salt) : std::string();
  std::copy(tokens.begin(), tokens.end(), tokens_.begin() + static_cast<ptrdiff_t>(id) * block_size_);
  return id;
}

bool BlockPool::RegisterPartial(int32_t id, uint64_t parent_key, int32_t parent, std::span<const int32_t> tokens,
                                std::string_view salt) {
  if (id < 0 || id >= num_total() || refcount_[static_cast<size_t>(id)] <= 0) PoolBug("Register of a free block", id);
  if (parent >= num_total() || parent == id) PoolBug("Register with a bad parent", id);
  if (tokens.empty() || tokens.size() >= static_cast<size_t>(block_size_)) {
    PoolBug("RegisterPartial of an empty or full block", id);
  }
  Meta& m = meta_[static_cast<size_t>(id)];
  if (m.registered) PoolBug("Register of a registered block", id);
  std::vector<int32_t>& ids = partial_[parent_key];
  for (const int32_t other : ids) {  // one that already holds these tokens (or more) is enough
    const Meta& o = meta_[static_cast<size_t>(other)];
    if (o.partial < static_cast<int32_t>(tokens.size()) || !Follows(o, parent, salt)) continue;
    if (std::equal(tokens.begin(), tokens.end(), Tokens(other).begin())) return false;
  }
  ids.push_back(id);
  m.key = parent_key;
  m.parent = parent;
  m.parent_gen = parent >= 0 ? meta_[static_cast<size_t>(parent)].gen : 0;
  m.registered = true;
  m.partial = static_cast<int32_t>(tokens.size());
  m.salt = parent < 0 ? std::string(salt) : std::string();
  std::copy(tokens.begin(), tokens.end(), tokens_.begin() + static_cast<ptrdiff_t>(id) * block_size_);
  return true;
}

BlockPool::PartialHit BlockPool::MatchPartial(uint64_t parent_key, int32_t parent, std::string_view salt,
                                              absl::FunctionRef<int32_t(int32_t)> token, int32_t start,
                                              int32_t max_rows) const {
  PartialHit best;
  const auto it = partial_.find(parent_key);
  if (it == partial_.end()) return best;
  for (const int32_t id : it->second) {
    const Meta& m = meta_[static_cast<size_t>(id)];
    if (!Follows(m, parent, salt)) continue;
    const std::span<const int32_t> t = Tokens(id);
    const int32_t limit = std::min(m.partial, max_rows);
    int32_t rows = 0;
    while (rows < limit && t[static_cast<size_t>(rows)] == token(start + rows)) ++rows;
    if (rows > best.rows) best = PartialHit{id, rows};
  }
  return best;
}

bool BlockPool::Follows(const Meta& m, int32_t parent, std::string_view salt) const {
  if (m.parent != parent) return false;
  if (parent >= 0) return m.parent_gen == meta_[static_cast<size_t>(parent)].gen;
  return m.salt == salt;
}

int32_t BlockPool::Match(std::span<const uint64_t> keys, absl::FunctionRef<int32_t(int32_t)> token,
                         std::string_view salt, std::vector<int32_t>* out, bool* rejected) const {
  if (rejected != nullptr) *rejected = false;
  int32_t parent = -1;
  int32_t hits = 0;
  for (const uint64_t key : keys) {
    const auto it = by_key_.find(key);
    if (it == by_key_.end()) break;
    const int32_t id = it->second;
    const Meta& m = meta_[static_cast<size_t>(id)];
    bool same = Follows(m, parent, salt);
    const std::span<const int32_t> t = Tokens(id);
    for (int32_t i = 0; same && i < block_size_; ++i) same = t[static_cast<size_t>(i)] == token(hits * block_size_ + i);
    if (!same) {
      if (rejected != nullptr) *rejected = true;
      break;
    }
    if (out != nullptr) out->push_back(id);
    parent = id;
    ++hits;
  }
  return hits;
}

int32_t BlockPool::ref_count(int32_t id) const {
  if (id < 0 || id >= num_total()) return 0;
  return refcount_[static_cast<size_t>(id)];
}

bool BlockPool::registered(int32_t id) const {
  return id >= 0 && id < num_total() && meta_[static_cast<size_t>(id)].registered;
}

std::span<const int32_t> BlockPool::Tokens(int32_t id) const {
  return std::span<const int32_t>(tokens_).subspan(static_cast<size_t>(id) * static_cast<size_t>(block_size_),
                                                   static_cast<size_t>(block_size_));
}

void BlockPool::LruPushBack(int32_t id) {
  Meta& m = meta_[static_cast<size_t>(id)];
  m.lru_prev = lru_tail_;
  m.lru_next = -1;
  if (lru_tail_ >= 0) {
    meta_[static_cast<size_t>(lru_tail_)].lru_next = id;
  } else {
    lru_head_ = id;
  }
  lru_tail_ = id;
  ++lru_size_;
}

void BlockPool::LruUnlink(int32_t id) {
  Meta& m = meta_[static_cast<size_t>(id)];
  (m.lru_prev >= 0 ? meta_[static_cast<size_t>(m.lru_prev)].lru_next : lru_head_) = m.lru_next;
  (m.lru_next >= 0 ? meta_[static_cast<size_t>(m.lru_next)].lru_prev : lru_tail_) = m.lru_prev;
  m.lru_prev = m.lru_next = -1;
  --lru_size_;
}

absl::Status BlockPool::CheckInvariants() const {
  auto bad = [](auto... parts) { return absl::InternalError(absl::StrCat("block pool: ", parts...)); };
  std::vector<uint8_t> set(refcount_.size(), 0);  // 1 free, 2 cached
  for (const int32_t id : free_) {
    if (id < 0 || id >= num_total() || set[static_cast<size_t>(id)] != 0) return bad("free list holds ", id, " twice");
    if (refcount_[static_cast<size_t>(id)] != 0 || meta_[static_cast<size_t>(id)].registered) {
      return bad("free block ", id, " is referenced or registered");
    }
    set[static_cast<size_t>(id)] = 1;
  }
  int32_t n = 0;
  for (int32_t id = lru_head_, prev = -1; id >= 0; prev = id, id = meta_[static_cast<size_t>(id)].lru_next) {
    if (id >= num_total() || set[static_cast<size_t>(id)] != 0 || ++n > num_total()) return bad("LRU loops at ", id);
    const Meta& m = meta_[static_cast<size_t>(id)];
    if (m.lru_prev != prev) return bad("LRU links broken at ", id);
    if (refcount_[static_cast<size_t>(id)] != 0 || !m.registered) return bad("cached block ", id, " is in use");
    set[static_cast<size_t>(id)] = 2;
  }
  if (n != lru_size_) return bad("LRU holds ", n, " blocks, counted ", lru_size_);
  int32_t registered = 0, partial = 0;
  for (int32_t id = 0; id < num_total(); ++id) {
    const Meta& m = meta_[static_cast<size_t>(id)];
    if (set[static_cast<size_t>(id)] == 0 && refcount_[static_cast<size_t>(id)] <= 0) {
      return bad("block ", id, " is in no set");
    }
    if (!m.registered) continue;
    if (m.partial > 0) {
      ++partial;
      if (m.partial >= block_size_) return bad("partial block ", id, " holds ", m.partial, " rows");
      if (refcount_[static_cast<size_t>(id)] != 0) return bad("partial block ", id, " is in use");
      const auto it = partial_.find(m.key);
      if (it == partial_.end() || std::count(it->second.begin(), it->second.end(), id) != 1) {
        return bad("partial block ", id, " is not found by its parent key");
      }
      continue;
    }
    ++registered;
    const auto it = by_key_.find(m.key);
    if (it == by_key_.end() || it->second != id) return bad("registered block ", id, " is not found by its key");
  }
  if (registered != static_cast<int32_t>(by_key_.size())) return bad("key map holds unregistered blocks");
  size_t partial_entries = 0;
  for (const auto& [key, ids] : partial_) {
    if (ids.empty()) return bad("empty partial list under a key");
    partial_entries += ids.size();
  }
  if (partial_entries != static_cast<size_t>(partial)) return bad("partial map holds unregistered blocks");
  if (num_used() + num_free() + num_cached() != num_total()) return bad("used + free + cached != total");
  return absl::OkStatus();
}

}  // namespace llmserve
