// RequestChannel: ordering, coalescing when the reader is slow, the final event last,
// the notifier's arming, Close, PopWait's timeout, and a producer/consumer pair of
// threads (run under ThreadSanitizer by scripts/tsan-test.sh).
#include "scheduler/request_channel.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "gtest/gtest.h"

namespace llmserve {
namespace {

GenerationDelta Delta(std::vector<int32_t> ids, std::string text, bool with_logprobs = false) {
  GenerationDelta d;
  d.ids = std::move(ids);
  d.text = std::move(text);
  if (with_logprobs) {
    for (int32_t id : d.ids) d.logprobs.push_back(TokenLogprobs{id, -0.5f * static_cast<float>(id), {{id, -0.1f}}});
  }
  return d;
}

GenerationFinal Final(SequenceState reason, int32_t completion) {
  GenerationFinal f;
  f.reason = reason;
  f.completion_tokens = completion;
  return f;
}

const GenerationDelta* AsDelta(const std::optional<ChannelEvent>& ev) {
  return ev.has_value() ? std::get_if<GenerationDelta>(&*ev) : nullptr;
}
const GenerationFinal* AsFinal(const std::optional<ChannelEvent>& ev) {
  return ev.has_value() ? std::get_if<GenerationFinal>(&*ev) : nullptr;
}

TEST(GenerationDeltaTest, MergeAppendsEverything) {
  GenerationDelta a = Delta({1, 2}, "ab", true);
  a.Merge(Delta({3}, "c", true));
  EXPECT_EQ(a.ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(a.text, "abc");
  ASSERT_EQ(a.logprobs.size(), 3u);
  EXPECT_EQ(a.logprobs[2].id, 3);
  EXPECT_FLOAT_EQ(a.logprobs[2].logprob, -1.5f);
}

TEST(RequestChannelTest, EventsComeOutInOrderFinalLast) {
  RequestChannel ch(4);
  ch.PushDelta(Delta({1}, "a"));
  ch.PushDelta(Delta({2}, "b"));
  ch.PushFinal(Final(SequenceState::kFinishedLength, 2));
  ch.PushDelta(Delta({3}, "c"));  // after the final: dropped
  ch.PushFinal(Final(SequenceState::kFinishedError, 9));  // a second final: dropped
  auto e1 = ch.TryPop();
  auto e2 = ch.TryPop();
  EXPECT_FALSE(ch.done());
  auto e3 = ch.TryPop();
  ASSERT_NE(AsDelta(e1), nullptr);
  ASSERT_NE(AsDelta(e2), nullptr);
  ASSERT_NE(AsFinal(e3), nullptr);
  EXPECT_EQ(AsDelta(e1)->ids, std::vector<int32_t>{1});
  EXPECT_EQ(AsDelta(e2)->text, "b");
  EXPECT_EQ(AsFinal(e3)->reason, SequenceState::kFinishedLength);
  EXPECT_EQ(AsFinal(e3)->completion_tokens, 2);
  EXPECT_TRUE(ch.done());
  EXPECT_FALSE(ch.TryPop().has_value());
  EXPECT_EQ(ch.coalesced(), 0);
}

TEST(RequestChannelTest, FullQueueCoalescesIntoLastDelta) {
  RequestChannel ch(2);
  for (int32_t i = 0; i < 6; ++i) ch.PushDelta(Delta({i}, std::string(1, static_cast<char>('a' + i)), true));
  ch.PushFinal(Final(SequenceState::kFinishedEos, 6));  // accepted even though the queue is full
  EXPECT_EQ(ch.coalesced(), 4);
  auto e1 = ch.TryPop();
  auto e2 = ch.TryPop();
  auto e3 = ch.TryPop();
  ASSERT_NE(AsDelta(e1), nullptr);
  ASSERT_NE(AsDelta(e2), nullptr);
  ASSERT_NE(AsFinal(e3), nullptr);
  EXPECT_EQ(AsDelta(e1)->ids, std::vector<int32_t>{0});
  EXPECT_EQ(AsDelta(e2)->ids, (std::vector<int32_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(AsDelta(e2)->text, "bcdef");
  ASSERT_EQ(AsDelta(e2)->logprobs.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(AsDelta(e2)->logprobs[i].id, static_cast<int32_t>(i + 1));
  // Popping makes room again: the next delta is queued on its own.
  RequestChannel ch2(1);
  ch2.PushDelta(Delta({1}, "x"));
  ASSERT_NE(AsDelta(ch2.TryPop()), nullptr);
  ch2.PushDelta(Delta({2}, "y"));
  ch2.PushDelta(Delta({3}, "z"));
  EXPECT_EQ(ch2.coalesced(), 1);
  auto m = ch2.TryPop();
  ASSERT_NE(AsDelta(m), nullptr);
  EXPECT_EQ(AsDelta(m)->ids, (std::vector<int32_t>{2, 3}));
}

TEST(RequestChannelTest, NotifierCalledOncePerArming) {
  RequestChannel ch(8);
  int calls = 0;
  ch.SetNotifier([&] { ++calls; });
  ch.PushDelta(Delta({1}, "a"));  // not armed yet
  EXPECT_EQ(calls, 0);
  ASSERT_TRUE(ch.TryPop().has_value());
  EXPECT_FALSE(ch.TryPop().has_value());  // arms
  ch.PushDelta(Delta({2}, "b"));
  EXPECT_EQ(calls, 1);
  ch.PushDelta(Delta({3}, "c"));  // not re-armed: no call
  EXPECT_EQ(calls, 1);
  ASSERT_TRUE(ch.TryPop().has_value());
  ASSERT_TRUE(ch.TryPop().has_value());
  EXPECT_FALSE(ch.TryPop().has_value());  // arms again
  EXPECT_FALSE(ch.TryPop().has_value());  // still armed, once
  ch.PushFinal(Final(SequenceState::kFinishedLength, 3));
  EXPECT_EQ(calls, 2);
  ASSERT_NE(AsFinal(ch.TryPop()), nullptr);
  EXPECT_FALSE(ch.TryPop().has_value());  // done: does not arm
  ch.PushDelta(Delta({4}, "d"));
  EXPECT_EQ(calls, 2);
}

TEST(RequestChannelTest, NotifierRunsWithoutTheLockHeld) {
  RequestChannel ch(8);
  std::vector<int32_t> seen;
  // The notifier pops from the channel itself: this deadlocks if the lock is held.
  ch.SetNotifier([&] {
    while (auto ev = ch.TryPop()) {
      if (auto* d = std::get_if<GenerationDelta>(&*ev)) seen.insert(seen.end(), d->ids.begin(), d->ids.end());
    }
  });
  EXPECT_FALSE(ch.TryPop().has_value());
  ch.PushDelta(Delta({7}, "x"));
  ch.PushDelta(Delta({8}, "y"));
  EXPECT_EQ(seen, (std::vector<int32_t>{7, 8}));
}

TEST(RequestChannelTest, CloseDropsQueuedAndLaterEvents) {
  RequestChannel ch(4);
  int calls = 0;
  ch.SetNotifier([&] { ++calls; });
  ch.PushDelta(Delta({1}, "a"));
  ch.Close();
  EXPECT_TRUE(ch.done());
  EXPECT_FALSE(ch.TryPop().has_value());
  ch.PushDelta(Delta({2}, "b"));
  ch.PushFinal(Final(SequenceState::kFinishedLength, 2));
  EXPECT_FALSE(ch.TryPop().has_value());
  EXPECT_FALSE(ch.PopWait(absl::Milliseconds(1)).has_value());
  EXPECT_EQ(calls, 0);
  auto got = CollectGeneration(ch, absl::Seconds(5));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kCancelled);
}

TEST(RequestChannelTest, PopWaitTimesOutAndThenSeesEvents) {
  RequestChannel ch(4);
  EXPECT_FALSE(ch.PopWait(absl::Milliseconds(5)).has_value());
  EXPECT_FALSE(ch.PopWait(absl::ZeroDuration()).has_value());
  ch.PushDelta(Delta({5}, "e"));
  auto ev = ch.PopWait(absl::Milliseconds(5));
  ASSERT_NE(AsDelta(ev), nullptr);
  EXPECT_EQ(AsDelta(ev)->ids, std::vector<int32_t>{5});
  auto none = CollectGeneration(ch, absl::Milliseconds(5));
  EXPECT_EQ(none.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(RequestChannelTest, CollectGenerationGathersEverything) {
  RequestChannel ch(2);
  for (int32_t i = 0; i < 5; ++i) ch.PushDelta(Delta({i}, std::to_string(i), true));
  GenerationFinal f = Final(SequenceState::kFinishedStopString, 5);
  f.stop_string = "zz";
  f.seed = 42;
  ch.PushFinal(f);
  auto got = CollectGeneration(ch, absl::Seconds(5));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->ids, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(got->text, "01234");
  EXPECT_EQ(got->logprobs.size(), 5u);
  EXPECT_EQ(got->deltas, 2);  // one plus one coalesced
  EXPECT_EQ(got->final_event.reason, SequenceState::kFinishedStopString);
  EXPECT_EQ(got->final_event.stop_string, "zz");
  EXPECT_EQ(got->final_event.seed, 42u);
  EXPECT_TRUE(ch.done());
}

// A producer pushes N single-id deltas as fast as it can; a consumer reads with
// PopWait (and one with TryPop + notifier). All ids arrive once, in order, final last.
TEST(RequestChannelTest, ProducerConsumerThreads) {
  constexpr int32_t kN = 20000;
  for (bool use_notifier : {false, true}) {
    SCOPED_TRACE(use_notifier ? "notifier" : "PopWait");
    RequestChannel ch(4);
    std::mutex mu;
    std::condition_variable cv;
    bool signalled = false;
    std::atomic<int> notifications{0};
    if (use_notifier) {
      ch.SetNotifier([&] {
        notifications.fetch_add(1);
        std::lock_guard<std::mutex> l(mu);
        signalled = true;
        cv.notify_one();
      });
    }
    std::thread producer([&] {
      for (int32_t i = 0; i < kN; ++i) ch.PushDelta(Delta({i}, "t"));
      ch.PushFinal(Final(SequenceState::kFinishedLength, kN));
    });
    std::vector<int32_t> ids;
    std::string text;
    bool got_final = false;
    while (!got_final) {
      std::optional<ChannelEvent> ev;
      if (use_notifier) {
        ev = ch.TryPop();
        if (!ev.has_value()) {
          std::unique_lock<std::mutex> l(mu);
          cv.wait(l, [&] { return signalled; });
          signalled = false;
          continue;
        }
      } else {
        ev = ch.PopWait(absl::Seconds(30));
        ASSERT_TRUE(ev.has_value()) << "producer stalled";
      }
      if (auto* d = std::get_if<GenerationDelta>(&*ev)) {
        ids.insert(ids.end(), d->ids.begin(), d->ids.end());
        text += d->text;
      } else {
        got_final = true;
        EXPECT_EQ(std::get<GenerationFinal>(*ev).completion_tokens, kN);
      }
    }
    producer.join();
    ASSERT_EQ(ids.size(), static_cast<size_t>(kN));
    for (int32_t i = 0; i < kN; ++i) ASSERT_EQ(ids[static_cast<size_t>(i)], i);
    EXPECT_EQ(text.size(), static_cast<size_t>(kN));
    EXPECT_TRUE(ch.done());
    EXPECT_FALSE(ch.TryPop().has_value());
  }
}

}  // namespace
}  // namespace llmserve
