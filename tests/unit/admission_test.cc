// Admission: the scheduler's one admission check and its one waiting count, shared by
// Engine::Submit (caller's thread) and Scheduler::Add, given back by the scheduler.
#include "scheduler/admission.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "scheduler/scheduler.h"

namespace llmserve {
namespace {

SchedulerConfig Cfg() {
  SchedulerConfig c;
  c.block_size = 4;
  c.num_blocks = 8;         // 32 tokens in the whole pool
  c.max_running = 4;
  c.max_batched_tokens = 64;
  c.max_prefill_chunk = 64;
  c.max_waiting = 3;
  c.max_context = 40;
  return c;
}

std::unique_ptr<Sequence> Seq(int64_t id, int32_t prompt_len, int32_t max_tokens) {
  auto s = std::make_unique<Sequence>();
  s->id = id;
  s->prompt.assign(static_cast<size_t>(prompt_len), 5);
  s->stop.max_tokens = max_tokens;
  return s;
}

TEST(AdmissionTest, CheckRefusesWhatCouldNeverRun) {
  Admission a(Cfg());
  EXPECT_TRUE(a.Check(4, 4).ok());
  struct Case {
    int64_t prompt;
    int32_t max_tokens;
    std::string message;
  };
  const std::vector<Case> cases = {
      {0, 4, "the prompt is empty"},
      {4, 0, "max_tokens must be >= 1, got 0"},
      {30, 11, "prompt (30 tokens) + max_tokens (11) exceeds the model context (40)"},
      {30, 3, "prompt + max_tokens (33 tokens) needs 9 KV blocks; the whole cache has 8"},
  };
  for (const Case& c : cases) {
    const absl::Status s = a.Check(c.prompt, c.max_tokens);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_EQ(s.message(), c.message);
  }
  EXPECT_EQ(a.waiting(), 0);  // Check takes no slot
}

TEST(AdmissionTest, ReserveStopsAtMaxWaitingUntilReleased) {
  Admission a(Cfg());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(a.Reserve().ok());
  const absl::Status s = a.Reserve();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "too many requests waiting (3); try again later");
  a.Release();
  EXPECT_EQ(a.waiting(), 2);
  EXPECT_TRUE(a.Reserve().ok());
}

TEST(AdmissionTest, ConcurrentReservesNeverExceedTheLimit) {
  Admission a(Cfg());
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        if (a.Reserve().ok()) ok.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok.load(), 3);
  EXPECT_EQ(a.waiting(), 3);
}

// The engine's slots (admitted on the caller's thread, not yet added) and the scheduler's
// own Add share one count; the scheduler gives a slot back at the first schedule.
TEST(AdmissionTest, OneCountForAdmittedAndAddedSequences) {
  Scheduler sched(Cfg());
  const absl::Time now = absl::UnixEpoch();
  ASSERT_TRUE(sched.admission().Admit(4, 4).ok());  // as Engine::Submit does
  ASSERT_TRUE(sched.Add(Seq(2, 4, 4), now).ok());
  ASSERT_TRUE(sched.Add(Seq(3, 4, 4), now).ok());
  EXPECT_EQ(sched.Add(Seq(4, 4, 4), now).code(), absl::StatusCode::kResourceExhausted);
  sched.AddAdmitted(Seq(1, 4, 4), now);
  EXPECT_EQ(sched.admission().waiting(), 3);
  const SchedulePlan plan = sched.Schedule(now);
  EXPECT_EQ(plan.work.size(), 3u);
  EXPECT_EQ(sched.admission().waiting(), 0);
  ASSERT_TRUE(sched.Add(Seq(5, 4, 4), now).ok());
  EXPECT_NE(sched.Finish(5, SequenceState::kFinishedCancelled, now), nullptr);
  EXPECT_EQ(sched.admission().waiting(), 0);  // ended before its first step
}

}  // namespace
}  // namespace llmserve
