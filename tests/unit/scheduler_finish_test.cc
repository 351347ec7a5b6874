// Scheduler: how sequences end (EOS, stop ids, max_tokens, ignore_eos), early ends through
// Finish (waiting, running, preempted), and the SequenceTimes milestones.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/scheduler.h"
#include "tests/util/scheduler_harness.h"

namespace llmserve {
namespace {

using ::llmserve::testing::PickFn;
using ::llmserve::testing::SchedulerHarness;

constexpr int32_t kEos = 2;
constexpr int32_t kEot = 9;  // a second end-of-generation id (an instruct model's end of turn)
constexpr int32_t kVocab = 1000;

SchedulerConfig Cfg(int32_t bs = 4, int32_t blocks = 32, int32_t max_running = 4, int32_t budget = 16,
                    int32_t chunk = 16) {
  SchedulerConfig c;
  c.block_size = bs;
  c.num_blocks = blocks;
  c.max_running = max_running;
  c.max_batched_tokens = budget;
  c.max_prefill_chunk = chunk;
  c.max_context = 256;
  c.eos_ids = {kEos, kEot};
  c.prefill_spread_steps = 0;  // the plain budget: the plans below count on it
  return c;
}

// The fake model says `id` once `at` tokens have been generated, an ordinary id otherwise.
PickFn SayAt(int32_t prompt_len, int32_t at, int32_t id) {
  return [=](uint64_t h, const std::vector<int32_t>& prefix) {
    if (static_cast<int32_t>(prefix.size()) == prompt_len + at) return id;
    int32_t t = static_cast<int32_t>(h % static_cast<uint64_t>(kVocab));
    while (t == id || t == kEos || t == kEot) t = (t + 1) % kVocab;
    return t;
  };
}

struct FinishCase {
  const char* name;
  int32_t max_tokens;
  bool ignore_eos;
  std::vector<int32_t> stop_ids;
  int32_t say_at;  // generated count at which the model says `say`
  int32_t say;
  SequenceState want_state;
  size_t want_generated;
  bool say_in_output;  // generated[say_at] == say (and nowhere else)
};

class SchedulerFinishTest : public ::testing::TestWithParam<FinishCase> {};

TEST_P(SchedulerFinishTest, EndsAsSpecified) {
  const FinishCase& tc = GetParam();
  constexpr int32_t kPrompt = 5;
  for (int32_t chunk : {16, 2}) {  // whole prompt, and chunked
    SCOPED_TRACE(::testing::Message() << "chunk " << chunk);
    SchedulerHarness h(Cfg(4, 32, 4, 16, chunk), kVocab);
    h.set_pick(SayAt(kPrompt, tc.say_at, tc.say));
    StopConditions stop;
    stop.max_tokens = tc.max_tokens;
    stop.ignore_eos = tc.ignore_eos;
    stop.stop_token_ids = tc.stop_ids;
    ASSERT_TRUE(h.Add(1, h.Prompt(1, kPrompt), stop).ok());
    ASSERT_TRUE(h.RunToCompletion(100));
    const Sequence* f = h.Finished(1);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->state, tc.want_state) << SequenceStateName(f->state);
    EXPECT_EQ(f->generated.size(), tc.want_generated);
    for (size_t i = 0; i < f->generated.size(); ++i) {
      EXPECT_EQ(f->generated[i] == tc.say, tc.say_in_output && i == static_cast<size_t>(tc.say_at)) << i;
    }
    EXPECT_EQ(h.sched().blocks().num_used(), 0);
  }
}

const FinishCase kFinishCases[] = {
    {"eos", 10, false, {}, 3, kEos, SequenceState::kFinishedEos, 3, false},
    {"eos_first_token", 10, false, {}, 0, kEos, SequenceState::kFinishedEos, 0, false},
    {"second_eos_id", 10, false, {}, 3, kEot, SequenceState::kFinishedEos, 3, false},
    {"ignore_eos_covers_every_eos_id", 6, true, {}, 3, kEot, SequenceState::kFinishedLength, 6, true},
    {"ignore_eos_keeps_going", 6, true, {}, 3, kEos, SequenceState::kFinishedLength, 6, true},
    {"ignore_eos_eos_is_output", 4, true, {}, 3, kEos, SequenceState::kFinishedLength, 4, true},
    {"stop_id_not_appended", 10, false, {77, 78}, 2, 78, SequenceState::kFinishedStopToken, 2, false},
    {"ignore_eos_but_listed_stop", 10, true, {kEos}, 4, kEos, SequenceState::kFinishedStopToken, 4, false},
    {"max_tokens", 7, false, {}, 99, kEos, SequenceState::kFinishedLength, 7, false},
    {"max_tokens_1", 1, false, {}, 99, kEos, SequenceState::kFinishedLength, 1, false},
    {"eos_on_last_allowed_token", 3, false, {}, 2, kEos, SequenceState::kFinishedEos, 2, false},
};

INSTANTIATE_TEST_SUITE_P(Stops, SchedulerFinishTest, ::testing::ValuesIn(kFinishCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(SchedulerFinishTest, ContextEqualToRequestFinishesByLength) {
  SchedulerConfig c = Cfg();
  c.max_context = 9;
  SchedulerHarness h(c, kVocab);
  ASSERT_TRUE(h.Add(1, 5, 4).ok());
  EXPECT_FALSE(h.Add(2, 5, 5).ok());
  ASSERT_TRUE(h.RunToCompletion(100));
  EXPECT_EQ(h.Finished(1)->state, SequenceState::kFinishedLength);
  EXPECT_EQ(h.Finished(1)->num_tokens(), 9);
}

// ---------------------------------------------------------------- Finish (aborts)

TEST(SchedulerAbortTest, FinishWaitingRunningAndPreempted) {
  // Pool of 4 blocks of 2: the "preempt_newest" workload of scheduler_test, plus waiters.
  SchedulerConfig c = Cfg(2, 4, 4, 16, 16);
  SchedulerHarness h(c, kVocab);
  ASSERT_TRUE(h.Add(1, 3, 4).ok());
  ASSERT_TRUE(h.Add(2, 2, 3).ok());
  EXPECT_EQ(h.Step(), "P1@0+3s P2@0+2s");
  ASSERT_TRUE(h.Add(3, 2, 2).ok());  // waits: no blocks
  EXPECT_EQ(h.Step(), "D1@3 D2@2");
  EXPECT_EQ(h.Step(), "D1@4 !2");
  // Waiting queue: [2 (preempted), 3 (waiting)]; running: [1].
  ASSERT_EQ(h.sched().num_waiting(), 2);
  EXPECT_TRUE(h.Abort(2, SequenceState::kFinishedDeadline));   // preempted
  EXPECT_TRUE(h.Abort(3, SequenceState::kFinishedCancelled));  // waiting
  EXPECT_EQ(h.sched().num_waiting(), 0);
  const int32_t used = h.sched().blocks().num_used();
  EXPECT_GT(used, 0);
  EXPECT_TRUE(h.Abort(1, SequenceState::kFinishedError));  // running
  EXPECT_EQ(h.sched().blocks().num_used(), 0);
  EXPECT_EQ(h.sched().num_running(), 0);
  EXPECT_EQ(h.Finished(1)->state, SequenceState::kFinishedError);
  EXPECT_EQ(h.Finished(2)->state, SequenceState::kFinishedDeadline);
  EXPECT_EQ(h.Finished(2)->generated.size(), 2u);  // what it had when preempted
  EXPECT_EQ(h.Finished(3)->state, SequenceState::kFinishedCancelled);
  // Unknown and already-finished ids.
  EXPECT_FALSE(h.Abort(1));
  EXPECT_FALSE(h.Abort(42));
  EXPECT_EQ(h.Step(), "");
}

TEST(SchedulerAbortTest, FinishMidPrefillFreesBlocksAndOthersContinue) {
  SchedulerHarness h(Cfg(4, 8, 4, 8, 4), kVocab);
  ASSERT_TRUE(h.Add(1, 12, 3).ok());
  ASSERT_TRUE(h.Add(2, 3, 3).ok());
  EXPECT_EQ(h.Step(), "P1@0+4 P2@0+3s");
  EXPECT_TRUE(h.Abort(1, SequenceState::kFinishedStopString));
  EXPECT_EQ(h.sched().blocks().num_used(), 1);
  EXPECT_EQ(h.Step(), "D2@3");
  ASSERT_TRUE(h.RunToCompletion(100));
  EXPECT_EQ(h.Finished(2)->state, SequenceState::kFinishedLength);
  EXPECT_EQ(h.Finished(1)->generated.size(), 0u);
}

// ---------------------------------------------------------------- times

TEST(SchedulerTimesTest, MilestonesFollowTheSteps) {
  SchedulerHarness h(Cfg(2, 4, 4, 16, 16), kVocab);
  const absl::Time t0 = h.now();
  ASSERT_TRUE(h.Add(1, 3, 4).ok());
  ASSERT_TRUE(h.Add(2, 2, 3).ok());
  // Preempt 2 (see "preempt_newest"), then run out.
  h.Step();  // schedule at t0, update at t0+1ms
  h.Step();
  const absl::Time before_preempt = h.now();
  ASSERT_EQ(h.Step(), "D1@4 !2");
  ASSERT_TRUE(h.RunToCompletion(100));
  const absl::Duration ms = absl::Milliseconds(1);
  for (int64_t id : {1, 2}) {
    const SequenceTimes& t = h.Finished(id)->times;
    EXPECT_EQ(t.arrival, t0) << id;
    EXPECT_EQ(t.first_scheduled, t0) << id;  // not reset by the re-admission
    EXPECT_EQ(t.first_token, t0 + ms) << id;
    EXPECT_EQ(t.last_token, t.finished) << id;
    EXPECT_GT(t.finished, before_preempt) << id;
  }
  EXPECT_EQ(h.Finished(1)->times.finished, t0 + 4 * ms);
  EXPECT_EQ(h.Finished(2)->times.finished, t0 + 5 * ms);
}

TEST(SchedulerTimesTest, AbortedWaitingSequenceHasOnlyArrivalAndFinish) {
  SchedulerHarness h2(Cfg(), kVocab);
  ASSERT_TRUE(h2.Add(7, 3, 4).ok());
  ASSERT_TRUE(h2.Abort(7));
  const SequenceTimes& w = h2.Finished(7)->times;
  EXPECT_EQ(w.arrival, h2.now());
  EXPECT_EQ(w.first_scheduled, absl::InfinitePast());
  EXPECT_EQ(w.first_token, absl::InfinitePast());
  EXPECT_EQ(w.finished, h2.now());
}

}  // namespace
}  // namespace llmserve
