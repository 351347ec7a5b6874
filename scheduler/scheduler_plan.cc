// Scheduler::Schedule: building one step's plan (decode tokens, prefill chunks,
// admission, preemption). See scheduler.h for the policy.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
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
    std::fprintf(stderr, "llmserve scheduler bug: %d blocks planned, %d free\n", n, pool.num_free());
    std::abort();
  }
}

ScheduledWork Work(Sequence& s, ScheduledWork::Kind kind, int32_t n) {
  return ScheduledWork{&s, kind, s.num_computed, n, s.num_computed + n == s.num_tokens()};
}

}  // namespace

SchedulePlan Scheduler::Schedule(absl::Time now, StepProbe probe) {
  SchedulePlan plan;
  if (config_.step_policy == StepPolicy::kMixed) {
    ScheduleDecodes(plan);
    const auto [budget, max_items] = MixedPrefillLimits(plan, probe);
    SchedulePrefills(plan, now, budget, max_items);
    return plan;
  }
  // kSeparate: a prefill step while prefill work exists, unless decodes have stalled
  // max_decode_stall steps; a decode step otherwise (or when no prefill could be planned).
  auto decoders = [&] {
    return std::any_of(running_.begin(), running_.end(), [](const auto& s) { return DecodeReady(*s); });
  };
  const bool prefill_work = !waiting_.empty() ||
      std::any_of(running_.begin(), running_.end(), [](const auto& s) { return !DecodeReady(*s); });
  if (prefill_work && !(decoders() && decode_stall_ >= config_.max_decode_stall)) {
    SchedulePrefills(plan, now, config_.max_batched_tokens, std::numeric_limits<int32_t>::max());
  }
  if (!plan.empty()) {
    decode_stall_ = decoders() ? decode_stall_ + 1 : 0;
    return plan;
  }
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
    while (BlocksNeeded(s, 1, bs) > pool_.num_free()) {
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

std::pair<int32_t, int32_t> Scheduler::MixedPrefillLimits(const SchedulePlan& plan, StepProbe probe) const {
  constexpr int32_t kUnlimited = std::numeric_limits<int32_t>::max();
  const int32_t decode = plan.num_decode_tokens;
  const int32_t room = config_.max_batched_tokens - decode;
  const int32_t h = config_.prefill_spread_steps;
  if (h == 0) return {room, kUnlimited};
  int64_t pending = 0;
  for (const auto& s : running_) {
    if (!DecodeReady(*s)) pending += s->num_uncomputed();
  }
  for (const auto& s : waiting_) pending += s->num_uncomputed();
  // Rows the step can still take before it costs more than a decode step of its own
  // (with nothing decoding: what later steps will have at most).
  const int32_t free_rows = std::min(config_.mixed_step_tokens - decode, room);
  if (!piggyback_) {
    const bool probe_fills = probe == StepProbe::kPiggyback && decode > 0 && free_rows >= kMinPiggybackRows &&
                             pending >= free_rows;
    return {probe_fills ? free_rows : room, kUnlimited};
  }
  const bool piggyback = free_rows >= kMinPiggybackRows && pending <= static_cast<int64_t>(free_rows) * h;
  if (!piggyback) return {room, kUnlimited};
  if (decode == 0) return {room, 1};
  if (probe == StepProbe::kDecodeOnly && decode >= UsualDecodeRows(config_.mixed_step_tokens) - kUsualDecodeSlack) {
    return {0, 0};
  }
  return {free_rows, kUnlimited};
}

void Scheduler::SchedulePrefills(SchedulePlan& plan, absl::Time now, int32_t prefill_budget, int32_t max_items) {
  const int32_t bs = config_.block_size;
  int32_t items = 0;
  // Tokens left: the prefill budget and the step's max_batched_tokens, and none once
  // max_items prefill items are planned.
  auto budget = [&] {
    if (items >= max_items) return 0;
    return std::min(prefill_budget - plan.num_prefill_tokens, config_.max_batched_tokens - plan.num_tokens());
  };
  // Running sequences part-way through their (re)computation: next chunk, oldest first.
  // A chunk shrinks to the blocks that are free; with none, the newest running sequence
  // (maybe this one) is preempted, as for a decode.
  for (size_t i = 0; i < running_.size() && budget() > 0; ++i) {
    Sequence& s = *running_[i];
    if (DecodeReady(s)) continue;
    bool self_preempted = false;
    while (Capacity(s, pool_.num_free(), bs) < 1) {
      self_preempted = (i + 1 == running_.size());
      PreemptNewest(plan);
      if (self_preempted) break;
    }
    if (self_preempted) break;
    const int64_t chunk = std::min<int64_t>({s.num_uncomputed(), config_.max_prefill_chunk, budget(),
                                             Capacity(s, pool_.num_free(), bs)});
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
    const int32_t n = std::min({s.num_uncomputed(), config_.max_prefill_chunk, budget()});
    const int32_t need = BlocksNeeded(s, n, bs);
    if (need > pool_.num_free()) break;
    MustAllocate(pool_, need, s.block_table);
    if (s.state == SequenceState::kWaiting) --num_never_scheduled_;
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
  pool_.ReleaseAll(victim->block_table);
  victim->num_computed = 0;
  victim->state = SequenceState::kPreempted;
  ++victim->num_preemptions;
  ++num_preemptions_;
  plan.preempted.push_back(victim->id);
  waiting_.push_front(std::move(victim));
}

}  // namespace llmserve
