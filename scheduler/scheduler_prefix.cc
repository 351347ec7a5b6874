// Scheduler: prefix caching (block keys, lookups at admission, registration of computed
// blocks and of partial last blocks) and the invariant check over the pool and the block
// tables.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "scheduler/scheduler.h"

namespace llmserve {

void Scheduler::ExtendKeys(Sequence& s, int32_t tokens) const {
  const int32_t bs = config_.block_size;
  const auto full = static_cast<size_t>(std::max(tokens, 0) / bs);
  while (s.block_keys.size() < full) {
    const auto j = static_cast<int32_t>(s.block_keys.size());
    scratch_tokens_.resize(static_cast<size_t>(bs));
    for (int32_t i = 0; i < bs; ++i) scratch_tokens_[static_cast<size_t>(i)] = s.token(j * bs + i);
    const uint64_t parent = j == 0 ? SaltKey(s.cache_salt) : s.block_keys.back();
    s.block_keys.push_back(config_.block_hash(parent, scratch_tokens_));
  }
}

int32_t Scheduler::MatchPrefix(const Sequence& s, std::vector<int32_t>* hits, bool* rejected) const {
  if (!config_.prefix_caching || !s.block_table.empty()) return 0;
  const int32_t max_blocks = (s.num_tokens() - 1) / config_.block_size;
  const std::span<const uint64_t> keys(s.block_keys.data(),
                                       std::min(s.block_keys.size(), static_cast<size_t>(max_blocks)));
  return pool_.Match(keys, [&](int32_t pos) { return s.token(pos); }, s.cache_salt, hits, rejected);
}

void Scheduler::RegisterComputed(Sequence& s) {
  if (!config_.prefix_caching) return;
  const int32_t bs = config_.block_size;
  const int32_t full = s.num_computed / bs;
  if (s.num_registered_blocks >= full) return;
  ExtendKeys(s, full * bs);
  for (int32_t j = s.num_registered_blocks; j < full; ++j) {
    scratch_tokens_.resize(static_cast<size_t>(bs));
    for (int32_t i = 0; i < bs; ++i) scratch_tokens_[static_cast<size_t>(i)] = s.token(j * bs + i);
    const int32_t parent = j == 0 ? -1 : s.block_table[static_cast<size_t>(j - 1)];
    int32_t& id = s.block_table[static_cast<size_t>(j)];
    const int32_t holder =
        pool_.Register(id, s.block_keys[static_cast<size_t>(j)], parent, scratch_tokens_, s.cache_salt);
    if (holder >= 0 && holder != id) {
      // Another sequence computed the same block first: share that one and free this copy,
      // so that the blocks after it chain to the registered one and stay reachable.
      pool_.Ref(holder);
      pool_.Release(id);
      id = holder;
    }
    // (holder -1, a hash collision: the block stays this sequence's own, unregistered.)
  }
  s.num_registered_blocks = full;
}

BlockPool::PartialHit Scheduler::MatchPartial(const Sequence& s, int32_t hits, std::span<const int32_t> hit_ids) const {
  const int32_t bs = config_.block_size;
  const int32_t start = hits * bs;
  const int32_t max_rows = std::min(bs - 1, s.num_tokens() - 1 - start);
  if (!config_.prefix_caching || max_rows < 1) return {};
  const uint64_t parent_key = hits == 0 ? SaltKey(s.cache_salt) : s.block_keys[static_cast<size_t>(hits - 1)];
  const int32_t parent = hits == 0 ? -1 : hit_ids[static_cast<size_t>(hits - 1)];
  return pool_.MatchPartial(parent_key, parent, s.cache_salt, [&](int32_t pos) { return s.token(pos); }, start,
                            max_rows);
}

void Scheduler::ReleaseBlocks(Sequence& s, bool keep_tail) {
  const int32_t bs = config_.block_size;
  const int32_t j = s.num_computed / bs;
  const int32_t rows = s.num_computed % bs;
  if (keep_tail && config_.prefix_caching && rows > 0 && j < static_cast<int32_t>(s.block_table.size()) &&
      j >= s.num_registered_blocks) {
    ExtendKeys(s, j * bs);
    scratch_tokens_.resize(static_cast<size_t>(rows));
    for (int32_t i = 0; i < rows; ++i) scratch_tokens_[static_cast<size_t>(i)] = s.token(j * bs + i);
    const uint64_t parent_key = j == 0 ? SaltKey(s.cache_salt) : s.block_keys[static_cast<size_t>(j - 1)];
    const int32_t parent = j == 0 ? -1 : s.block_table[static_cast<size_t>(j - 1)];
    pool_.RegisterPartial(s.block_table[static_cast<size_t>(j)], parent_key, parent, scratch_tokens_, s.cache_salt);
  }
  pool_.ReleaseAll(s.block_table);
}

absl::Status Scheduler::CheckInvariants() const {
  if (absl::Status st = pool_.CheckInvariants(); !st.ok()) return st;
  const int32_t bs = config_.block_size;
  std::vector<int32_t> refs(static_cast<size_t>(pool_.num_total()), 0);
  for (const Sequence* s : Sequences()) {
    auto bad = [&](auto... parts) {
      return absl::InternalError(absl::StrCat("sequence ", s->id, " (", SequenceStateName(s->state), "): ", parts...));
    };
    const bool holds = s->state == SequenceState::kRunning;
    if (!holds && (!s->block_table.empty() || s->num_computed != 0)) return bad("holds blocks while not running");
    if (static_cast<int64_t>(s->block_table.size()) * bs < s->num_computed) return bad("computed beyond its blocks");
    if (s->num_registered_blocks > s->num_computed / bs) return bad("registered a block not fully computed");
    for (size_t j = 0; j < s->block_table.size(); ++j) {
      const int32_t id = s->block_table[j];
      if (id < 0 || id >= pool_.num_total()) return bad("block table holds id ", id);
      ++refs[static_cast<size_t>(id)];
      const bool own = static_cast<int32_t>(j) >= s->num_registered_blocks;
      if (own && (pool_.registered(id) || pool_.ref_count(id) != 1)) {
        return bad("block ", id, " at ", j, " is written but registered or shared");
      }
    }
  }
  for (int32_t id = 0; id < pool_.num_total(); ++id) {
    if (refs[static_cast<size_t>(id)] != pool_.ref_count(id)) {
      return absl::InternalError(absl::StrCat("block ", id, " has refcount ", pool_.ref_count(id), " but ",
                                              refs[static_cast<size_t>(id)], " tables hold it"));
    }
  }
  return absl::OkStatus();
}

}  // namespace llmserve
