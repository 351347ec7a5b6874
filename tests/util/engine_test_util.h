// Shared by the engine's unit tests (engine_test.cc, engine_lifecycle_test.cc): an Engine
// over the fake model (tests/util/fake_engine_model.h), small configs, deterministic
// prompts, and collecting a request while checking the channel's contract.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "scheduler/engine.h"
#include "tests/util/fake_engine_model.h"

namespace llmserve::engine_test_util {

using ::llmserve::testing::FakeEngineModel;
using ::llmserve::testing::FakeGreedy;
using ::llmserve::testing::FakeLogitsFor;
using ::llmserve::testing::FakeModelOptions;
using ::llmserve::testing::FakeModelState;

inline constexpr int32_t kVocab = 64;
inline const absl::Duration kWait = absl::Seconds(60);  // a hang, not a timing assertion

inline EngineConfig SmallConfig() {
  EngineConfig c;
  c.scheduler.block_size = 4;
  c.scheduler.num_blocks = 0;  // the model's
  c.scheduler.max_running = 8;
  c.scheduler.max_batched_tokens = 32;
  c.scheduler.max_prefill_chunk = 16;
  c.scheduler.max_waiting = 64;
  c.scheduler.max_context = 0;  // the model's
  c.scheduler.eos_ids = {};
  c.channel_capacity = 8;
  return c;
}

// Deterministic prompt ids in [3, vocab) (no specials).
inline std::vector<int32_t> Prompt(int n, int salt) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(3 + (i * 7 + salt * 13 + i * i * salt) % (kVocab - 3));
  return p;
}

inline EngineRequest Greedy(std::vector<int32_t> prompt, int32_t max_tokens) {
  EngineRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0.0f;
  r.stop.max_tokens = max_tokens;
  return r;
}

inline EngineRequest Sampled(std::vector<int32_t> prompt, int32_t max_tokens, uint64_t seed) {
  EngineRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0.8f;
  r.sampling.top_p = 0.9f;
  r.sampling.seed = seed;
  r.stop.max_tokens = max_tokens;
  return r;
}

// An engine over the fake model, with its shared state.
struct Harness {
  std::shared_ptr<FakeModelState> state = std::make_shared<FakeModelState>();
  std::unique_ptr<Engine> engine;

  Harness(const EngineConfig& config, const FakeModelOptions& opts = {}, const Tokenizer* tok = nullptr,
          EngineObserver* obs = nullptr) {
    auto e = Engine::Create(config, std::make_unique<FakeEngineModel>(opts, state), tok, obs);
    EXPECT_TRUE(e.ok()) << e.status();
    if (e.ok()) engine = *std::move(e);
  }
  ~Harness() {
    if (engine != nullptr) engine->Stop();
    EXPECT_TRUE(state->errors().empty()) << "fake model: " << state->errors().front();
  }
};

// Collects one request's events and checks the channel's contract: one final, last.
inline CollectedGeneration Collect(const RequestHandle& h) {
  auto got = CollectGeneration(*h.channel, kWait);
  EXPECT_TRUE(got.ok()) << "request " << h.id << ": " << got.status();
  if (!got.ok()) return {};
  EXPECT_TRUE(h.channel->done());
  EXPECT_FALSE(h.channel->TryPop().has_value()) << "event after the final";
  EXPECT_EQ(got->final_event.completion_tokens, static_cast<int32_t>(got->ids.size()));
  return *std::move(got);
}

inline RequestHandle MustSubmit(Engine& e, EngineRequest r) {
  auto h = e.Submit(std::move(r));
  EXPECT_TRUE(h.ok()) << h.status();
  return h.ok() ? *h : RequestHandle{};
}

}  // namespace llmserve::engine_test_util
