// Scheduler: configuration, admission control, results (Update) and early ends (Finish).
// Step planning (Schedule) is in scheduler_plan.cc.
#include "scheduler/scheduler.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace llmserve {
namespace {

// A broken engine/scheduler contract: continuing would corrupt some sequence's cache.
[[noreturn]] void SchedulerBug(const char* what) {
  std::fprintf(stderr, "llmserve scheduler bug: %s\n", what);
  std::abort();
}

absl::Status Bad(const char* field, const std::string& rule, int64_t got) {
  return absl::InvalidArgumentError(absl::StrCat("SchedulerConfig.", field, " must be ", rule, ", got ", got));
}

// The terminal state for sampled `id`, or kRunning when it is an ordinary token.
SequenceState StopIdState(const Sequence& s, int32_t id, const std::vector<int32_t>& eos_ids) {
  if (!s.stop.ignore_eos && std::find(eos_ids.begin(), eos_ids.end(), id) != eos_ids.end()) {
    return SequenceState::kFinishedEos;
  }
  const auto& ids = s.stop.stop_token_ids;
  if (std::find(ids.begin(), ids.end(), id) != ids.end()) return SequenceState::kFinishedStopToken;
  return SequenceState::kRunning;
}

}  // namespace

const char* StepPolicyName(StepPolicy p) { return p == StepPolicy::kSeparate ? "separate" : "mixed"; }

absl::StatusOr<StepPolicy> ParseStepPolicy(std::string_view s) {
  if (s == "mixed") return StepPolicy::kMixed;
  if (s == "separate") return StepPolicy::kSeparate;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown step policy \"", std::string(s), "\" (expected mixed or separate)"));
}

absl::Status SchedulerConfig::Validate() const {
  if (block_size < 1 || block_size > 1024) return Bad("block_size", "in 1..1024", block_size);
  if (num_blocks < 1) return Bad("num_blocks", ">= 1", num_blocks);
  if (max_running < 1) return Bad("max_running", ">= 1", max_running);
  if (max_batched_tokens < max_running) {
    return Bad("max_batched_tokens", absl::StrCat(">= max_running (", max_running, ")"), max_batched_tokens);
  }
  if (max_prefill_chunk < 1 || max_prefill_chunk > max_batched_tokens) {
    return Bad("max_prefill_chunk", absl::StrCat("in 1..max_batched_tokens (", max_batched_tokens, ")"),
               max_prefill_chunk);
  }
  if (max_waiting < 1) return Bad("max_waiting", ">= 1", max_waiting);
  if (max_context < 1) return Bad("max_context", ">= 1", max_context);
  for (int32_t id : eos_ids) {
    if (id < 0) return Bad("eos_ids", ">= 0", id);
  }
  if (step_policy != StepPolicy::kMixed && step_policy != StepPolicy::kSeparate) {
    return Bad("step_policy", "mixed or separate", static_cast<int64_t>(step_policy));
  }
  if (max_decode_stall < 1) return Bad("max_decode_stall", ">= 1", max_decode_stall);
  if (prefill_spread_steps < 0) return Bad("prefill_spread_steps", ">= 0", prefill_spread_steps);
  if (mixed_step_tokens < 1) return Bad("mixed_step_tokens", ">= 1", mixed_step_tokens);
  if (prompt_pack_rows < 0) return Bad("prompt_pack_rows", ">= 0", prompt_pack_rows);
  if (block_hash == nullptr) return absl::InvalidArgumentError("SchedulerConfig.block_hash must be set");
  return absl::OkStatus();
}

int32_t SchedulePlan::num_samples() const {
  return static_cast<int32_t>(std::count_if(work.begin(), work.end(), [](const ScheduledWork& w) { return w.sample; }));
}

PrefillPolicyConfig SchedulerConfig::prefill_policy() const {
  PrefillPolicyConfig p;
  p.max_decode_stall = max_decode_stall;
  p.rows = mixed_step_tokens;
  p.horizon = prefill_spread_steps > 0 ? prefill_spread_steps : p.horizon;
  if (step_policy == StepPolicy::kSeparate) {
    p.kind = PrefillPolicyKind::kSeparate;
  } else {
    p.kind = prefill_spread_steps > 0 ? PrefillPolicyKind::kPiggyback : PrefillPolicyKind::kBulk;
  }
  return p;
}

void SchedulerConfig::set_prefill_policy(const PrefillPolicyConfig& p) {
  switch (p.kind) {
    case PrefillPolicyKind::kSeparate:
      step_policy = StepPolicy::kSeparate;
      max_decode_stall = p.max_decode_stall;
      return;
    case PrefillPolicyKind::kPiggyback:
      step_policy = StepPolicy::kMixed;
      prefill_spread_steps = p.horizon;
      mixed_step_tokens = p.rows;
      return;
    case PrefillPolicyKind::kBulk: break;
  }
  step_policy = StepPolicy::kMixed;
  prefill_spread_steps = 0;
}

Scheduler::Scheduler(const SchedulerConfig& config)
    : config_(config),
      policy_(MakePrefillPolicy(config.prefill_policy())),
      pool_(config.num_blocks, config.block_size),
      admission_(config) {}

absl::Status Scheduler::Add(std::unique_ptr<Sequence> seq, absl::Time now) {
  if (seq == nullptr) return absl::InvalidArgumentError("null sequence");
  if (!seq->generated.empty() || !seq->block_table.empty()) {
    return absl::InvalidArgumentError("a new sequence must have no generated ids and no blocks");
  }
  if (absl::Status s = admission_.Admit(static_cast<int64_t>(seq->prompt.size()), seq->stop.max_tokens); !s.ok()) {
    return s;
  }
  AddAdmitted(std::move(seq), now);
  return absl::OkStatus();
}

void Scheduler::AddAdmitted(std::unique_ptr<Sequence> seq, absl::Time now) {
  if (seq == nullptr || seq->prompt.empty() || !seq->generated.empty() || !seq->block_table.empty()) {
    SchedulerBug("AddAdmitted: not a new, admitted sequence");
  }
  seq->state = SequenceState::kWaiting;
  seq->num_computed = 0;
  seq->times = SequenceTimes{};
  seq->times.arrival = now;
  seq->block_keys.clear();
  seq->num_registered_blocks = 0;
  seq->num_cached_tokens = 0;
  if (config_.prefix_caching) ExtendKeys(*seq, seq->num_tokens());
  waiting_.push_back(std::move(seq));
}

std::vector<std::unique_ptr<Sequence>> Scheduler::Update(const SchedulePlan& plan, std::span<const int32_t> sampled,
                                                         absl::Time now) {
  if (sampled.size() != static_cast<size_t>(plan.num_samples())) SchedulerBug("Update: wrong number of sampled ids");
  std::vector<std::unique_ptr<Sequence>> done;
  size_t next = 0;
  for (const ScheduledWork& w : plan.work) {
    Sequence& s = *w.seq;
    if (s.state != SequenceState::kRunning || w.start != s.num_computed || w.num_tokens < 1 ||
        w.start + w.num_tokens > s.num_tokens()) {
      SchedulerBug("Update: plan does not match the sequence (Finish between Schedule and Update?)");
    }
    s.num_computed += w.num_tokens;
    RegisterComputed(s);
    if (!w.sample) continue;
    if (s.num_computed != s.num_tokens()) SchedulerBug("Update: sampling item does not end the sequence");
    const int32_t id = sampled[next++];
    if (s.times.first_token == absl::InfinitePast()) s.times.first_token = now;
    s.times.last_token = now;
    SequenceState end = StopIdState(s, id, config_.eos_ids);
    if (end == SequenceState::kRunning) {
      s.generated.push_back(id);
      if (static_cast<int32_t>(s.generated.size()) >= s.stop.max_tokens || s.num_tokens() >= config_.max_context) {
        end = SequenceState::kFinishedLength;
      }
    }
    if (end == SequenceState::kRunning) continue;
    auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& p) { return p.get() == &s; });
    if (it == running_.end()) SchedulerBug("Update: sequence not running");
    ReleaseBlocks(s, /*keep_tail=*/true);
    s.state = end;
    s.times.finished = now;
    done.push_back(std::move(*it));
  }
  if (!done.empty()) running_.erase(std::remove(running_.begin(), running_.end(), nullptr), running_.end());
  return done;
}

std::unique_ptr<Sequence> Scheduler::Finish(int64_t seq_id, SequenceState state, absl::Time now) {
  if (!IsFinished(state)) SchedulerBug("Finish: not a terminal state");
  std::unique_ptr<Sequence> seq;
  auto w = std::find_if(waiting_.begin(), waiting_.end(), [&](const auto& p) { return p->id == seq_id; });
  if (w != waiting_.end()) {
    seq = std::move(*w);
    waiting_.erase(w);
    if (seq->state == SequenceState::kWaiting) admission_.Release();
  } else {
    auto r = std::find_if(running_.begin(), running_.end(), [&](const auto& p) { return p->id == seq_id; });
    if (r == running_.end()) return nullptr;
    seq = std::move(*r);
    running_.erase(r);
  }
  // After a failed step, keep no more of its sequences than is registered already: the
  // failure's cause may lie in their KV.
  ReleaseBlocks(*seq, /*keep_tail=*/state != SequenceState::kFinishedError);
  seq->state = state;
  seq->times.finished = now;
  return seq;
}

void Scheduler::StopStringFound(Sequence& seq) const {
  if (seq.state == SequenceState::kFinishedLength) seq.state = SequenceState::kFinishedStopString;
}

std::vector<const Sequence*> Scheduler::Sequences() const {
  std::vector<const Sequence*> out;
  out.reserve(waiting_.size() + running_.size());
  for (const auto& s : waiting_) out.push_back(s.get());
  for (const auto& s : running_) out.push_back(s.get());
  return out;
}

}  // namespace llmserve
