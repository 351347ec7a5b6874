// Scheduler: preemption and resumption. The same workload runs once with a pool so small
// that preemption must happen and once with a huge pool; every sequence's output must be
// identical (and equal to the fake model's unbatched reference), under both step policies.
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/scheduler.h"
#include "tests/util/scheduler_harness.h"

namespace llmserve {
namespace {

using ::llmserve::testing::RunReference;
using ::llmserve::testing::SchedulerHarness;

struct Spec {
  int64_t id;
  int32_t prompt_len;
  int32_t max_tokens;
  int arrive_step;  // added before this step
};

std::vector<Spec> Workload(uint32_t seed, int n, int32_t max_len) {
  std::mt19937 rng(seed);
  std::vector<Spec> out;
  for (int i = 0; i < n; ++i) {
    const int32_t prompt = 1 + static_cast<int32_t>(rng() % static_cast<uint32_t>(max_len - 1));
    const int32_t mt = 1 + static_cast<int32_t>(rng() % static_cast<uint32_t>(max_len - prompt));
    out.push_back({i + 1, prompt, mt, i < n / 2 ? 0 : static_cast<int>(rng() % 8)});
  }
  return out;
}

struct RunResult {
  std::map<int64_t, std::vector<int32_t>> generated;
  int64_t preemptions = 0;
  int steps = 0;
};

RunResult RunWorkload(const SchedulerConfig& cfg, const std::vector<Spec>& specs) {
  RunResult r;
  SchedulerHarness h(cfg);
  size_t added = 0;
  for (int step = 0; step < 100000 && !::testing::Test::HasFailure(); ++step) {
    for (const Spec& s : specs) {
      if (s.arrive_step == step) {
        EXPECT_TRUE(h.Add(s.id, s.prompt_len, s.max_tokens).ok()) << s.id;
        ++added;
      }
    }
    if (added == specs.size() && h.sched().num_running() + h.sched().num_waiting() == 0) break;
    h.Step();
    ++r.steps;
  }
  EXPECT_EQ(h.finished().size(), specs.size());
  EXPECT_EQ(h.sched().blocks().num_used(), 0);
  for (const auto& [id, seq] : h.finished()) {
    EXPECT_EQ(seq->state, SequenceState::kFinishedLength) << id;
    const auto ref = RunReference(seq->prompt, seq->stop, cfg.eos_ids, cfg.max_context, h.pick());
    EXPECT_EQ(seq->generated, ref.generated) << "sequence " << id << " differs from the unbatched reference";
    r.generated[id] = seq->generated;
  }
  r.preemptions = h.sched().num_preemptions();
  return r;
}

struct PreemptCase {
  const char* name;
  StepPolicy policy;
  int32_t block_size;
  int32_t chunk;
  int32_t max_running;
  int32_t budget;
};

class SchedulerPreemptionTest : public ::testing::TestWithParam<PreemptCase> {};

TEST_P(SchedulerPreemptionTest, TinyPoolOutputEqualsHugePool) {
  const PreemptCase& tc = GetParam();
  constexpr int32_t kMaxLen = 48;
  int64_t total_preemptions = 0;
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    const std::vector<Spec> specs = Workload(seed, 16, kMaxLen);
    SchedulerConfig cfg;
    cfg.block_size = tc.block_size;
    cfg.max_running = tc.max_running;
    cfg.max_batched_tokens = tc.budget;
    cfg.max_prefill_chunk = tc.chunk;
    cfg.max_context = kMaxLen;
    cfg.eos_ids = {2};
    cfg.step_policy = tc.policy;
    cfg.max_decode_stall = 2;
    cfg.num_blocks = 100000;
    const RunResult huge = RunWorkload(cfg, specs);
    EXPECT_EQ(huge.preemptions, 0);
    cfg.num_blocks = (kMaxLen + tc.block_size - 1) / tc.block_size;  // one longest request
    const RunResult tiny = RunWorkload(cfg, specs);
    ASSERT_FALSE(HasFailure());
    EXPECT_EQ(tiny.generated, huge.generated);
    total_preemptions += tiny.preemptions;
  }
  EXPECT_GT(total_preemptions, 0) << "the tiny pool never preempted: the test proves nothing";
}

const PreemptCase kPreemptCases[] = {
    {"mixed_whole_prompts", StepPolicy::kMixed, 4, 64, 8, 64},
    {"mixed_chunked", StepPolicy::kMixed, 4, 5, 8, 16},
    {"mixed_block_1", StepPolicy::kMixed, 1, 8, 6, 12},
    {"mixed_block_16", StepPolicy::kMixed, 16, 16, 8, 32},
    {"separate_whole_prompts", StepPolicy::kSeparate, 4, 64, 8, 64},
    {"separate_chunked", StepPolicy::kSeparate, 4, 5, 8, 16},
};

INSTANTIATE_TEST_SUITE_P(Pools, SchedulerPreemptionTest, ::testing::ValuesIn(kPreemptCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace llmserve
