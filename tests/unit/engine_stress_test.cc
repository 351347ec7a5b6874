// Engine stress (fake model; runs under ThreadSanitizer): 500 requests with random
// prompt lengths, max_tokens and sampling parameters from several client threads, a
// quarter aborted at random moments by another thread, a few with short deadlines, a
// pool small enough that preemption happens. At the end: every request got exactly one
// final, the engine is idle with every block free, nothing hung (bounded waits), and
// each request's ids equal (or, if it was cut short, are a prefix of) its output alone.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/engine.h"
#include "tests/util/fake_engine_model.h"

namespace llmserve {
namespace {

using ::llmserve::testing::FakeEngineModel;
using ::llmserve::testing::FakeGreedy;
using ::llmserve::testing::FakeModelOptions;
using ::llmserve::testing::FakeModelState;

constexpr int32_t kVocab = 64;
constexpr int32_t kEos = 2;
constexpr int kRequests = 500;
constexpr int kClients = 4;
const absl::Duration kWait = absl::Seconds(300);  // a hang, not a timing assertion

EngineConfig StressConfig() {
  EngineConfig c;
  c.scheduler.block_size = 4;
  c.scheduler.num_blocks = 0;  // the model's: 40 blocks = 160 tokens
  c.scheduler.max_running = 16;
  c.scheduler.max_batched_tokens = 64;
  c.scheduler.max_prefill_chunk = 16;
  c.scheduler.max_waiting = kRequests;
  c.scheduler.eos_ids = {kEos};
  c.channel_capacity = 4;
  return c;
}

FakeModelOptions StressModel() {
  FakeModelOptions o;
  o.num_blocks = 40;
  o.verify_full = false;  // O(1) per row; the prefix hash still carries every token
  o.forward_delay = absl::Microseconds(50);  // so aborts land while requests run
  return o;
}

// Request i, derived from i alone (so the test can rebuild it).
EngineRequest MakeRequest(int i) {
  std::mt19937 rng(static_cast<uint32_t>(7919 * i + 13));
  auto uni = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  EngineRequest r;
  r.request_id = "stress-" + std::to_string(i);
  const int n = uni(1, 60);
  for (int k = 0; k < n; ++k) r.prompt.push_back(uni(3, kVocab - 1));
  r.stop.max_tokens = uni(1, 60);
  switch (i % 4) {
    case 0:
      r.sampling.temperature = 0.0f;
      break;
    case 1:
      r.sampling.temperature = 0.8f;
      r.sampling.top_p = 0.9f;
      break;
    case 2:
      r.sampling.temperature = 1.0f;
      r.sampling.top_k = 10;
      r.sampling.repetition_penalty = 1.2f;
      r.sampling.presence_penalty = 0.5f;
      r.sampling.want_logprobs = true;
      r.sampling.logprobs = 2;
      break;
    default:
      r.sampling.temperature = 0.7f;
      r.sampling.min_p = 0.05f;
      r.sampling.frequency_penalty = 0.3f;
      r.stop.stop_token_ids = {uni(3, kVocab - 1)};
      break;
  }
  if (i % 4 != 0) r.sampling.seed = 100000u + static_cast<uint64_t>(i);
  if (i % 7 == 0) r.stop.ignore_eos = true;
  return r;
}

TEST(EngineStressTest, ManyClientsAbortsAndPreemption) {
  auto state = std::make_shared<FakeModelState>();
  auto created = Engine::Create(StressConfig(), std::make_unique<FakeEngineModel>(StressModel(), state), nullptr);
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<Engine> engine = *std::move(created);
  engine->Start();

  std::vector<RequestHandle> handles(kRequests);
  std::vector<CollectedGeneration> results(kRequests);
  std::vector<absl::Status> errors(kRequests);
  std::mutex mu;
  std::vector<int64_t> submitted_ids;  // for the aborter
  std::atomic<int> submitted{0};

  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(static_cast<uint32_t>(c + 1));
      std::vector<int> mine;
      for (int i = c; i < kRequests; i += kClients) {
        EngineRequest r = MakeRequest(i);
        if (i % 23 == 5) r.deadline = absl::Now() + absl::Milliseconds(std::uniform_int_distribution<int>(0, 20)(rng));
        auto h = engine->Submit(std::move(r));
        if (!h.ok()) {
          errors[static_cast<size_t>(i)] = h.status();
          continue;
        }
        handles[static_cast<size_t>(i)] = *h;
        mine.push_back(i);
        {
          std::lock_guard<std::mutex> l(mu);
          submitted_ids.push_back(h->id);
        }
        submitted.fetch_add(1);
        if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) absl::SleepFor(absl::Microseconds(300));
        // Read some channels early and some only at the end (those coalesce).
        if (std::uniform_int_distribution<int>(0, 1)(rng) == 0 && mine.size() > 3) {
          const int j = mine[mine.size() - 3];
          auto got = CollectGeneration(*handles[static_cast<size_t>(j)].channel, kWait);
          if (got.ok()) {
            results[static_cast<size_t>(j)] = *std::move(got);
          } else {
            errors[static_cast<size_t>(j)] = got.status();
          }
        }
      }
      for (int j : mine) {
        if (handles[static_cast<size_t>(j)].channel->done()) continue;  // collected above
        auto got = CollectGeneration(*handles[static_cast<size_t>(j)].channel, kWait);
        if (got.ok()) {
          results[static_cast<size_t>(j)] = *std::move(got);
        } else {
          errors[static_cast<size_t>(j)] = got.status();
        }
      }
    });
  }
  std::thread aborter([&] {
    std::mt19937 rng(99);
    for (int n = 0; n < kRequests / 4;) {
      absl::SleepFor(absl::Microseconds(std::uniform_int_distribution<int>(0, 1500)(rng)));
      int64_t id = 0;
      {
        std::lock_guard<std::mutex> l(mu);
        if (submitted_ids.empty()) continue;
        // One of the most recent submissions (likely still running or waiting).
        const size_t lo = submitted_ids.size() > 24 ? submitted_ids.size() - 24 : 0;
        const size_t k = std::uniform_int_distribution<size_t>(lo, submitted_ids.size() - 1)(rng);
        id = submitted_ids[k];
        submitted_ids.erase(submitted_ids.begin() + static_cast<long>(k));  // each at most once
      }
      engine->Abort(id, n % 5 == 0 ? SequenceState::kFinishedDeadline : SequenceState::kFinishedCancelled);
      ++n;
    }
  });
  for (std::thread& t : clients) t.join();
  aborter.join();

  ASSERT_TRUE(engine->WaitIdle(kWait)) << "engine did not go idle";
  const EngineStats stats = engine->Stats();
  EXPECT_EQ(stats.running, 0);
  EXPECT_EQ(stats.waiting, 0);
  EXPECT_EQ(stats.blocks_used, 0);
  EXPECT_GT(stats.preemptions, 0) << "the pool was meant to be too small";
  EXPECT_EQ(submitted.load(), kRequests);

  int cut_short = 0, cut_mid_generation = 0, compared_alone = 0, preempted = 0, coalesced = 0;
  std::vector<int> need_alone;
  for (int i = 0; i < kRequests; ++i) {
    const size_t k = static_cast<size_t>(i);
    ASSERT_TRUE(errors[k].ok()) << "request " << i << ": " << errors[k];
    const CollectedGeneration& g = results[k];
    EXPECT_TRUE(handles[k].channel->done()) << i;
    EXPECT_FALSE(handles[k].channel->TryPop().has_value()) << "event after the final, request " << i;
    EXPECT_TRUE(IsFinished(g.final_event.reason)) << i;
    EXPECT_NE(g.final_event.reason, SequenceState::kFinishedError) << i << ": " << g.final_event.status;
    EXPECT_EQ(g.final_event.completion_tokens, static_cast<int32_t>(g.ids.size())) << i;
    const EngineRequest r = MakeRequest(i);
    EXPECT_EQ(g.final_event.prompt_tokens, static_cast<int32_t>(r.prompt.size())) << i;
    EXPECT_LE(g.ids.size(), static_cast<size_t>(r.stop.max_tokens)) << i;
    if (r.sampling.want_logprobs) {
      EXPECT_EQ(g.logprobs.size(), g.ids.size()) << i;
    }
    if (g.final_event.reason == SequenceState::kFinishedCancelled ||
        g.final_event.reason == SequenceState::kFinishedDeadline) {
      ++cut_short;
      if (!g.ids.empty()) ++cut_mid_generation;
    }
    preempted += g.final_event.preemptions > 0 ? 1 : 0;
    coalesced += handles[k].channel->coalesced() > 0 ? 1 : 0;
    if (i % 4 == 0) {
      const std::vector<int32_t> ref =
          FakeGreedy(r.prompt, r.stop.max_tokens, kVocab, r.stop.ignore_eos ? -1 : kEos, r.stop.stop_token_ids);
      ASSERT_LE(g.ids.size(), ref.size()) << i;
      EXPECT_TRUE(std::equal(g.ids.begin(), g.ids.end(), ref.begin())) << "greedy request " << i;
      if (g.final_event.reason != SequenceState::kFinishedCancelled &&
          g.final_event.reason != SequenceState::kFinishedDeadline) {
        EXPECT_EQ(g.ids, ref) << "greedy request " << i;
      }
    } else {
      need_alone.push_back(i);
    }
  }
  EXPECT_GT(cut_short, 0);
  std::printf("stress: %d cut short (%d mid-generation), %d preempted, %d coalesced, %lld preemptions, %lld steps\n",
              cut_short, cut_mid_generation, preempted, coalesced, static_cast<long long>(stats.preemptions),
              static_cast<long long>(stats.steps));
  EXPECT_TRUE(state->errors().empty()) << state->errors().front();

  // Seeded requests alone, one at a time on the same (now idle) engine.
  for (int i : need_alone) {
    EngineRequest r = MakeRequest(i);
    auto h = engine->Submit(r);
    ASSERT_TRUE(h.ok()) << h.status();
    auto alone = CollectGeneration(*h->channel, kWait);
    ASSERT_TRUE(alone.ok()) << alone.status();
    const CollectedGeneration& g = results[static_cast<size_t>(i)];
    ASSERT_LE(g.ids.size(), alone->ids.size()) << i;
    EXPECT_TRUE(std::equal(g.ids.begin(), g.ids.end(), alone->ids.begin())) << "seeded request " << i;
    if (g.final_event.reason != SequenceState::kFinishedCancelled &&
        g.final_event.reason != SequenceState::kFinishedDeadline) {
      EXPECT_EQ(g.ids, alone->ids) << "seeded request " << i;
      EXPECT_EQ(g.final_event.reason, alone->final_event.reason) << i;
      ++compared_alone;
    }
  }
  EXPECT_GT(compared_alone, 0);
  ASSERT_TRUE(engine->WaitIdle(kWait));
  EXPECT_EQ(engine->Stats().blocks_used, 0);
  engine->Stop();
}

}  // namespace
}  // namespace llmserve
