// Scheduler: configuration, admission control, and table-driven step-by-step plans
// (admission order, chunked prefill, token budget, decode-first, preemption, kSeparate).
// Plan text: "D<id>@<start>" decode, "P<id>@<start>+<n>[s]" prefill ('s' = samples),
// "!<id>" preempted (tests/util/scheduler_harness.h).
#include "scheduler/scheduler.h"

#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/scheduler_harness.h"

namespace llmserve {
namespace {

using ::llmserve::testing::RunReference;
using ::llmserve::testing::SchedulerHarness;

SchedulerConfig Cfg(int32_t bs, int32_t blocks, int32_t max_running, int32_t budget, int32_t chunk,
                    StepPolicy policy = StepPolicy::kMixed, int32_t stall = 4) {
  SchedulerConfig c;
  c.block_size = bs;
  c.num_blocks = blocks;
  c.max_running = max_running;
  c.max_batched_tokens = budget;
  c.max_prefill_chunk = chunk;
  c.max_context = 4096;
  c.eos_ids = {2};
  c.step_policy = policy;
  c.max_decode_stall = stall;
  c.prefill_spread_steps = 0;  // the plain budget; spreading has its own tests
  c.prefix_caching = false;    // plans recompute from 0; prefix caching has its own tests
  return c;
}

// Cfg with piggybacking (prompt tokens fill decode steps up to `target` rows while the
// pending ones fit in `steps` such steps).
SchedulerConfig Spread(SchedulerConfig c, int32_t steps, int32_t target) {
  c.prefill_spread_steps = steps;
  c.mixed_step_tokens = target;
  return c;
}

// ---------------------------------------------------------------- configuration

TEST(SchedulerConfigTest, ValidConfigPasses) {
  EXPECT_TRUE(Cfg(16, 8, 4, 64, 32).Validate().ok());
  EXPECT_TRUE(Cfg(1, 1, 1, 1, 1).Validate().ok());
  EXPECT_TRUE(Cfg(1024, 1, 8, 8, 8, StepPolicy::kSeparate, 1).Validate().ok());
}

TEST(SchedulerConfigTest, ValidateNamesTheBadField) {
  struct Case {
    const char* field;
    void (*mutate)(SchedulerConfig&);
  };
  const Case cases[] = {
      {"block_size", [](SchedulerConfig& c) { c.block_size = 0; }},
      {"block_size", [](SchedulerConfig& c) { c.block_size = 1025; }},
      {"num_blocks", [](SchedulerConfig& c) { c.num_blocks = 0; }},
      {"max_running", [](SchedulerConfig& c) { c.max_running = 0; }},
      {"max_batched_tokens", [](SchedulerConfig& c) { c.max_batched_tokens = c.max_running - 1; }},
      {"max_prefill_chunk", [](SchedulerConfig& c) { c.max_prefill_chunk = 0; }},
      {"max_prefill_chunk", [](SchedulerConfig& c) { c.max_prefill_chunk = c.max_batched_tokens + 1; }},
      {"max_waiting", [](SchedulerConfig& c) { c.max_waiting = 0; }},
      {"max_context", [](SchedulerConfig& c) { c.max_context = 0; }},
      {"eos_ids", [](SchedulerConfig& c) { c.eos_ids = {2, -2}; }},
      {"step_policy", [](SchedulerConfig& c) { c.step_policy = static_cast<StepPolicy>(7); }},
      {"max_decode_stall", [](SchedulerConfig& c) { c.max_decode_stall = 0; }},
      {"prefill_spread_steps", [](SchedulerConfig& c) { c.prefill_spread_steps = -1; }},
      {"mixed_step_tokens", [](SchedulerConfig& c) { c.mixed_step_tokens = 0; }},
  };
  for (const Case& tc : cases) {
    SchedulerConfig c = Cfg(16, 8, 4, 64, 32);
    tc.mutate(c);
    const absl::Status st = c.Validate();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << tc.field;
    EXPECT_NE(st.message().find(tc.field), std::string::npos) << st;
  }
  // The lead's default struct needs num_blocks and max_context filled in.
  EXPECT_FALSE(SchedulerConfig{}.Validate().ok());
}

TEST(StepPolicyTest, ParseAndName) {
  for (StepPolicy p : {StepPolicy::kMixed, StepPolicy::kSeparate}) {
    absl::StatusOr<StepPolicy> parsed = ParseStepPolicy(StepPolicyName(p));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, p);
  }
  EXPECT_STREQ(StepPolicyName(StepPolicy::kMixed), "mixed");
  EXPECT_STREQ(StepPolicyName(StepPolicy::kSeparate), "separate");
  for (const char* bad : {"", "Mixed", "both", "separate "}) {
    EXPECT_EQ(ParseStepPolicy(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(SequenceStateTest, NamesAndTerminalStates) {
  std::set<std::string> names;
  for (int i = 0; i <= static_cast<int>(SequenceState::kFinishedError); ++i) {
    const auto s = static_cast<SequenceState>(i);
    names.insert(SequenceStateName(s));
    EXPECT_EQ(IsFinished(s), s >= SequenceState::kFinishedEos) << SequenceStateName(s);
  }
  EXPECT_EQ(names.size(), 11u);
  EXPECT_FALSE(IsFinished(SequenceState::kPreempted));
  EXPECT_STREQ(SequenceStateName(SequenceState::kFinishedLength), "finished_length");
}

TEST(SchedulePlanTest, NumSamplesCountsSamplingItems) {
  Sequence a, b;
  SchedulePlan plan;
  plan.work = {{&a, ScheduledWork::Kind::kDecode, 4, 1, true},
               {&b, ScheduledWork::Kind::kPrefill, 0, 8, false},
               {&a, ScheduledWork::Kind::kPrefill, 0, 2, true}};
  EXPECT_EQ(plan.num_samples(), 2);
  EXPECT_EQ(SchedulePlan{}.num_samples(), 0);
}

// ---------------------------------------------------------------- Add

TEST(SchedulerAddTest, RefusesWhatCanNeverRun) {
  struct Case {
    const char* name;
    int32_t prompt_len, max_tokens;
    absl::StatusCode code;
  };
  // block_size 4 x 5 blocks = 20 tokens of cache; context 24.
  const Case cases[] = {
      {"empty prompt", 0, 4, absl::StatusCode::kInvalidArgument},
      {"max_tokens 0", 3, 0, absl::StatusCode::kInvalidArgument},
      {"beyond context", 20, 5, absl::StatusCode::kInvalidArgument},
      {"more blocks than the pool", 17, 4, absl::StatusCode::kInvalidArgument},
      {"exactly the pool", 16, 4, absl::StatusCode::kOk},
      {"tiny", 1, 1, absl::StatusCode::kOk},
  };
  int64_t id = 1;
  for (const Case& tc : cases) {
    SchedulerConfig c = Cfg(4, 5, 4, 16, 16);
    c.max_context = 24;
    SchedulerHarness h(c);
    EXPECT_EQ(h.Add(id++, tc.prompt_len, tc.max_tokens).code(), tc.code) << tc.name;
    EXPECT_EQ(h.sched().num_waiting(), tc.code == absl::StatusCode::kOk ? 1 : 0) << tc.name;
  }
  SchedulerHarness h(Cfg(4, 5, 4, 16, 16));
  EXPECT_EQ(h.sched().Add(nullptr, h.now()).code(), absl::StatusCode::kInvalidArgument);
}

TEST(SchedulerAddTest, MaxWaitingCountsOnlyNeverScheduled) {
  // Same workload as the "preempt_newest" plan below, with max_waiting 2.
  SchedulerConfig c = Cfg(2, 4, 4, 16, 16);
  c.max_waiting = 2;
  SchedulerHarness h(c);
  ASSERT_TRUE(h.Add(1, 3, 4).ok());
  ASSERT_TRUE(h.Add(2, 2, 3).ok());
  EXPECT_EQ(h.Add(9, 1, 1).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(h.Step(), "P1@0+3s P2@0+2s");
  EXPECT_EQ(h.Step(), "D1@3 D2@2");
  EXPECT_EQ(h.Step(), "D1@4 !2");  // 2 waits again, preempted: it does not count
  ASSERT_TRUE(h.Add(3, 1, 1).ok());
  ASSERT_TRUE(h.Add(4, 1, 1).ok());
  EXPECT_EQ(h.Add(5, 1, 1).code(), absl::StatusCode::kResourceExhausted);
  // Aborting a never-scheduled sequence makes room.
  ASSERT_TRUE(h.Abort(3));
  EXPECT_TRUE(h.Add(5, 1, 1).ok());
  EXPECT_TRUE(h.RunToCompletion());
  EXPECT_EQ(h.finished().size(), 5u);
}

// ---------------------------------------------------------------- step by step

struct SeqSpec {
  int64_t id;
  int32_t prompt_len;
  int32_t max_tokens;
};

struct StepCase {
  const char* name;
  SchedulerConfig cfg;
  std::vector<SeqSpec> seqs;
  std::vector<std::string> steps;  // expected plan of each step; then nothing is held
};

class SchedulerStepTest : public ::testing::TestWithParam<StepCase> {};

TEST_P(SchedulerStepTest, PlansStepByStep) {
  const StepCase& tc = GetParam();
  ASSERT_TRUE(tc.cfg.Validate().ok());
  SchedulerHarness h(tc.cfg);
  for (const SeqSpec& s : tc.seqs) ASSERT_TRUE(h.Add(s.id, s.prompt_len, s.max_tokens).ok()) << s.id;
  for (size_t i = 0; i < tc.steps.size(); ++i) {
    EXPECT_EQ(h.Step(), tc.steps[i]) << "step " << i + 1;
    if (HasFailure()) return;
  }
  EXPECT_EQ(h.sched().num_running() + h.sched().num_waiting(), 0) << "sequences left after the last step";
  EXPECT_EQ(h.sched().blocks().num_used(), 0);
  ASSERT_EQ(h.finished().size(), tc.seqs.size());
  for (const SeqSpec& s : tc.seqs) {
    const Sequence* f = h.Finished(s.id);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->state, SequenceState::kFinishedLength);
    const auto ref = RunReference(f->prompt, f->stop, tc.cfg.eos_ids, tc.cfg.max_context, h.pick());
    EXPECT_EQ(f->generated, ref.generated) << "sequence " << s.id;
  }
}

using K = StepPolicy;
const StepCase kStepCases[] = {
    {"one_sequence", Cfg(4, 8, 4, 16, 16), {{1, 3, 3}}, {"P1@0+3s", "D1@3", "D1@4"}},
    {"max_tokens_1", Cfg(4, 8, 4, 16, 16), {{1, 5, 1}, {2, 1, 1}}, {"P1@0+5s P2@0+1s"}},
    {"prompt_multiple_of_block", Cfg(4, 8, 4, 16, 16), {{1, 8, 3}}, {"P1@0+8s", "D1@8", "D1@9"}},
    {"chunked_prefill", Cfg(4, 8, 4, 16, 4), {{1, 10, 2}}, {"P1@0+4", "P1@4+4", "P1@8+2s", "D1@10"}},
    {"admission_fifo_under_budget",
     Cfg(4, 32, 4, 8, 8),
     {{1, 5, 3}, {2, 6, 2}, {3, 2, 2}},
     {"P1@0+5s P2@0+3", "D1@5 P2@3+3s P3@0+2s", "D1@6 D2@6 D3@2"}},
    {"max_running_limits_admission",
     Cfg(4, 32, 2, 16, 16),
     {{1, 2, 2}, {2, 2, 2}, {3, 2, 2}},
     {"P1@0+2s P2@0+2s", "D1@2 D2@2", "P3@0+2s", "D3@2"}},
    {"decodes_first_prefill_gets_the_rest",
     Cfg(4, 32, 4, 4, 4),
     {{1, 1, 5}, {2, 1, 5}, {3, 1, 5}, {4, 6, 1}},
     {"P1@0+1s P2@0+1s P3@0+1s P4@0+1", "D1@1 D2@1 D3@1 P4@1+1", "D1@2 D2@2 D3@2 P4@2+1",
      "D1@3 D2@3 D3@3 P4@3+1", "D1@4 D2@4 D3@4 P4@4+1", "P4@5+1s"}},
    {"head_without_blocks_is_not_overtaken",
     Cfg(4, 4, 4, 32, 32),
     {{1, 8, 4}, {2, 12, 1}, {3, 2, 1}},
     {"P1@0+8s", "D1@8", "D1@9", "D1@10", "P2@0+12s P3@0+2s"}},
    {"preempt_newest",
     Cfg(2, 4, 4, 16, 16),
     {{1, 3, 4}, {2, 2, 3}},
     {"P1@0+3s P2@0+2s", "D1@3 D2@2", "D1@4 !2", "D1@5", "P2@0+4s"}},
    {"preempt_self", Cfg(2, 3, 4, 16, 16), {{1, 3, 3}, {2, 2, 2}}, {"P1@0+3s P2@0+2s", "D1@3 !2", "D1@4", "P2@0+3s"}},
    {"preempt_mid_prefill_back_to_head",
     Cfg(4, 3, 2, 8, 4),
     {{1, 4, 3}, {2, 10, 1}, {3, 1, 1}},
     {"P1@0+4s P2@0+4", "D1@4 !2", "D1@5 P2@0+4", "P2@4+4 P3@0+1s", "P2@8+2s"}},
    {"prefill_chunk_shrinks_then_self_preempts",
     Cfg(4, 6, 2, 16, 8),
     {{1, 8, 4}, {2, 16, 1}},
     {"P1@0+8s P2@0+8", "D1@8 P2@8+4", "D1@9 !2", "D1@10 P2@0+8", "P2@8+8s"}},
    {"separate_stall_bound",
     Cfg(4, 64, 4, 8, 8, K::kSeparate, 2),
     {{1, 2, 6}, {2, 40, 1}},
     {"P1@0+2s P2@0+6", "P2@6+8", "P2@14+8", "D1@2", "P2@22+8", "P2@30+8", "D1@3", "P2@38+2s", "D1@4", "D1@5",
      "D1@6"}},
    // Piggybacking (kMinPiggybackRows = 4). H = 4, target 6: a burst that fits (16 ≤ 6·4)
    // starts one sequence per step (nothing decodes in step 1); then each step is filled
    // up to 6 rows: steps 2 and 3 take 5 prompt tokens beside one decode, step 4 four
    // beside two, step 5 the 2 that are left.
    {"piggyback_fills_decode_steps",
     Spread(Cfg(4, 64, 8, 64, 64), 4, 6),
     {{1, 8, 4}, {2, 8, 3}, {3, 8, 2}},
     {"P1@0+8s", "D1@8 P2@0+5", "D1@9 P2@5+3s P3@0+2", "D1@10 D2@8 P3@2+4", "D2@9 P3@6+2s", "D3@8"}},
    // H = 8, target 6: with three sequences decoding only 3 rows are free (< 4), so
    // step 3 prefills the rest of 4's prompt in bulk.
    {"piggyback_needs_enough_free_rows",
     Spread(Cfg(4, 64, 8, 16, 16), 8, 6),
     {{1, 1, 5}, {2, 1, 5}, {3, 1, 5}, {4, 9, 1}},
     {"P1@0+1s", "D1@1 P2@0+1s P3@0+1s P4@0+3", "D1@2 D2@1 D3@1 P4@3+6s", "D1@3 D2@2 D3@2", "D1@4 D2@3 D3@3",
      "D2@4 D3@4"}},
    // H = 2, target 6: 12 pending tokens fit in two steps of 6 free rows, so the burst
    // starts with one sequence; then 11 do not fit in two steps of 5: bulk.
    {"piggyback_bounded_by_h_steps",
     Spread(Cfg(4, 64, 8, 16, 16), 2, 6),
     {{1, 1, 3}, {2, 11, 1}},
     {"P1@0+1s", "D1@1 P2@0+11s", "D1@2"}},
    // H = 2, target 6: a burst of 18 prompt tokens (> 6·2) starts in bulk, under the plain
    // budget of 16; the 2 tokens left then ride beside the decode.
    {"piggyback_big_burst_starts_in_bulk",
     Spread(Cfg(4, 64, 8, 16, 16), 2, 6),
     {{1, 2, 2}, {2, 8, 1}, {3, 8, 1}},
     {"P1@0+2s P2@0+8s P3@0+6", "D1@2 P3@6+2s"}},
    {"separate_decodes_when_no_prefill_fits",
     Cfg(4, 16, 1, 8, 8, K::kSeparate, 4),
     {{1, 2, 3}, {2, 2, 1}},
     {"P1@0+2s", "D1@2", "D1@3", "P2@0+2s"}},
};

INSTANTIATE_TEST_SUITE_P(Plans, SchedulerStepTest, ::testing::ValuesIn(kStepCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(SchedulerStepTest, EmptySchedulerPlansNothing) {
  SchedulerHarness h(Cfg(4, 8, 4, 16, 16));
  EXPECT_EQ(h.Step(), "");
  SchedulePlan plan = h.sched().Schedule(h.now());
  EXPECT_TRUE(plan.empty());
  EXPECT_EQ(plan.num_tokens(), 0);
}

TEST(SchedulerStepTest, AFurtherPromptJoinsBelowTheDecodeRowsPlusPromptPackRows) {
  SchedulerConfig cfg = Cfg(4, 64, 8, 64, 64);
  cfg.prompt_pack_rows = 3;
  SchedulerHarness h(cfg);
  ASSERT_TRUE(h.Add(1, 1, 8).ok());
  ASSERT_TRUE(h.Add(2, 1, 8).ok());
  ASSERT_TRUE(h.Add(3, 3, 8).ok());
  EXPECT_EQ(h.Step(), "P1@0+1s P2@0+1s");  // 1 < 0 decodes + 3; then 3 >= 0 + 3
  ASSERT_TRUE(h.Add(4, 4, 8).ok());
  EXPECT_EQ(h.Step(), "D1@1 D2@1 P3@0+3s P4@0+4s");  // 4 < 2 decodes + 3
  ASSERT_TRUE(h.Add(5, 6, 8).ok());
  ASSERT_TRUE(h.Add(6, 8, 8).ok());
  EXPECT_EQ(h.Step(), "D1@2 D2@2 D3@3 D4@4 P5@0+6s");  // 8 >= 4 decodes + 3
  EXPECT_EQ(h.Step(), "D1@3 D2@3 D3@4 D4@5 D5@6 P6@0+8s");
}

TEST(SchedulerStepTest, PreemptedSequenceState) {
  SchedulerHarness h(Cfg(2, 4, 4, 16, 16));
  ASSERT_TRUE(h.Add(1, 3, 4).ok());
  ASSERT_TRUE(h.Add(2, 2, 3).ok());
  h.Step();
  h.Step();
  ASSERT_EQ(h.Step(), "D1@4 !2");
  EXPECT_EQ(h.sched().num_preemptions(), 1);
  const std::vector<const Sequence*> seqs = h.sched().Sequences();
  ASSERT_EQ(seqs.size(), 2u);
  const Sequence& p = *seqs[0];  // waiting first
  EXPECT_EQ(p.id, 2);
  EXPECT_EQ(p.state, SequenceState::kPreempted);
  EXPECT_EQ(p.num_computed, 0);
  EXPECT_TRUE(p.block_table.empty());
  EXPECT_EQ(p.num_preemptions, 1);
  EXPECT_EQ(p.generated.size(), 2u);  // kept: recomputed as prefill when re-admitted
  const uint64_t first_admit = p.admit_order;
  h.Step();
  ASSERT_EQ(h.Step(), "P2@0+4s");
  const Sequence* f = h.Finished(2);
  ASSERT_NE(f, nullptr);
  EXPECT_GT(f->admit_order, first_admit);
  EXPECT_EQ(f->generated.size(), 3u);
}

}  // namespace
}  // namespace llmserve
