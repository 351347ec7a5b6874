// --piggyback auto while serving: an Engine with adapt_piggyback over the fake model, whose
// forward passes move a manual clock by what a step of that many rows costs on a 1B model
// in the machine's fast-bandwidth state (8 rows 47 ms, 12 rows 66 ms, bulk 4.8 ms a row).
// Started from a slow-state measurement (piggybacking on), the engine must find out from
// its own steps (decode-only probes) and switch to bulk prefill, losing nothing.
#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/engine.h"
#include "tests/util/clocked_model.h"
#include "tests/util/engine_test_util.h"

namespace llmserve {
namespace {

using engine_test_util::Collect;
using engine_test_util::Greedy;
using engine_test_util::Prompt;
using ::llmserve::testing::ClockedModel;
using ::llmserve::testing::ManualClock;

// Fast state: a step reads the weights in 47 ms; each row beyond 8 costs 4.75 ms; bulk
// prefill 4.8 ms a row.
absl::Duration FastStateStep(int64_t rows) {
  if (rows <= 8) return absl::Milliseconds(47);
  if (rows <= 16) return absl::Milliseconds(47) + absl::Microseconds(4750) * (rows - 8);
  return absl::Microseconds(4800) * rows;
}

struct StepRows {
  int32_t decode, prefill;
};

class StepRecorder final : public EngineObserver {
 public:
  void OnStep(const StepReport& r) override {
    std::lock_guard<std::mutex> l(mu_);
    steps_.push_back({r.decode_tokens, r.prefill_tokens});
  }
  std::vector<StepRows> steps() {
    std::lock_guard<std::mutex> l(mu_);
    return steps_;
  }

 private:
  std::mutex mu_;
  std::vector<StepRows> steps_;
};

TEST(EnginePiggybackTest, SwitchesOffWhenItsOwnStepsSayItDoesNotPay) {
  ManualClock clock;
  StepRecorder recorder;
  EngineConfig c = engine_test_util::SmallConfig();
  c.scheduler.max_running = 8;
  c.scheduler.max_batched_tokens = 512;
  c.scheduler.max_prefill_chunk = 512;
  c.scheduler.prefill_spread_steps = 128;
  c.scheduler.mixed_step_tokens = 12;
  c.clock = [&clock] { return clock.Now(); };
  c.adapt_piggyback = true;
  c.piggyback_start.decode_rows = 8;  // measured in the slow state: 8 and 12 rows cost alike
  c.piggyback_start.filled_rows = 12;
  c.piggyback_start.decode_s = 0.065;
  c.piggyback_start.filled_s = 0.066;
  c.piggyback_start.prefill_token_s = 0.0048;
  engine_test_util::FakeModelOptions opts;
  opts.num_blocks = 1024;
  opts.max_context = 256;
  auto shared = std::make_shared<engine_test_util::FakeModelState>();
  auto e = Engine::Create(
      c,
      std::make_unique<ClockedModel>(std::make_unique<engine_test_util::FakeEngineModel>(opts, shared), &clock,
                                     [](const ForwardBatch& b) { return FastStateStep(std::ssize(b.tokens)); }),
      nullptr, &recorder);
  ASSERT_TRUE(e.ok()) << e.status();
  Engine& engine = **e;

  // 32 requests, 8 at a time, of 16 prompt tokens and 160 generated: ~40 s of steps.
  std::vector<RequestHandle> handles;
  for (int i = 0; i < 32; ++i) {
    auto h = engine.Submit(Greedy(Prompt(16, i + 1), 160));
    ASSERT_TRUE(h.ok()) << h.status();
    handles.push_back(*std::move(h));
  }
  engine.Start();
  for (const RequestHandle& h : handles) EXPECT_EQ(Collect(h).ids.size(), 160u);  // nothing lost
  engine.Stop();
  EXPECT_TRUE(shared->errors().empty());

  // Piggybacked: decode rows with prompt rows inside the 12; bulk: beyond them.
  const std::vector<StepRows> steps = recorder.steps();
  auto piggybacked = [](const StepRows& s) { return s.decode > 0 && s.prefill > 0 && s.decode + s.prefill <= 12; };
  auto bulk = [](const StepRows& s) { return s.decode > 0 && s.decode + s.prefill > 12; };
  const auto first_bulk = std::find_if(steps.begin(), steps.end(), bulk);
  ASSERT_NE(first_bulk, steps.end()) << "never switched to bulk prefill";
  EXPECT_TRUE(std::any_of(steps.begin(), first_bulk, piggybacked)) << "did not start piggybacking";
  // The decode-only probes came first (a step of 6-8 decode rows, none prompt, while prompts waited).
  EXPECT_TRUE(std::any_of(steps.begin(), first_bulk,
                          [](const StepRows& s) { return s.prefill == 0 && s.decode >= 6 && s.decode <= 8; }));
  // After the switch, at most a probe now and then still piggybacks (one per 5 s of ~50 ms steps).
  const auto after = std::count_if(first_bulk, steps.end(), piggybacked);
  EXPECT_LE(after, 1 + static_cast<int64_t>(steps.end() - first_bulk) / 90);
}

}  // namespace
}  // namespace llmserve
