// Piggyback calibration: the decision rule, the start-up measurement on a real (demo)
// model, and the --piggyback setting's parsing.
#include "server/piggyback_calibration.h"

#include <memory>
#include <thread>

#include "gtest/gtest.h"
#include "model/kv_cache.h"
#include "model/runtime_config.h"
#include "model/transformer.h"
#include "server/demo_model.h"
#include "server/server_config.h"
#include "tests/util/process_threads.h"

namespace llmserve {
namespace {

PiggybackTimings Timings(double decode_ms, double filled_ms, double prefill_token_ms) {
  PiggybackTimings t;
  t.decode_rows = 8;
  t.filled_rows = 12;
  t.decode_s = decode_ms / 1e3;
  t.filled_s = filled_ms / 1e3;
  t.prefill_token_s = prefill_token_ms / 1e3;
  return t;
}

// Gain: lockstep (6/8 of an 8-row step + 6 bulk tokens) over a 12-row step.
TEST(PiggybackTimingsTest, PaysWhenLockstepCostsTenPercentMore) {
  // The 1b model in the slow-bandwidth state: 12 rows cost what 8 do.
  EXPECT_NEAR(Timings(65, 66, 4.8).Gain(), (48.75 + 28.8) / 66, 1e-12);
  EXPECT_TRUE(Timings(65, 66, 4.8).Pays());
  // In the fast state 8 rows cost 47 ms: 0.97.
  EXPECT_NEAR(Timings(47, 66, 4.8).Gain(), 0.970, 1e-3);
  EXPECT_FALSE(Timings(47, 66, 4.8).Pays());
  // The small model: 0.95.
  EXPECT_FALSE(Timings(9.6, 10.2, 0.41).Pays());
  // The margin: (52.5 + 27.9) / 1.1 = 73.09 ms.
  EXPECT_TRUE(Timings(70, 73.0, 4.65).Pays());
  EXPECT_FALSE(Timings(70, 73.2, 4.65).Pays());
}

TEST(PiggybackTimingsTest, NoExtraRowsNeverPays) {
  PiggybackTimings t = Timings(70, 70, 4.65);
  t.filled_rows = t.decode_rows;
  EXPECT_FALSE(t.Pays());
  EXPECT_EQ(t.Gain(), 0);
  EXPECT_NE(t.Describe().find("does not pay"), std::string::npos) << t.Describe();
}

class MeasurePiggybackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto demo = MakeDemoModel();
    ASSERT_TRUE(demo.ok()) << demo.status();
    demo_ = *std::move(demo);
    RuntimeConfig rt;
    rt.weight_dtype = DType::kF32;
    rt.threads = 2;
    auto model = Transformer::Create(*demo_.weights, rt);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
  }
  std::unique_ptr<KvCache> Cache(int64_t blocks) {
    KvCacheConfig kc = KvCacheConfig::ForModel(model_->config(), 16, DType::kF32);
    kc.num_blocks = blocks;
    auto cache = KvCache::Create(kc);
    EXPECT_TRUE(cache.ok()) << cache.status();
    return cache.ok() ? *std::move(cache) : nullptr;
  }

  DemoModel demo_;
  std::unique_ptr<Transformer> model_;
};

TEST_F(MeasurePiggybackTest, TimesBothStepsAndAPrefill) {
  std::unique_ptr<KvCache> cache = Cache(12 * 5);  // 12 sequences of 65 tokens in 16-token blocks
  ASSERT_NE(cache, nullptr);
  absl::StatusOr<PiggybackTimings> t = MeasurePiggyback(*model_, *cache, 8, 12, 2);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->decode_rows, 8);
  EXPECT_EQ(t->filled_rows, 12);
  EXPECT_GT(t->decode_s, 0);
  EXPECT_GT(t->filled_s, 0);
  EXPECT_GT(t->prefill_token_s, 0);
  EXPECT_NE(t->Describe().find("12 rows"), std::string::npos) << t->Describe();
}

// The measurement's OpenMP team must not outlive it: called from a thread that has none
// yet, MeasurePiggyback leaves the process with as many threads as before. (A team left
// on the caller's thread, beside the engine thread's, makes libgomp throttle its
// spin-waits and slows every later step by ~25% on a small model.)
TEST_F(MeasurePiggybackTest, LeavesNoOpenMpThreadsBehind) {
  std::unique_ptr<KvCache> cache = Cache(12 * 5);
  ASSERT_NE(cache, nullptr);
  std::ptrdiff_t before = 0, after = 0;
  bool ok = false;
  std::thread([&] {
    before = ProcessThreads();
    ok = MeasurePiggyback(*model_, *cache, 8, 12, 2).ok();
    after = ThreadsOnceAtMost(before);
  }).join();
  ASSERT_TRUE(ok);
  EXPECT_LE(after, before);  // fewer is fine (a thread of the fixture may have ended meanwhile)
}

TEST_F(MeasurePiggybackTest, RefusesACacheTooSmallForTheBatches) {
  std::unique_ptr<KvCache> cache = Cache(12 * 5 - 1);
  ASSERT_NE(cache, nullptr);
  absl::StatusOr<PiggybackTimings> t = MeasurePiggyback(*model_, *cache, 8, 12, 2);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition) << t.status();
}

TEST(PiggybackSettingTest, ParsesItsNamesAndRejectsOthers) {
  for (Piggyback p : {Piggyback::kAuto, Piggyback::kOn, Piggyback::kOff}) {
    absl::StatusOr<Piggyback> parsed = ParsePiggyback(PiggybackName(p));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, p);
  }
  for (const char* bad : {"", "yes", "AUTO", "on "}) {
    EXPECT_EQ(ParsePiggyback(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ServerConfig{}.piggyback, Piggyback::kAuto);
}

}  // namespace
}  // namespace llmserve
