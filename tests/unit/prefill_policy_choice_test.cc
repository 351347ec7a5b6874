// ResolvePrefillPolicy: the policy flags and a (fake) start-up measurement resolve to one
// fixed policy, with the reason for the log.
#include "server/prefill_policy_choice.h"

#include <string>

#include "gtest/gtest.h"

namespace llmserve {
namespace {

// A 12-row step costs what an 8-row one does (memory-bound), or half as much again.
PiggybackTimings Calibration(bool pays) {
  PiggybackTimings t;
  t.decode_rows = 8;
  t.filled_rows = 12;
  t.decode_s = 0.065;
  t.filled_s = pays ? 0.066 : 0.098;
  t.prefill_token_s = 0.0048;
  return t;
}

EngineSpec Flags(Piggyback mode) {
  EngineSpec c;
  c.piggyback = mode;
  c.prefill_spread_steps = 64;
  c.mixed_step_tokens = 10;
  return c;
}

TEST(ResolvePrefillPolicyTest, AutoPicksPiggybackWhereTheMeasurementSaysItPays) {
  ASSERT_TRUE(Calibration(true).Pays());
  const EngineSpec c = Flags(Piggyback::kAuto);
  EXPECT_TRUE(NeedsPiggybackCalibration(c));
  const PrefillPolicyChoice got = ResolvePrefillPolicy(c, Calibration(true));
  EXPECT_EQ(got.policy.kind, PrefillPolicyKind::kPiggyback);
  EXPECT_EQ(got.policy.rows, 10);
  EXPECT_EQ(got.policy.horizon, 64);
  EXPECT_NE(got.reason.find("--piggyback auto, measured once at start-up: "), std::string::npos) << got.reason;
  EXPECT_NE(got.reason.find("piggybacking pays"), std::string::npos) << got.reason;
}

TEST(ResolvePrefillPolicyTest, AutoPicksBulkWhereItDoesNotPay) {
  ASSERT_FALSE(Calibration(false).Pays());
  const PrefillPolicyChoice got = ResolvePrefillPolicy(Flags(Piggyback::kAuto), Calibration(false));
  EXPECT_EQ(got.policy.kind, PrefillPolicyKind::kBulk);
  EXPECT_NE(got.reason.find("piggybacking does not pay"), std::string::npos) << got.reason;
}

TEST(ResolvePrefillPolicyTest, AutoWithoutAMeasurementIsBulkAndSaysWhy) {
  const PrefillPolicyChoice got =
      ResolvePrefillPolicy(Flags(Piggyback::kAuto), absl::FailedPreconditionError("cache too small"));
  EXPECT_EQ(got.policy.kind, PrefillPolicyKind::kBulk);
  EXPECT_EQ(got.reason, "--piggyback auto, not measured: cache too small");
}

// Without auto (or with nothing to piggyback) the measurement is neither asked for nor read.
TEST(ResolvePrefillPolicyTest, TheOtherFlagsNeedNoMeasurement) {
  const absl::Status none = absl::InternalError("must not be read");
  struct Case {
    EngineSpec config;
    PrefillPolicyKind kind;
    const char* reason;
  };
  EngineSpec separate = Flags(Piggyback::kAuto);
  separate.step_policy = StepPolicy::kSeparate;
  separate.max_decode_stall = 3;
  EngineSpec no_horizon = Flags(Piggyback::kAuto);
  no_horizon.prefill_spread_steps = 0;
  EngineSpec on_without_horizon = Flags(Piggyback::kOn);
  on_without_horizon.prefill_spread_steps = 0;
  for (const Case& k : {Case{Flags(Piggyback::kOn), PrefillPolicyKind::kPiggyback, "--piggyback on"},
                        Case{Flags(Piggyback::kOff), PrefillPolicyKind::kBulk, "--piggyback off"},
                        Case{separate, PrefillPolicyKind::kSeparate, "--step-policy separate"},
                        Case{no_horizon, PrefillPolicyKind::kBulk, "--prefill-spread-steps 0"},
                        Case{on_without_horizon, PrefillPolicyKind::kBulk, "--prefill-spread-steps 0"}}) {
    EXPECT_FALSE(NeedsPiggybackCalibration(k.config)) << k.reason;
    const PrefillPolicyChoice got = ResolvePrefillPolicy(k.config, none);
    EXPECT_EQ(got.policy.kind, k.kind) << k.reason;
    EXPECT_EQ(got.reason, k.reason);
    EXPECT_TRUE(got.policy.Validate().ok()) << k.reason;
  }
  EXPECT_EQ(ResolvePrefillPolicy(separate, none).policy.max_decode_stall, 3);
  const PrefillPolicyChoice on = ResolvePrefillPolicy(Flags(Piggyback::kOn), none);
  EXPECT_EQ(on.policy.rows, 10);
  EXPECT_EQ(on.policy.horizon, 64);
}

}  // namespace
}  // namespace llmserve
