// Engine lifecycle with the fake model (tests/util/fake_engine_model.h): aborts before and
// during scheduling, deadlines, a failing forward pass, drain and stop, slow readers
// (coalesced deltas), the observer, stats already published at each final. Runs under
// ThreadSanitizer.
#include "scheduler/engine.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/engine_test_util.h"
#include "tests/util/fake_engine_model.h"

namespace llmserve {
namespace {

using namespace ::llmserve::engine_test_util;  // NOLINT: the engine tests' shared vocabulary

TEST(EngineTest, AbortBeforeScheduling) {
  Harness h(SmallConfig());
  RequestHandle cancel = MustSubmit(*h.engine, Greedy(Prompt(5, 1), 10));
  RequestHandle late = MustSubmit(*h.engine, Greedy(Prompt(5, 2), 10));
  RequestHandle keep = MustSubmit(*h.engine, Greedy(Prompt(5, 3), 10));
  h.engine->Abort(cancel.id, SequenceState::kFinishedCancelled);
  h.engine->Abort(late.id, SequenceState::kFinishedDeadline);
  h.engine->Abort(12345, SequenceState::kFinishedCancelled);  // unknown: ignored
  h.engine->Start();
  CollectedGeneration c = Collect(cancel);
  EXPECT_EQ(c.final_event.reason, SequenceState::kFinishedCancelled);
  EXPECT_TRUE(c.ids.empty());
  EXPECT_EQ(c.final_event.queue_time, absl::ZeroDuration());
  EXPECT_EQ(Collect(late).final_event.reason, SequenceState::kFinishedDeadline);
  CollectedGeneration k = Collect(keep);
  EXPECT_EQ(k.final_event.reason, SequenceState::kFinishedLength);
  EXPECT_EQ(k.ids, FakeGreedy(Prompt(5, 3), 10, kVocab));
  h.engine->Abort(keep.id, SequenceState::kFinishedCancelled);  // already ended: no-op
  ASSERT_TRUE(h.engine->WaitIdle(kWait));
  EXPECT_EQ(h.engine->Stats().blocks_used, 0);
}

TEST(EngineTest, AbortWhileRunningAtTheNextStep) {
  Harness h(SmallConfig());
  h.state->PauseAtCall(3);  // prefill + 2 decodes run, the 4th step is held
  h.engine->Start();
  const std::vector<int32_t> prompt = Prompt(6, 5);
  RequestHandle r = MustSubmit(*h.engine, Greedy(prompt, 100));
  ASSERT_TRUE(h.state->WaitBlocked(kWait));  // the engine is inside step 4
  h.engine->Abort(r.id, SequenceState::kFinishedCancelled);
  h.state->Resume();
  CollectedGeneration g = Collect(r);
  EXPECT_EQ(g.final_event.reason, SequenceState::kFinishedCancelled);
  // Step 4 completes (its token is delivered), the abort lands before step 5.
  const std::vector<int32_t> ref = FakeGreedy(prompt, 100, kVocab);
  EXPECT_EQ(g.ids, std::vector<int32_t>(ref.begin(), ref.begin() + 4));
  ASSERT_TRUE(h.engine->WaitIdle(kWait));
  EXPECT_EQ(h.engine->Stats().blocks_used, 0);
  EXPECT_EQ(h.engine->Stats().running, 0);
}

TEST(EngineTest, DeadlinesExpire) {
  Harness h(SmallConfig());
  h.engine->Start();
  EngineRequest past = Greedy(Prompt(5, 1), 10);
  past.deadline = absl::Now() - absl::Seconds(1);
  CollectedGeneration p = Collect(MustSubmit(*h.engine, past));
  EXPECT_EQ(p.final_event.reason, SequenceState::kFinishedDeadline);
  EXPECT_TRUE(p.ids.empty());

  // Hold the engine inside a step until the deadline has passed.
  h.state->Pause();
  EngineRequest soon = Greedy(Prompt(5, 2), 100);
  soon.deadline = absl::Now() + absl::Milliseconds(20);
  RequestHandle s = MustSubmit(*h.engine, soon);
  RequestHandle other = MustSubmit(*h.engine, Greedy(Prompt(5, 3), 100));  // no deadline
  ASSERT_TRUE(h.state->WaitBlocked(kWait));
  while (absl::Now() <= soon.deadline) absl::SleepFor(absl::Milliseconds(5));
  h.state->Resume();
  CollectedGeneration g = Collect(s);
  EXPECT_EQ(g.final_event.reason, SequenceState::kFinishedDeadline);
  EXPECT_LT(g.ids.size(), 100u);
  EXPECT_EQ(Collect(other).final_event.reason, SequenceState::kFinishedLength);
}

TEST(EngineTest, ForwardFailureFailsThatStepAndTheEngineGoesOn) {
  EngineConfig config = SmallConfig();
  config.scheduler.prefill_spread_steps = 0;  // the plain budget: all three prefill in one step
  Harness h(config);
  std::vector<RequestHandle> hs;
  for (int i = 0; i < 3; ++i) hs.push_back(MustSubmit(*h.engine, Greedy(Prompt(5, i), 8)));
  h.state->FailNext(1);
  h.engine->Start();  // all three are in the first step (15 tokens, budget 32)
  for (auto& x : hs) {
    CollectedGeneration g = Collect(x);
    EXPECT_EQ(g.final_event.reason, SequenceState::kFinishedError);
    EXPECT_EQ(g.final_event.status.code(), absl::StatusCode::kInternal);
    EXPECT_NE(g.final_event.status.message().find("forward pass failed: injected failure"), std::string::npos)
        << g.final_event.status;
    EXPECT_TRUE(g.ids.empty());
  }
  ASSERT_TRUE(h.engine->WaitIdle(kWait));
  EXPECT_EQ(h.engine->Stats().blocks_used, 0);
  // Mid-generation: a running request fails too, keeping the ids it already got.
  h.state->PauseAtCall(h.state->forwards() + 3);
  RequestHandle mid = MustSubmit(*h.engine, Greedy(Prompt(5, 7), 100));
  ASSERT_TRUE(h.state->WaitBlocked(kWait));
  h.state->FailNext(1);
  h.state->Resume();
  CollectedGeneration m = Collect(mid);
  EXPECT_EQ(m.final_event.reason, SequenceState::kFinishedError);
  EXPECT_EQ(m.ids, FakeGreedy(Prompt(5, 7), 3, kVocab));
  EXPECT_EQ(m.final_event.status.code(), absl::StatusCode::kInternal);
  // And the engine keeps serving.
  CollectedGeneration ok = Collect(MustSubmit(*h.engine, Greedy(Prompt(5, 1), 8)));
  EXPECT_EQ(ok.final_event.reason, SequenceState::kFinishedLength);
  EXPECT_EQ(ok.ids, FakeGreedy(Prompt(5, 1), 8, kVocab));
}

TEST(EngineTest, DrainRefusesNewWorkAndFinishesOld) {
  Harness h(SmallConfig());
  h.engine->Start();
  RequestHandle a = MustSubmit(*h.engine, Greedy(Prompt(5, 1), 20));
  RequestHandle b = MustSubmit(*h.engine, Greedy(Prompt(5, 2), 20));
  h.engine->BeginDrain();
  EXPECT_TRUE(h.engine->Stats().draining);
  auto refused = h.engine->Submit(Greedy(Prompt(5, 3), 4));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  EXPECT_TRUE(h.engine->WaitIdle(kWait));
  EXPECT_EQ(Collect(a).final_event.reason, SequenceState::kFinishedLength);
  EXPECT_EQ(Collect(b).final_event.reason, SequenceState::kFinishedLength);
}

TEST(EngineTest, StopCancelsEverythingInFlight) {
  EngineConfig c = SmallConfig();
  c.scheduler.max_waiting = 1 << 20;
  Harness h(c);
  h.engine->Start();
  h.state->Pause();
  std::vector<RequestHandle> hs;
  for (int i = 0; i < 12; ++i) hs.push_back(MustSubmit(*h.engine, Greedy(Prompt(4, i), 100)));
  ASSERT_TRUE(h.state->WaitBlocked(kWait));
  std::thread stopper([&] { h.engine->Stop(); });
  // Once Submit says UNAVAILABLE, Stop() has been called; requests queued meanwhile
  // must be cancelled too.
  while (true) {
    auto r = h.engine->Submit(Greedy(Prompt(4, 1), 100));
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
      break;
    }
    hs.push_back(*r);
    absl::SleepFor(absl::Microseconds(200));
  }
  h.state->Resume();
  stopper.join();
  for (auto& x : hs) {
    CollectedGeneration g = Collect(x);
    EXPECT_EQ(g.final_event.reason, SequenceState::kFinishedCancelled);
  }
  EngineStats s = h.engine->Stats();
  EXPECT_EQ(s.running, 0);
  EXPECT_EQ(s.waiting, 0);
  EXPECT_EQ(s.blocks_used, 0);
  EXPECT_TRUE(h.engine->WaitIdle(absl::ZeroDuration()));
  h.engine->Stop();  // again: no-op
}

TEST(EngineTest, StopBeforeStartCancelsQueuedRequests) {
  Harness h(SmallConfig());
  RequestHandle a = MustSubmit(*h.engine, Greedy(Prompt(4, 1), 10));
  h.engine->Stop();
  EXPECT_EQ(Collect(a).final_event.reason, SequenceState::kFinishedCancelled);
  EXPECT_EQ(h.engine->Submit(Greedy(Prompt(4, 1), 10)).status().code(), absl::StatusCode::kUnavailable);
  h.engine->Start();  // after Stop: no-op
  EXPECT_EQ(h.state->forwards(), 0);
}

// A reader that reads nothing until the end: its deltas coalesce into `capacity` events,
// nothing is lost, and the final still arrives.
TEST(EngineTest, SlowReaderGetsCoalescedDeltas) {
  EngineConfig c = SmallConfig();
  c.channel_capacity = 2;
  Harness h(c);
  h.engine->Start();
  const std::vector<int32_t> prompt = Prompt(5, 6);
  RequestHandle r = MustSubmit(*h.engine, Greedy(prompt, 50));
  ASSERT_TRUE(h.engine->WaitIdle(kWait));
  EXPECT_GT(r.channel->coalesced(), 0);
  CollectedGeneration g = Collect(r);
  EXPECT_EQ(g.deltas, 2);
  EXPECT_EQ(g.ids, FakeGreedy(prompt, 50, kVocab));
  EXPECT_EQ(g.final_event.reason, SequenceState::kFinishedLength);
}

// Records what the observer is told (called on the engine thread; read by the test).
class RecordingObserver : public EngineObserver {
 public:
  void OnStep(const StepReport& r) override {
    std::lock_guard<std::mutex> l(mu_);
    ++steps_;
    tokens_ += r.decode_tokens + r.prefill_tokens;
    negative_ = negative_ || r.schedule < absl::ZeroDuration() || r.forward < absl::ZeroDuration() ||
                r.sample < absl::ZeroDuration() || r.emit < absl::ZeroDuration();
    last_steps_ = r.stats.steps;
  }
  void OnFinished(const Sequence& seq, const GenerationFinal& f) override {
    std::lock_guard<std::mutex> l(mu_);
    finished_.push_back(seq.id);
    completion_ += f.completion_tokens;
    if (static_cast<int32_t>(seq.generated.size()) != f.completion_tokens) mismatch_ = true;
  }
  std::mutex mu_;
  int64_t steps_ = 0, tokens_ = 0, completion_ = 0, last_steps_ = 0;
  bool negative_ = false, mismatch_ = false;
  std::vector<int64_t> finished_;
};

TEST(EngineTest, ObserverSeesStepsAndFinishes) {
  RecordingObserver obs;
  Harness h(SmallConfig(), {}, nullptr, &obs);
  h.engine->Start();
  std::vector<RequestHandle> hs;
  int64_t fed = 0;
  for (int i = 0; i < 6; ++i) {
    const int32_t n = 3 + i, max = 4 + i;
    hs.push_back(MustSubmit(*h.engine, Greedy(Prompt(n, i), max)));
    fed += n + max - 1;  // the last sampled token is never fed
  }
  for (auto& x : hs) Collect(x);
  ASSERT_TRUE(h.engine->WaitIdle(kWait));
  h.engine->Stop();  // OnStep of the last step has returned
  std::lock_guard<std::mutex> l(obs.mu_);
  EXPECT_EQ(obs.steps_, h.state->forwards());
  EXPECT_EQ(obs.last_steps_, obs.steps_);
  EXPECT_EQ(obs.tokens_, fed);
  EXPECT_FALSE(obs.negative_);
  EXPECT_FALSE(obs.mismatch_);
  EXPECT_EQ(obs.finished_.size(), hs.size());
  int64_t completion = 0;
  for (int i = 0; i < 6; ++i) completion += 4 + i;
  EXPECT_EQ(obs.completion_, completion);
}

// Reads the engine's published stats at each final, the moment the final is pushed: a
// client may start its next call on seeing it (a connection's stream cap relies on this).
class StatsAtFinalObserver : public EngineObserver {
 public:
  void OnFinished(const Sequence& seq, const GenerationFinal& /*f*/) override {
    const EngineStats s = engine->Stats();
    std::lock_guard<std::mutex> l(mu_);
    ++finished_;
    held_at_final_.push_back(s.running + s.waiting);
    ended_.push_back(seq.id);
  }
  const Engine* engine = nullptr;
  std::mutex mu_;
  int32_t finished_ = 0;
  std::vector<int32_t> held_at_final_;  // running + waiting seen at each final
  std::vector<int64_t> ended_;
};

TEST(EngineTest, AFinalIsPushedOnlyWhenTheStatsNoLongerCountItsRequest) {
  StatsAtFinalObserver obs;
  Harness h(SmallConfig(), {}, nullptr, &obs);
  obs.engine = h.engine.get();
  // Three end by length at steps 3, 7 and 11; the fourth is aborted while step 12 is held.
  std::vector<RequestHandle> hs;
  for (int i = 0; i < 3; ++i) hs.push_back(MustSubmit(*h.engine, Greedy(Prompt(4, i), 3 + 4 * i)));
  RequestHandle aborted = MustSubmit(*h.engine, Greedy(Prompt(4, 9), 100));
  h.state->PauseAtCall(11);
  h.engine->Start();
  for (auto& x : hs) Collect(x);
  ASSERT_TRUE(h.state->WaitBlocked(kWait));
  h.engine->Abort(aborted.id, SequenceState::kFinishedCancelled);
  h.state->Resume();
  EXPECT_EQ(Collect(aborted).final_event.reason, SequenceState::kFinishedCancelled);
  ASSERT_TRUE(h.engine->WaitIdle(kWait));
  h.engine->Stop();
  std::lock_guard<std::mutex> l(obs.mu_);
  ASSERT_EQ(obs.finished_, 4);
  EXPECT_EQ(obs.held_at_final_, (std::vector<int32_t>{3, 2, 1, 0}))
      << "a final went out while the published stats still counted its request";
  EXPECT_EQ(obs.ended_, (std::vector<int64_t>{hs[0].id, hs[1].id, hs[2].id, aborted.id}));
}

}  // namespace
}  // namespace llmserve
