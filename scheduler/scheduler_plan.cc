// Scheduler::Schedule: building one step's plan (decode tokens, prefill chunks,
// admission, preemption). See scheduler.h for the plan, prefill_policy.h for the budgets.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "scheduler/scheduler.h"

namespace llmserve {
namespace {

// A running sequence whose prompt is computed and whose last sampled token is to be fed.
bool DecodeReady(const Sequence& s) {
  return s.num_uncomputed() == 1 && s.num_computed >= static_cast<int32_t>(s.prompt.size());
}

// Blocks `s` still lacks to hold positions 0 .. num_computed + n - 1.
int32_t BlocksNeeded(const Sequence& s, int32_t n, int32_t block_size) {
  const int64_t tokens = static_cast<int64_t>(s.num_computed) + n;
  const int64_t blocks = (tokens + block_size - 1) / block_size;
  return static_cast<int32_t>(std::max<int64_t>(0, blocks - static_cast<int64_t>(s.block_table.size())));
}

// Tokens `s` can be fed with its own blocks plus `free_blocks` more.
int64_t Capacity(const Sequence& s, int32_t free_blocks, int32_t block_size) {
  return (static_cast<int64_t>(s.block_table.size()) + free_blocks) * block_size - s.num_computed;
}

// Allocation the planner has already checked; failing would be a scheduler bug.
void MustAllocate(BlockPool& pool, int32_t n, std::vector<int32_t>& table) {
  if (!pool.Allocate(n, table)) {
    std::fprintf(stderr, "llmserve scheduler bug: %d blocks planned, %d free\n", n, pool.num_available());
    std::abort();
  }
}

ScheduledWork Work(Sequence& s, ScheduledWork::Kind kind, int32_t n) {
  return ScheduledWork{&s, kind, s.num_computed, n, s.num_computed + n == s.num_tokens()};
}

}  // namespace

StepStart Scheduler::Start() const {
  StepStart st;
  for (const auto& s : running_) (DecodeReady(*s) ? st.decode_ready : st.prompt_work) = true;
  st.prompt_work = st.prompt_work || !waiting_.empty();
  st.prefill_steps = decode_stall_;
  return st;
}

StepState Scheduler::State(const SchedulePlan& plan) const {
  StepState st;
  st.decode_rows = plan.num_decode_tokens;
  st.room = config_.max_batched_tokens - plan.num_decode_tokens;
  for (const auto& s : running_) {
    if (!DecodeReady(*s)) st.pending_prompt_tokens += s->num_uncomputed();
  }
  for (const auto& s : waiting_) {
    st.pending_prompt_tokens += s->num_uncomputed() - MatchPrefix(*s, nullptr) * config_.block_size;
  }
  return st;
}

SchedulePlan Scheduler::Schedule(absl::Time now) {
  SchedulePlan plan;
  const StepShape shape = policy_->Shape(Start());
  if (shape == StepShape::kDecodeThenPrefill) {
    ScheduleDecodes(plan);
    SchedulePrefills(plan, now, policy_->Budget(State(plan)));
    decode_stall_ = 0;
    return plan;
  }
  if (shape == StepShape::kPrefillOnly) {
    SchedulePrefills(plan, now, policy_->Budget(State(plan)));
    if (!plan.empty()) {
      const bool decoders =
          std::any_of(running_.begin(), running_.end(), [](const auto& s) { return DecodeReady(*s); });
      decode_stall_ = decoders ? decode_stall_ + 1 : 0;
      return plan;
    }
  }
  // A decode step (or a prefill-only one that could plan no prompt work).
  ScheduleDecodes(plan);
  decode_stall_ = 0;
  return plan;
}

void Scheduler::ScheduleDecodes(SchedulePlan& plan) {
  const int32_t bs = config_.block_size;
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence& s = *running_[i];
    if (!DecodeReady(s)) continue;
    if (plan.num_tokens() >= config_.max_batched_tokens) break;  // cannot happen: budget >= max_running
    bool self_preempted = false;
    while (BlocksNeeded(s, 1, bs) > pool_.num_available()) {
      self_preempted = (i + 1 == running_.size());
      PreemptNewest(plan);
      if (self_preempted) break;
    }
    if (self_preempted) break;  // it was the newest: nothing after it is left
    MustAllocate(pool_, BlocksNeeded(s, 1, bs), s.block_table);
    plan.work.push_back(Work(s, ScheduledWork::Kind::kDecode, 1));
    plan.num_decode_tokens += 1;
  }
}

void Scheduler::SchedulePrefills(SchedulePlan& plan, absl::Time now, const PrefillBudget& limits) {
  const int32_t prefill_budget = limits.tokens;
  const int32_t max_items = limits.max_items;
  const int32_t bs = config_.block_size;
  int32_t items = 0;
  // Tokens left: the prefill budget and the step's max_batched_tokens, and none once
  // max_items prefill items are planned.
  auto budget = [&] {
    if (items >= max_items) return 0;
    return std::min(prefill_budget - plan.num_prefill_tokens, config_.max_batched_tokens - plan.num_tokens());
  };
  // Whether prompt work of `n` rows, of a sequence with `left` tokens to compute, joins the
  // step: the first item always; a further one when it ends the prompt and is shorter than
  // the step's decode rows plus prompt_pack_rows (SchedulerConfig::prompt_pack_rows).
  const int32_t pack_rows = config_.prompt_pack_rows;
  auto joins = [&](int64_t n, int64_t left) {
    return items == 0 || pack_rows == 0 || (n == left && n < int64_t{plan.num_decode_tokens} + pack_rows);
  };
  // Running sequences part-way through their (re)computation: next chunk, oldest first.
  // A chunk shrinks to the blocks that are free; with none, the newest running sequence
  // (maybe this one) is preempted, as for a decode.
  for (size_t i = 0; i < running_.size() && budget() > 0; ++i) {
    Sequence& s = *running_[i];
    if (DecodeReady(s)) continue;
    if (!joins(std::min<int64_t>({s.num_uncomputed(), config_.max_prefill_chunk, budget()}), s.num_uncomputed())) {
      break;
    }
    bool self_preempted = false;
    while (Capacity(s, pool_.num_available(), bs) < 1) {
      self_preempted = (i + 1 == running_.size());
      PreemptNewest(plan);
      if (self_preempted) break;
    }
    if (self_preempted) break;
    const int64_t chunk = std::min<int64_t>({s.num_uncomputed(), config_.max_prefill_chunk, budget(),
                                             Capacity(s, pool_.num_available(), bs)});
    const auto n = static_cast<int32_t>(chunk);
    MustAllocate(pool_, BlocksNeeded(s, n, bs), s.block_table);
    plan.work.push_back(Work(s, ScheduledWork::Kind::kPrefill, n));
    plan.num_prefill_tokens += n;
    ++items;
  }
  // Admission: FIFO from the head of the waiting queue; never preempts, never overtakes,
  // and is skipped in a step that had to preempt (the blocks are short already).
  if (!plan.preempted.empty()) return;
  while (!waiting_.empty() && static_cast<int32_t>(running_.size()) < config_.max_running && budget() > 0) {
    Sequence& s = *waiting_.front();
    // The cached prefix first: its blocks are taken, not computed. Those sitting in the
    // LRU stop being available to Allocate once taken.
    if (config_.prefix_caching) ExtendKeys(s, s.num_tokens() - 1);
    scratch_blocks_.clear();
    bool rejected = false;
    const int32_t hits = MatchPrefix(s, &scratch_blocks_, &rejected);
    const auto idle_hits = static_cast<int32_t>(std::count_if(
        scratch_blocks_.begin(), scratch_blocks_.end(), [&](int32_t id) { return pool_.ref_count(id) == 0; }));
    // Then the rows of a cached partial block, copied into the first block it computes
    // into. The copy is made before the step's forward pass, which is the first to write
    // any block this plan allocates, so the source may be evicted and reallocated in the
    // same plan (even as that very block) and still be read intact.
    const BlockPool::PartialHit partial = MatchPartial(s, hits, scratch_blocks_);
    const int32_t start = hits * bs + partial.rows;
    const int32_t n = std::min({s.num_tokens() - start, config_.max_prefill_chunk, budget()});
    if (!joins(n, s.num_tokens() - start)) break;
    const int32_t need = (start + n + bs - 1) / bs - hits;
    if (need > pool_.num_available() - idle_hits) break;
    for (const int32_t id : scratch_blocks_) {
      pool_.Ref(id);
      s.block_table.push_back(id);
    }
    s.num_computed = start;
    s.num_registered_blocks = hits;
    if (config_.prefix_caching) {
      prefix_query_tokens_ += s.num_tokens();
      prefix_hit_tokens_ += start;
      prefix_rejected_hits_ += rejected;
    }
    if (s.state == SequenceState::kWaiting) s.num_cached_tokens = start;
    MustAllocate(pool_, need, s.block_table);
    if (partial.rows > 0) plan.copies.push_back(BlockCopy{partial.id, s.block_table[static_cast<size_t>(hits)]});
    if (s.state == SequenceState::kWaiting) admission_.Release();
    s.state = SequenceState::kRunning;
    s.admit_order = next_admit_order_++;
    if (s.times.first_scheduled == absl::InfinitePast()) s.times.first_scheduled = now;
    plan.work.push_back(Work(s, ScheduledWork::Kind::kPrefill, n));
    plan.num_prefill_tokens += n;
    ++items;
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
}

void Scheduler::PreemptNewest(SchedulePlan& plan) {
  std::unique_ptr<Sequence> victim = std::move(running_.back());
  running_.pop_back();
  auto it = std::find_if(plan.work.begin(), plan.work.end(),
                         [&](const ScheduledWork& w) { return w.seq == victim.get(); });
  if (it != plan.work.end()) {
    (it->kind == ScheduledWork::Kind::kDecode ? plan.num_decode_tokens : plan.num_prefill_tokens) -= it->num_tokens;
    plan.work.erase(it);
  }
  // (No copy in the plan writes its blocks: admission, which plans copies, comes after
  // every preemption of a step.)
  ReleaseBlocks(*victim, /*keep_tail=*/true);
  victim->num_computed = 0;
  victim->num_registered_blocks = 0;
  victim->state = SequenceState::kPreempted;
  ++victim->num_preemptions;
  ++num_preemptions_;
  plan.preempted.push_back(victim->id);
  waiting_.push_front(std::move(victim));
}

}  // namespace llmserve
