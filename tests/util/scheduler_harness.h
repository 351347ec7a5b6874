// SchedulerHarness: drives a Scheduler step by step with a fake model (no tensors) and
// checks the scheduler's invariants after every step.
//
// The fake model keeps a simulated paged KV cache: feeding position p of sequence s
// writes (hash of s's tokens 0..p, p, token) into slot p % block_size of block
// block_table[p / block_size] — like real KV, a slot's content depends on the whole
// prefix. A sampling item then reads positions 0 .. end-1 back through the block table,
// fails the test if any slot does not hold what that sequence's prefix would (a block
// reused while still owned, a lost or skipped token, a missing recompute, a prefix-cache
// hit with other KV), and returns a hash of the prefix. Writing into a block that is
// shared or registered in the prefix cache fails the test too.
// The "sampled" id is therefore a pure function of prompt ++ generated, so a preempted
// and recomputed sequence must produce exactly the output of an unpreempted run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "scheduler/scheduler.h"

namespace llmserve::testing {

// Hash of the token prefix (the fake model's "logits").
inline uint64_t PrefixHash(const std::vector<int32_t>& tokens) {
  uint64_t h = 1469598103934665603ull;
  for (size_t p = 0; p < tokens.size(); ++p) {
    h ^= static_cast<uint64_t>(tokens[p]) * 31 + p;
    h *= 1099511628211ull;
  }
  return h ^ (h >> 29);
}

// Maps a prefix hash to the sampled id. The default avoids `avoid` (e.g. EOS).
using PickFn = std::function<int32_t(uint64_t hash, const std::vector<int32_t>& prefix)>;

inline PickFn AvoidingPick(int32_t vocab, int32_t avoid) {
  return [vocab, avoid](uint64_t h, const std::vector<int32_t>&) {
    auto id = static_cast<int32_t>(h % static_cast<uint64_t>(vocab));
    return id == avoid ? (id + 1) % vocab : id;
  };
}

// A running sequence that feeds its last sampled token next (mirrors the scheduler's rule).
inline bool IsDecodeReady(const Sequence& s) {
  return s.state == SequenceState::kRunning && s.num_uncomputed() == 1 &&
         s.num_computed >= static_cast<int32_t>(s.prompt.size());
}

// What an unpreempted, unbatched run produces: generated ids and the final state.
struct Reference {
  std::vector<int32_t> generated;
  SequenceState state = SequenceState::kRunning;
};

inline Reference RunReference(const std::vector<int32_t>& prompt, const StopConditions& stop,
                              const std::vector<int32_t>& eos_ids,
                              int32_t max_context, const PickFn& pick) {
  Reference r;
  std::vector<int32_t> tokens = prompt;
  while (r.state == SequenceState::kRunning) {
    const int32_t id = pick(PrefixHash(tokens), tokens);
    const auto& stops = stop.stop_token_ids;
    if (!stop.ignore_eos && std::find(eos_ids.begin(), eos_ids.end(), id) != eos_ids.end()) {
      r.state = SequenceState::kFinishedEos;
    } else if (std::find(stops.begin(), stops.end(), id) != stops.end()) {
      r.state = SequenceState::kFinishedStopToken;
    } else {
      r.generated.push_back(id);
      tokens.push_back(id);
      if (static_cast<int32_t>(r.generated.size()) >= stop.max_tokens ||
          static_cast<int32_t>(tokens.size()) >= max_context) {
        r.state = SequenceState::kFinishedLength;
      }
    }
  }
  return r;
}

// Plan as text: "D<id>@<start>" decode, "P<id>@<start>+<n>[s]" prefill ('s': samples),
// then "C<src>><dst>" per block copy, then "!<id>" per preempted sequence. Items are
// space-separated.
inline std::string PlanString(const SchedulePlan& plan) {
  std::string out;
  for (const ScheduledWork& w : plan.work) {
    if (!out.empty()) out += ' ';
    if (w.kind == ScheduledWork::Kind::kDecode) {
      absl::StrAppend(&out, "D", w.seq->id, "@", w.start);
    } else {
      absl::StrAppend(&out, "P", w.seq->id, "@", w.start, "+", w.num_tokens, w.sample ? "s" : "");
    }
  }
  for (const BlockCopy& c : plan.copies) absl::StrAppend(&out, out.empty() ? "" : " ", "C", c.src, ">", c.dst);
  for (const int64_t id : plan.preempted) absl::StrAppend(&out, out.empty() ? "" : " ", "!", id);
  return out;
}

// Checks what must hold between steps: block accounting, ownership, coverage, limits.
inline void CheckInvariants(const Scheduler& sched, const std::string& where) {
  SCOPED_TRACE(where);
  const BlockPool& pool = sched.blocks();
  const SchedulerConfig& cfg = sched.config();
  // The scheduler's own check: used + free + cached = total, refcounts = tables holding
  // each block, written blocks unshared.
  const absl::Status own = sched.CheckInvariants();
  EXPECT_TRUE(own.ok()) << own;
  EXPECT_EQ(pool.num_used() + pool.num_free() + pool.num_cached(), pool.num_total());
  EXPECT_EQ(pool.num_total(), cfg.num_blocks);
  if (!cfg.prefix_caching) {
    EXPECT_EQ(pool.num_cached(), 0);
  }
  EXPECT_LE(sched.num_running(), cfg.max_running);
  const std::vector<const Sequence*> seqs = sched.Sequences();
  EXPECT_EQ(static_cast<int32_t>(seqs.size()), sched.num_running() + sched.num_waiting());
  std::map<int32_t, int32_t> holders;
  std::set<int64_t> ids;
  uint64_t last_admit = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const Sequence& s = *seqs[i];
    SCOPED_TRACE(absl::StrCat("sequence ", s.id, " (", SequenceStateName(s.state), ")"));
    EXPECT_TRUE(ids.insert(s.id).second) << "sequence held twice";
    const bool waiting = i < static_cast<size_t>(sched.num_waiting());
    if (waiting) {
      EXPECT_TRUE(s.state == SequenceState::kWaiting || s.state == SequenceState::kPreempted);
      EXPECT_TRUE(s.block_table.empty());
      EXPECT_EQ(s.num_computed, 0);
      continue;
    }
    EXPECT_EQ(s.state, SequenceState::kRunning);
    EXPECT_GT(s.admit_order, last_admit) << "running sequences out of admission order";
    last_admit = s.admit_order;
    EXPECT_GE(s.num_uncomputed(), 1);
    // Exactly the blocks the computed tokens need (lazy allocation); only registered
    // (full, computed) leading blocks may be shared.
    const int32_t need = (s.num_computed + cfg.block_size - 1) / cfg.block_size;
    EXPECT_EQ(static_cast<int32_t>(s.block_table.size()), need) << "num_computed " << s.num_computed;
    for (size_t j = 0; j < s.block_table.size(); ++j) {
      const int32_t b = s.block_table[j];
      EXPECT_TRUE(b >= 0 && b < pool.num_total()) << "block " << b;
      ++holders[b];
      if (static_cast<int32_t>(j) >= s.num_registered_blocks) {
        EXPECT_EQ(pool.ref_count(b), 1) << "block " << b;
      }
    }
  }
  for (const auto& [b, n] : holders) EXPECT_EQ(pool.ref_count(b), n) << "block " << b;
  EXPECT_EQ(static_cast<int32_t>(holders.size()), pool.num_used()) << "a used block is in no table";
}

// Checks a freshly scheduled plan against the scheduler's state before Update.
inline void CheckPlan(const Scheduler& sched, const SchedulePlan& plan, const std::string& where) {
  SCOPED_TRACE(absl::StrCat(where, " plan [", PlanString(plan), "]"));
  const SchedulerConfig& cfg = sched.config();
  int32_t dec = 0, pre = 0;
  bool seen_prefill = false;
  uint64_t last_decode_admit = 0;
  std::set<const Sequence*> in_plan;
  for (const ScheduledWork& w : plan.work) {
    const Sequence& s = *w.seq;
    EXPECT_TRUE(in_plan.insert(&s).second) << "sequence " << s.id << " twice in a plan";
    EXPECT_EQ(s.state, SequenceState::kRunning);
    EXPECT_EQ(w.start, s.num_computed);
    EXPECT_GE(w.num_tokens, 1);
    EXPECT_LE(w.start + w.num_tokens, s.num_tokens());
    EXPECT_EQ(w.sample, w.start + w.num_tokens == s.num_tokens());
    const int32_t need = (w.start + w.num_tokens + cfg.block_size - 1) / cfg.block_size;
    EXPECT_EQ(static_cast<int32_t>(s.block_table.size()), need) << "sequence " << s.id << " block table";
    if (w.kind == ScheduledWork::Kind::kDecode) {
      EXPECT_FALSE(seen_prefill) << "decode after prefill";
      EXPECT_EQ(w.num_tokens, 1);
      EXPECT_TRUE(IsDecodeReady(s));
      EXPECT_GT(s.admit_order, last_decode_admit) << "decodes not oldest first";
      last_decode_admit = s.admit_order;
      dec += w.num_tokens;
    } else {
      seen_prefill = true;
      // (A sequence admitted from the prefix cache, whole blocks and maybe a partial
      // block's rows, may have only its last token left.)
      const bool from_cache = w.start > 0 && w.start / cfg.block_size == s.num_registered_blocks;
      EXPECT_TRUE(!IsDecodeReady(s) || from_cache) << "sequence " << s.id << " should decode";
      EXPECT_LE(w.num_tokens, cfg.max_prefill_chunk);
      pre += w.num_tokens;
    }
  }
  EXPECT_EQ(plan.num_decode_tokens, dec);
  EXPECT_EQ(plan.num_prefill_tokens, pre);
  EXPECT_LE(plan.num_tokens(), cfg.max_batched_tokens);
  // Every running sequence ready to decode gets its token in a mixed step or a decode step.
  if (cfg.step_policy == StepPolicy::kMixed || dec > 0) {
    for (const Sequence* s : sched.Sequences()) {
      if (IsDecodeReady(*s)) {
        EXPECT_TRUE(in_plan.count(s)) << "sequence " << s->id << " got no decode";
      }
    }
  }
  if (cfg.step_policy == StepPolicy::kSeparate) {
    EXPECT_TRUE(dec == 0 || pre == 0) << "separate step mixes kinds";
  }
  for (const int64_t id : plan.preempted) {
    bool found = false;
    for (const Sequence* s : sched.Sequences()) {
      if (s->id != id) continue;
      found = true;
      EXPECT_EQ(s->state, SequenceState::kPreempted);
    }
    EXPECT_TRUE(found) << "preempted sequence " << id << " not held";
  }
}

struct FakeKvSlot {
  uint64_t prefix = 0;  // PrefixHash of the writer's tokens 0..pos
  int32_t pos = -1;
  int32_t token = -1;
};

class SchedulerHarness {
 public:
  explicit SchedulerHarness(const SchedulerConfig& cfg, int32_t vocab = 1000)
      : cfg_(cfg), sched_(cfg), vocab_(vocab), pick_(AvoidingPick(vocab, cfg.eos_ids.empty() ? -1 : cfg.eos_ids[0])),
        cache_(static_cast<size_t>(cfg.num_blocks) * static_cast<size_t>(cfg.block_size)) {}

  Scheduler& sched() { return sched_; }
  const SchedulerConfig& config() const { return cfg_; }
  void set_pick(PickFn pick) { pick_ = std::move(pick); }
  const PickFn& pick() const { return pick_; }
  absl::Time now() const { return now_; }
  int step() const { return step_; }

  // Deterministic prompt tokens for sequence `id`.
  std::vector<int32_t> Prompt(int64_t id, int32_t len) const {
    std::vector<int32_t> p(static_cast<size_t>(len));
    for (int32_t i = 0; i < len; ++i) {
      p[static_cast<size_t>(i)] = static_cast<int32_t>((id * 7919 + i * 13 + 5) % vocab_);
    }
    return p;
  }

  absl::Status Add(int64_t id, std::vector<int32_t> prompt, StopConditions stop, std::string cache_salt = "") {
    auto seq = std::make_unique<Sequence>();
    seq->id = id;
    seq->cache_salt = std::move(cache_salt);
    seq->request_id = absl::StrCat("r", id);
    seq->prompt = std::move(prompt);
    seq->stop = std::move(stop);
    absl::Status st = sched_.Add(std::move(seq), now_);
    CheckInvariants(sched_, absl::StrCat("after Add ", id));
    return st;
  }
  absl::Status Add(int64_t id, int32_t prompt_len, int32_t max_tokens) {
    StopConditions stop;
    stop.max_tokens = max_tokens;
    return Add(id, Prompt(id, prompt_len), stop);
  }

  // Aborts `id` through Finish; true if the scheduler held it.
  bool Abort(int64_t id, SequenceState state = SequenceState::kFinishedCancelled) {
    std::unique_ptr<Sequence> s = sched_.Finish(id, state, now_);
    CheckInvariants(sched_, absl::StrCat("after Finish ", id));
    if (s == nullptr) return false;
    EXPECT_EQ(s->state, state);
    EXPECT_TRUE(s->block_table.empty());
    EXPECT_EQ(s->times.finished, now_);
    Record(std::move(s));
    return true;
  }

  // One step: Schedule, check, fake forward, Update, check. Returns the plan's text.
  std::string Step() {
    ++step_;
    const std::string where = absl::StrCat("step ", step_);
    SchedulePlan plan = sched_.Schedule(now_);
    CheckPlan(sched_, plan, where);
    const std::string text = PlanString(plan);
    copies_ += static_cast<int64_t>(plan.copies.size());
    last_decode_tokens_ = plan.num_decode_tokens;
    last_prefill_tokens_ = plan.num_prefill_tokens;
    last_decoders_skipped_ = 0;
    for (const Sequence* s : sched_.Sequences()) {
      const bool planned = std::any_of(plan.work.begin(), plan.work.end(), [&](const auto& w) { return w.seq == s; });
      if (IsDecodeReady(*s) && !planned) ++last_decoders_skipped_;
    }
    std::vector<int32_t> sampled = Forward(plan, where);
    EXPECT_EQ(static_cast<int32_t>(sampled.size()), plan.num_samples());
    now_ += absl::Milliseconds(1);
    std::vector<std::unique_ptr<Sequence>> done = sched_.Update(plan, sampled, now_);
    for (auto& s : done) {
      EXPECT_TRUE(IsFinished(s->state));
      EXPECT_TRUE(s->block_table.empty());
      EXPECT_EQ(s->times.finished, now_);
      Record(std::move(s));
    }
    CheckInvariants(sched_, where);
    return text;
  }

  // Steps until nothing is held; false (and a failure) if it takes more than max_steps.
  bool RunToCompletion(int max_steps = 100000) {
    for (int i = 0; i < max_steps; ++i) {
      if (sched_.num_running() + sched_.num_waiting() == 0) return true;
      const std::string plan = Step();
      if (plan.empty()) {
        ADD_FAILURE() << "empty plan while sequences are held";
        return false;
      }
      if (::testing::Test::HasFailure()) return false;
    }
    ADD_FAILURE() << "did not finish in " << max_steps << " steps";
    return false;
  }

  // Finished sequences by id (each recorded exactly once).
  const std::map<int64_t, std::unique_ptr<Sequence>>& finished() const { return finished_; }
  const Sequence* Finished(int64_t id) const {
    auto it = finished_.find(id);
    return it == finished_.end() ? nullptr : it->second.get();
  }
  int32_t last_decode_tokens() const { return last_decode_tokens_; }
  int32_t last_prefill_tokens() const { return last_prefill_tokens_; }
  // Sequences ready to decode that the last step left without a token.
  int32_t last_decoders_skipped() const { return last_decoders_skipped_; }
  // Block copies (cached partial blocks reused) in every plan so far.
  int64_t num_copies() const { return copies_; }

 private:
  void Record(std::unique_ptr<Sequence> s) {
    const int64_t id = s->id;
    EXPECT_TRUE(finished_.emplace(id, std::move(s)).second) << "sequence " << id << " finished twice";
  }

  // The cache slot of position `pos`; a scratch slot (and a failure) when the block
  // table does not reach it or holds a bad id.
  FakeKvSlot& Slot(const Sequence& s, int32_t pos) {
    const auto index = static_cast<size_t>(pos / cfg_.block_size);
    if (index >= s.block_table.size() || s.block_table[index] < 0 || s.block_table[index] >= cfg_.num_blocks) {
      ADD_FAILURE() << "sequence " << s.id << " has no block for position " << pos;
      return scratch_ = FakeKvSlot{};
    }
    const int32_t block = s.block_table[index];
    return cache_[static_cast<size_t>(block) * static_cast<size_t>(cfg_.block_size) +
                  static_cast<size_t>(pos % cfg_.block_size)];
  }

  std::vector<int32_t> Forward(const SchedulePlan& plan, const std::string& where) {
    const auto bs = static_cast<size_t>(cfg_.block_size);
    for (const BlockCopy& c : plan.copies) {
      EXPECT_TRUE(c.src >= 0 && c.src < cfg_.num_blocks && c.dst >= 0 && c.dst < cfg_.num_blocks) << where;
      EXPECT_EQ(sched_.blocks().ref_count(c.dst), 1) << where << ": copy into shared block " << c.dst;
      EXPECT_FALSE(sched_.blocks().registered(c.dst)) << where << ": copy into cached block " << c.dst;
      if (c.src == c.dst) continue;
      std::copy_n(cache_.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(c.src) * bs), bs,
                  cache_.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(c.dst) * bs));
    }
    for (const ScheduledWork& w : plan.work) {
      const Sequence& s = *w.seq;
      std::vector<int32_t> prefix;
      for (int32_t p = 0; p < w.start; ++p) prefix.push_back(s.token(p));
      for (int32_t p = w.start; p < w.start + w.num_tokens; ++p) {
        prefix.push_back(s.token(p));
        const auto index = static_cast<size_t>(p / cfg_.block_size);
        if (index < s.block_table.size()) {
          const int32_t b = s.block_table[index];
          EXPECT_EQ(sched_.blocks().ref_count(b), 1) << where << ": sequence " << s.id << " writes shared block " << b;
          EXPECT_FALSE(sched_.blocks().registered(b)) << where << ": sequence " << s.id << " writes cached block " << b;
        }
        Slot(s, p) = {PrefixHash(prefix), p, s.token(p)};
      }
    }
    std::vector<int32_t> sampled;
    for (const ScheduledWork& w : plan.work) {
      if (!w.sample) continue;
      const Sequence& s = *w.seq;
      std::vector<int32_t> prefix;
      for (int32_t p = 0; p < w.start + w.num_tokens; ++p) {
        prefix.push_back(s.token(p));
        const FakeKvSlot& slot = Slot(s, p);
        if (slot.prefix != PrefixHash(prefix) || slot.pos != p || slot.token != s.token(p)) {
          ADD_FAILURE() << where << ": sequence " << s.id << " position " << p << " holds (" << slot.pos << ", "
                        << slot.token << ") of another prefix instead of token " << s.token(p);
        }
      }
      sampled.push_back(pick_(PrefixHash(prefix), prefix));
    }
    return sampled;
  }

  SchedulerConfig cfg_;
  Scheduler sched_;
  int32_t vocab_;
  PickFn pick_;
  std::vector<FakeKvSlot> cache_;
  FakeKvSlot scratch_;
  absl::Time now_ = absl::FromUnixSeconds(1000);
  int step_ = 0;
  int32_t last_decode_tokens_ = 0;
  int32_t last_prefill_tokens_ = 0;
  int32_t last_decoders_skipped_ = 0;
  int64_t copies_ = 0;
  std::map<int64_t, std::unique_ptr<Sequence>> finished_;
};

}  // namespace llmserve::testing
