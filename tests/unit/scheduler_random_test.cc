// Scheduler: randomized runs. Hundreds of sequences with random lengths, stop settings
// and arrival times, random aborts, random pool sizes, budgets and step policies; the
// harness checks every invariant after every step. Each run must end with every block
// free and every sequence finished exactly once, with the unbatched reference's output
// (a prefix of it for aborted sequences). Prompts often start with one of a few shared
// prefixes, under one of two cache salts, so that prefix caching shares, evicts and
// re-shares blocks; some runs use a weak block hash whose collisions the pool must catch.
#include <cstdio>
#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/scheduler.h"
#include "tests/util/scheduler_harness.h"

namespace llmserve {
namespace {

using ::llmserve::testing::PrefixHash;
using ::llmserve::testing::RunReference;
using ::llmserve::testing::SchedulerHarness;

constexpr int32_t kVocab = 40;  // small: EOS (2) comes up now and then
constexpr int32_t kContext = 64;

struct Pending {
  int64_t id;
  std::vector<int32_t> prompt;
  StopConditions stop;
  std::string salt;
};

// A hash that collides all the time: keys depend on the first token and the parent only.
uint64_t WeakHash(uint64_t parent, std::span<const int32_t> tokens) {
  return (parent * 31 + static_cast<uint64_t>(tokens[0])) % 7;
}

int32_t Uniform(std::mt19937& rng, int32_t lo, int32_t hi) {  // [lo, hi]
  return std::uniform_int_distribution<int32_t>(lo, hi)(rng);
}

SchedulerConfig RandomConfig(std::mt19937& rng) {
  SchedulerConfig c;
  const int32_t sizes[] = {1, 2, 4, 8, 16};
  c.block_size = sizes[Uniform(rng, 0, 4)];
  c.num_blocks = Uniform(rng, (24 + c.block_size - 1) / c.block_size, (96 + c.block_size - 1) / c.block_size);
  c.max_running = Uniform(rng, 1, 8);
  c.max_batched_tokens = Uniform(rng, c.max_running, 48);
  c.max_prefill_chunk = Uniform(rng, 1, c.max_batched_tokens);
  c.max_waiting = Uniform(rng, 1, 20);
  c.max_context = kContext;
  c.eos_ids = {2};
  c.step_policy = Uniform(rng, 0, 1) ? StepPolicy::kSeparate : StepPolicy::kMixed;
  c.max_decode_stall = Uniform(rng, 1, 4);
  c.prefill_spread_steps = Uniform(rng, 0, 1) ? 0 : Uniform(rng, 1, 8);
  c.mixed_step_tokens = Uniform(rng, 1, 24);
  c.prefix_caching = Uniform(rng, 0, 3) != 0;
  if (Uniform(rng, 0, 3) == 0) c.block_hash = WeakHash;
  return c;
}

Pending RandomRequest(std::mt19937& rng, int64_t id) {
  Pending p;
  p.id = id;
  const int32_t total = Uniform(rng, 2, kContext + 4);  // now and then beyond the context
  const int32_t prompt = Uniform(rng, 1, total - 1);
  // Half the prompts start with one of three fixed prefixes (the system prompts).
  const int32_t shared = Uniform(rng, 0, 5);
  for (int32_t i = 0; i < prompt; ++i) {
    p.prompt.push_back(shared < 3 && i < 40 ? (shared * 11 + i * 7) % kVocab : Uniform(rng, 0, kVocab - 1));
  }
  p.salt = Uniform(rng, 0, 3) == 0 ? "tenant-b" : "";
  p.stop.max_tokens = total - prompt;
  p.stop.ignore_eos = Uniform(rng, 0, 4) == 0;
  if (Uniform(rng, 0, 2) == 0) {
    for (int i = Uniform(rng, 1, 2); i > 0; --i) p.stop.stop_token_ids.push_back(Uniform(rng, 0, kVocab - 1));
  }
  return p;
}

// The code Add must return for `p` in the scheduler's current state.
absl::StatusCode ExpectedAddCode(const Scheduler& s, const Pending& p) {
  const SchedulerConfig& c = s.config();
  const int64_t total = static_cast<int64_t>(p.prompt.size()) + p.stop.max_tokens;
  if (total > c.max_context || (total + c.block_size - 1) / c.block_size > c.num_blocks) {
    return absl::StatusCode::kInvalidArgument;
  }
  int32_t never_scheduled = 0;
  for (const Sequence* q : s.Sequences()) never_scheduled += q->state == SequenceState::kWaiting;
  return never_scheduled >= c.max_waiting ? absl::StatusCode::kResourceExhausted : absl::StatusCode::kOk;
}

// What a run went through, so the test can show it covered the interesting paths.
struct Coverage {
  int64_t preemptions = 0, refused_full = 0, refused_invalid = 0, aborts = 0, separate_runs = 0;
  int64_t hit_tokens = 0, evictions = 0, rejected = 0, copies = 0;
  std::map<SequenceState, int> finishes;
};

void RandomRun(uint32_t seed, int num_requests, Coverage& cov) {
  std::mt19937 rng(seed);
  const SchedulerConfig cfg = RandomConfig(rng);
  SCOPED_TRACE(::testing::Message() << "seed " << seed << " block_size " << cfg.block_size << " blocks "
                                    << cfg.num_blocks << " max_running " << cfg.max_running << " budget "
                                    << cfg.max_batched_tokens << " chunk " << cfg.max_prefill_chunk << " policy "
                                    << StepPolicyName(cfg.step_policy) << " stall " << cfg.max_decode_stall);
  ASSERT_TRUE(cfg.Validate().ok());
  SchedulerHarness h(cfg, kVocab);
  h.set_pick([](uint64_t hash, const std::vector<int32_t>&) { return static_cast<int32_t>(hash % kVocab); });

  std::vector<Pending> pending;
  for (int i = 0; i < num_requests; ++i) pending.push_back(RandomRequest(rng, i + 1));
  std::map<int64_t, Pending> accepted;
  std::map<int64_t, bool> aborted;
  size_t next = 0;
  int stall = 0;
  for (int step = 0; step < 200000; ++step) {
    // Arrivals: a few per step; a refused (RESOURCE_EXHAUSTED) request retries later.
    for (int k = Uniform(rng, 0, 3); k > 0 && next < pending.size(); --k) {
      const Pending& p = pending[next];
      const absl::StatusCode want = ExpectedAddCode(h.sched(), p);
      EXPECT_EQ(h.Add(p.id, p.prompt, p.stop, p.salt).code(), want) << "request " << p.id;
      cov.refused_invalid += want == absl::StatusCode::kInvalidArgument;
      if (want == absl::StatusCode::kResourceExhausted) {
        ++cov.refused_full;
        break;
      }
      if (want == absl::StatusCode::kOk) accepted[p.id] = p;
      ++next;
    }
    // Random aborts of any held sequence (waiting, preempted or running).
    if (Uniform(rng, 0, 19) == 0) {
      const std::vector<const Sequence*> held = h.sched().Sequences();
      if (!held.empty()) {
        const int64_t id = held[static_cast<size_t>(Uniform(rng, 0, static_cast<int32_t>(held.size()) - 1))]->id;
        const SequenceState states[] = {SequenceState::kFinishedCancelled, SequenceState::kFinishedDeadline,
                                        SequenceState::kFinishedStopString, SequenceState::kFinishedError};
        EXPECT_TRUE(h.Abort(id, states[Uniform(rng, 0, 3)]));
        aborted[id] = true;
        ++cov.aborts;
      }
    }
    if (::testing::Test::HasFailure()) return;
    const bool held = h.sched().num_running() + h.sched().num_waiting() > 0;
    if (!held && next == pending.size()) break;
    const std::string plan = h.Step();
    if (held) {
      EXPECT_FALSE(plan.empty()) << "empty plan while sequences are held";
    }
    // kSeparate: decodes wait at most max_decode_stall steps in a row.
    if (h.last_decode_tokens() > 0 || h.last_decoders_skipped() == 0) {
      stall = 0;
    } else if (++stall > cfg.max_decode_stall) {
      ADD_FAILURE() << "decodes stalled " << stall << " steps at step " << h.step();
    }
    if (::testing::Test::HasFailure()) return;
  }
  cov.preemptions += h.sched().num_preemptions();
  cov.separate_runs += cfg.step_policy == StepPolicy::kSeparate;
  cov.hit_tokens += h.sched().prefix_hit_tokens();
  cov.evictions += h.sched().blocks().num_evictions();
  cov.rejected += h.sched().prefix_rejected_hits();
  cov.copies += h.num_copies();
  EXPECT_EQ(h.sched().blocks().num_free() + h.sched().blocks().num_cached(), cfg.num_blocks);
  for (const auto& [id, f] : h.finished()) ++cov.finishes[f->state];
  EXPECT_EQ(next, pending.size());
  EXPECT_EQ(h.sched().num_running() + h.sched().num_waiting(), 0);
  EXPECT_EQ(h.sched().blocks().num_used(), 0);
  EXPECT_EQ(h.finished().size(), accepted.size());
  for (const auto& [id, p] : accepted) {
    const Sequence* f = h.Finished(id);
    ASSERT_NE(f, nullptr) << "request " << id << " never finished";
    const auto ref = RunReference(p.prompt, p.stop, cfg.eos_ids, cfg.max_context, h.pick());
    if (aborted.count(id)) {
      ASSERT_LE(f->generated.size(), ref.generated.size()) << id;
      EXPECT_TRUE(std::equal(f->generated.begin(), f->generated.end(), ref.generated.begin())) << id;
    } else {
      EXPECT_EQ(f->state, ref.state) << id << ": " << SequenceStateName(f->state);
      EXPECT_EQ(f->generated, ref.generated) << id;
    }
  }
}

TEST(SchedulerRandomTest, RunsToCompletionWithInvariants) {
  Coverage cov;
  for (uint32_t seed = 1; seed <= 24; ++seed) {
    RandomRun(seed, 60, cov);
    if (HasFailure()) return;
  }
  EXPECT_GT(cov.preemptions, 0);
  EXPECT_GT(cov.refused_full, 0);
  EXPECT_GT(cov.refused_invalid, 0);
  EXPECT_GT(cov.aborts, 0);
  EXPECT_GT(cov.separate_runs, 0);
  EXPECT_LT(cov.separate_runs, 24);
  EXPECT_GT(cov.hit_tokens, 0);
  EXPECT_GT(cov.evictions, 0);
  EXPECT_GT(cov.rejected, 0);
  EXPECT_GT(cov.copies, 0);
  for (SequenceState s : {SequenceState::kFinishedEos, SequenceState::kFinishedStopToken,
                          SequenceState::kFinishedLength, SequenceState::kFinishedCancelled}) {
    EXPECT_GT(cov.finishes[s], 0) << SequenceStateName(s);
  }
  std::printf("random runs: %lld preemptions, %lld full refusals, %lld invalid, %lld aborts, %lld separate runs,"
              " %d eos, %d stop ids, %d length, %lld cache-hit tokens, %lld evictions, %lld rejected hits,"
              " %lld partial-block copies\n",
              static_cast<long long>(cov.preemptions), static_cast<long long>(cov.refused_full),
              static_cast<long long>(cov.refused_invalid), static_cast<long long>(cov.aborts),
              static_cast<long long>(cov.separate_runs), cov.finishes[SequenceState::kFinishedEos],
              cov.finishes[SequenceState::kFinishedStopToken], cov.finishes[SequenceState::kFinishedLength],
              static_cast<long long>(cov.hit_tokens), static_cast<long long>(cov.evictions),
              static_cast<long long>(cov.rejected), static_cast<long long>(cov.copies));
}

TEST(SchedulerRandomTest, FakeModelHashIsPrefixSensitive) {
  EXPECT_NE(PrefixHash({1, 2, 3}), PrefixHash({1, 3, 2}));
  EXPECT_NE(PrefixHash({1, 2}), PrefixHash({1, 2, 0}));
  EXPECT_EQ(PrefixHash({5, 6}), PrefixHash({5, 6}));
}

}  // namespace
}  // namespace llmserve
