// BlockPool: the KV cache's fixed-size blocks, handed out by integer id, and the prefix
// cache that keeps computed blocks for later requests.
//
// Blocks carry no pointers: a sequence's block table is a vector of ids, and the
// KvCache (model/kv_cache.h) maps (layer, id, head) to memory. Each block has a
// reference count: one per block table holding it (prefix sharing holds one block from
// several tables). Every block is in exactly one of three sets:
//
//   used    refcount > 0
//   free    refcount 0, holds nothing worth keeping (never used, or never registered)
//   cached  refcount 0, registered: its KV is a known prefix, kept in an LRU for reuse
//
// Allocation takes free blocks first (a stack: recently freed blocks are reused first,
// warm), then evicts the least recently used cached block. A block enters the cache by
// Register (full, computed, named by its key, block_hash.h) and stays registered, shared
// or not, until it is evicted; a block's KV is never written once it is registered
// (the scheduler registers only blocks whose positions are all computed).
//
// Match finds a prefix's cached blocks and verifies each hit: the token ids, the parent
// block (the id and its allocation generation: the block computed right before it in the
// same sequence) and, for a first block, the salt. A hit is therefore exactly the KV the
// sequence would compute, whatever the hash.
//
// A sequence's last block is usually partial when it ends (a chat turn's reply ends
// mid-block, and the next turn resends it). RegisterPartial caches such a block too, by
// its parent's key, with its n < block_size token ids. A partial block is never shared:
// MatchPartial finds the cached one with the longest common prefix of a sequence's next
// tokens (verified as above), and the scheduler has its first m rows copied into a fresh
// block of the sequence's own (SchedulePlan::copies), which then computes on from row m.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace llmserve {

// Engine thread only.
class BlockPool {
 public:
  // A pool of `num_blocks` free blocks (ids 0 .. num_blocks-1) of `block_size` tokens;
  // num_blocks >= 0, block_size >= 1.
  explicit BlockPool(int32_t num_blocks, int32_t block_size = 1);

  // Appends `n` blocks (refcount 1, unregistered) to `table`: free ones first, then
  // cached ones evicted least recently used first; false and nothing changed if fewer
  // than n are free or cached.
  bool Allocate(int32_t n, std::vector<int32_t>& table);
  // Adds a reference to a used block, or takes a cached block out of the LRU (a hit).
  void Ref(int32_t id);
  // Drops one reference; at zero the block is cached (registered) or free.
  void Release(int32_t id);
  // Releases every id of `table`, last first (a sequence's tail is evicted before the
  // head its other blocks depend on), and clears it.
  void ReleaseAll(std::vector<int32_t>& table);

  // Registers used block `id`, whose KV holds `tokens` (block_size of them) right after
  // block `parent` (-1: the first block, of a sequence with cache salt `salt`), under
  // `key`, and returns `id`. When another block already holds `key`:
  //   - one that is cached and can no longer be matched (its parent was evicted) gives
  //     the key up to `id` (it becomes free);
  //   - one that holds the same KV (same parent, tokens and salt: two sequences computed
  //     the same prefix side by side) is returned: the caller may share it instead;
  //   - otherwise (a hash collision) -1: `id` stays unregistered, free once released.
  int32_t Register(int32_t id, uint64_t key, int32_t parent, std::span<const int32_t> tokens, std::string_view salt);
  // The longest verified chain of registered blocks for a sequence's first keys.size()
  // blocks: keys[i] is block i's key, token(p) the sequence's token at position p, `salt`
  // its cache salt. Appends the hits' ids to `out` unless null (takes no reference);
  // returns their
  // number. A key whose block fails verification (a hash collision, or a block whose
  // parent was evicted since) ends the chain and counts in num_rejected().
  int32_t Match(std::span<const uint64_t> keys, absl::FunctionRef<int32_t(int32_t)> token, std::string_view salt,
                std::vector<int32_t>* out, bool* rejected = nullptr) const;

  // Registers used block `id` as a partial block: its first tokens.size() (1 ..
  // block_size-1) rows hold `tokens`, right after block `parent` (-1: a first block, salt
  // `salt`) whose key is `parent_key`. False (nothing changed) when a partial block with
  // the same parent already holds these tokens or more.
  bool RegisterPartial(int32_t id, uint64_t parent_key, int32_t parent, std::span<const int32_t> tokens,
                       std::string_view salt);
  // A cached partial block to copy rows from.
  struct PartialHit {
    int32_t id = -1;   // -1: none
    int32_t rows = 0;  // leading rows that hold the sequence's next tokens
  };
  // The partial block registered under `parent_key` after block `parent` (salt `salt` when
  // parent is -1) sharing the most leading tokens with token(start), token(start+1), ...,
  // counting at most `max_rows` of them.
  PartialHit MatchPartial(uint64_t parent_key, int32_t parent, std::string_view salt,
                          absl::FunctionRef<int32_t(int32_t)> token, int32_t start, int32_t max_rows) const;

  int32_t num_total() const { return static_cast<int32_t>(refcount_.size()); }
  int32_t num_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t num_cached() const { return lru_size_; }
  int32_t num_used() const { return num_total() - num_free() - num_cached(); }
  // Blocks Allocate can hand out: free + cached.
  int32_t num_available() const { return num_free() + num_cached(); }
  // Reference count of block `id` (0 = free or cached).
  int32_t ref_count(int32_t id) const;
  // True when block `id` is registered (used or cached).
  bool registered(int32_t id) const;
  // Cached blocks evicted by Allocate, since construction.
  int64_t num_evictions() const { return evictions_; }

  // INTERNAL naming the first broken invariant: the three sets partition the pool, the
  // LRU and the key map agree with the blocks' states. O(num_total); for tests.
  absl::Status CheckInvariants() const;

 private:
  struct Meta {
    uint64_t key = 0;
    int32_t parent = -1;        // registered: the block before it, -1 for a first block
    uint32_t parent_gen = 0;    // the parent's generation when this block was registered
    uint32_t gen = 0;           // bumped by every Allocate of this block
    bool registered = false;
    int32_t partial = 0;        // registered partial blocks: rows held (else 0)
    int32_t lru_prev = -1, lru_next = -1;  // cached blocks: neighbours in the LRU
    std::string salt;           // registered first blocks: the sequence's cache salt
  };
  void LruPushBack(int32_t id);
  void LruUnlink(int32_t id);
  // Takes the least recently used cached block out of the cache (unregistered).
  int32_t Evict();
  // Takes cached block `id` out of the cache (unregistered).
  void Unregister(int32_t id);
  std::span<const int32_t> Tokens(int32_t id) const;
  // True when registered block `id` comes right after `parent` (with its current
  // generation; for a first block, under `salt`).
  bool Follows(const Meta& m, int32_t parent, std::string_view salt) const;

  int32_t block_size_;
  std::vector<int32_t> refcount_;  // per block id
  std::vector<int32_t> free_;      // free ids, stack
  std::vector<Meta> meta_;         // per block id
  std::vector<int32_t> tokens_;    // registered blocks' token ids, block_size per block id
  absl::flat_hash_map<uint64_t, int32_t> by_key_;  // registered full blocks
  absl::flat_hash_map<uint64_t, std::vector<int32_t>> partial_;  // registered partial blocks,
                                                                  // by their parent's key
  int32_t lru_head_ = -1, lru_tail_ = -1;          // head: evicted next
  int32_t lru_size_ = 0;
  int64_t evictions_ = 0;
};

}  // namespace llmserve
