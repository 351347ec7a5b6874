// The engine's steps under each prefill policy are a function of its config and the
// requests alone: the same workload, once with steps as fast as a small model's and once
// as slow as a big one's (a scripted clock), gives the same sequence of steps.
#include <iterator>
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

struct StepRows {
  int32_t decode, prefill;
  bool operator==(const StepRows&) const = default;
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

// 16 requests of 16 prompt tokens and 24 generated, all queued before the engine starts,
// each forward pass taking `per_row` per row plus `per_step`.
std::vector<StepRows> RunWorkload(const PrefillPolicyConfig& policy, absl::Duration per_step, absl::Duration per_row) {
  ManualClock clock;
  StepRecorder recorder;
  EngineConfig c = engine_test_util::SmallConfig();
  c.scheduler.max_batched_tokens = 64;
  c.scheduler.set_prefill_policy(policy);
  c.clock = [&clock] { return clock.Now(); };
  engine_test_util::FakeModelOptions opts;
  opts.num_blocks = 512;
  opts.max_context = 256;
  auto shared = std::make_shared<engine_test_util::FakeModelState>();
  auto e = Engine::Create(
      c,
      std::make_unique<ClockedModel>(std::make_unique<engine_test_util::FakeEngineModel>(opts, shared), &clock,
                                     [=](const ForwardBatch& b) { return per_step + per_row * std::ssize(b.tokens); }),
      nullptr, &recorder);
  EXPECT_TRUE(e.ok()) << e.status();
  if (!e.ok()) return {};
  Engine& engine = **e;
  std::vector<RequestHandle> handles;
  for (int i = 0; i < 16; ++i) {
    auto h = engine.Submit(Greedy(Prompt(16, i + 1), 24));
    EXPECT_TRUE(h.ok()) << h.status();
    if (h.ok()) handles.push_back(*std::move(h));
  }
  engine.Start();
  for (const RequestHandle& h : handles) EXPECT_EQ(Collect(h).ids.size(), 24u);
  engine.Stop();
  EXPECT_TRUE(shared->errors().empty());
  return recorder.steps();
}

TEST(EnginePolicyTest, StepsDoNotDependOnHowLongStepsTake) {
  PrefillPolicyConfig bulk;
  PrefillPolicyConfig separate;
  separate.kind = PrefillPolicyKind::kSeparate;
  separate.max_decode_stall = 2;
  PrefillPolicyConfig piggyback;
  piggyback.kind = PrefillPolicyKind::kPiggyback;
  piggyback.rows = 12;
  piggyback.horizon = 32;
  for (const PrefillPolicyConfig& p : {bulk, separate, piggyback}) {
    SCOPED_TRACE(PrefillPolicyKindName(p.kind));
    const std::vector<StepRows> fast = RunWorkload(p, absl::Milliseconds(9), absl::Microseconds(100));
    const std::vector<StepRows> slow = RunWorkload(p, absl::Milliseconds(65), absl::Microseconds(4800));
    ASSERT_FALSE(fast.empty());
    EXPECT_EQ(fast, slow);
    if (p.kind == PrefillPolicyKind::kPiggyback) {  // some decode steps carry prompt rows within 12
      bool piggybacked = false;
      for (const StepRows& s : fast) piggybacked |= s.decode > 0 && s.prefill > 0 && s.decode + s.prefill <= 12;
      EXPECT_TRUE(piggybacked);
    }
  }
}

}  // namespace
}  // namespace llmserve
