// PrefillPolicy: each policy's answers as a pure function of what the scheduler tells it,
// and SchedulerConfig's policy fields as a plain description of the policy.
#include "scheduler/prefill_policy.h"

#include <string>

#include "gtest/gtest.h"
#include "scheduler/scheduler.h"

namespace llmserve {
namespace {

constexpr int32_t kU = PrefillBudget::kUnlimited;

PrefillPolicyConfig Policy(PrefillPolicyKind kind, int32_t rows = 12, int32_t horizon = 128, int32_t stall = 4) {
  PrefillPolicyConfig p;
  p.kind = kind;
  p.rows = rows;
  p.horizon = horizon;
  p.max_decode_stall = stall;
  return p;
}

StepState State(int32_t decode, int64_t pending, int32_t max_batched = 512) {
  return StepState{decode, pending, max_batched - decode};
}

TEST(PrefillPolicyTest, BulkTakesTheRoomLeftBesideTheDecodes) {
  auto p = MakePrefillPolicy(Policy(PrefillPolicyKind::kBulk));
  EXPECT_EQ(p->Shape({true, true, 100}), StepShape::kDecodeThenPrefill);
  EXPECT_EQ(p->Budget(State(0, 1000)), (PrefillBudget{512, kU}));
  EXPECT_EQ(p->Budget(State(8, 4)), (PrefillBudget{504, kU}));
  EXPECT_EQ(p->Describe(), "bulk");
}

TEST(PrefillPolicyTest, SeparatePrefillsUntilDecodesHaveWaitedTheirStall) {
  auto p = MakePrefillPolicy(Policy(PrefillPolicyKind::kSeparate, 12, 128, 2));
  EXPECT_EQ(p->Shape({false, true, 0}), StepShape::kPrefillOnly);
  EXPECT_EQ(p->Shape({true, true, 1}), StepShape::kPrefillOnly);
  EXPECT_EQ(p->Shape({true, true, 2}), StepShape::kDecodeOnly);    // decodes waited 2 steps
  EXPECT_EQ(p->Shape({false, true, 9}), StepShape::kPrefillOnly);  // nobody waits to decode
  EXPECT_EQ(p->Shape({true, false, 0}), StepShape::kDecodeOnly);   // no prompt work
  EXPECT_EQ(p->Budget(State(0, 1000)), (PrefillBudget{512, kU}));
  EXPECT_EQ(p->Describe(), "separate (at most 2 prefill steps in a row while decodes wait)");
}

TEST(PrefillPolicyTest, PiggybackFillsDecodeStepsWhileThePromptsFitTheHorizon) {
  auto p = MakePrefillPolicy(Policy(PrefillPolicyKind::kPiggyback, 12, 4));
  EXPECT_EQ(p->Shape({true, true, 100}), StepShape::kDecodeThenPrefill);
  struct Case {
    int32_t decode;
    int64_t pending;
    PrefillBudget want;
  };
  for (const Case& c : {
           Case{8, 16, {4, kU}},     // 4 free rows, 16 <= 4·4: fill to 12
           Case{8, 17, {504, kU}},   // 17 > 4·4: bulk
           Case{9, 3, {503, kU}},    // 3 free rows < kMinPiggybackRows: bulk
           Case{0, 48, {512, 1}},    // nothing decodes, 48 <= 12·4: one prompt at full speed
           Case{0, 49, {512, kU}},   // a burst too big: bulk
           Case{2, 0, {10, kU}},     // nothing pending: the budget is still the free rows
       }) {
    EXPECT_EQ(p->Budget(State(c.decode, c.pending)), c.want) << c.decode << " decode, " << c.pending << " pending";
  }
  // The free rows never exceed the step's room.
  EXPECT_EQ(p->Budget(StepState{2, 4, 6}), (PrefillBudget{6, kU}));
  EXPECT_EQ(p->Describe(), "piggyback (decode steps filled to 12 rows while the pending prompt tokens fit in 4)");
}

TEST(PrefillPolicyTest, ValidateNamesTheBadField) {
  EXPECT_TRUE(Policy(PrefillPolicyKind::kBulk, 0, 0, 0).Validate().ok());  // bulk reads none of them
  EXPECT_NE(Policy(PrefillPolicyKind::kSeparate, 12, 128, 0).Validate().message().find("max_decode_stall"),
            std::string::npos);
  EXPECT_NE(Policy(PrefillPolicyKind::kPiggyback, 0).Validate().message().find("rows"), std::string::npos);
  EXPECT_NE(Policy(PrefillPolicyKind::kPiggyback, 12, 0).Validate().message().find("horizon"), std::string::npos);
  EXPECT_FALSE(Policy(static_cast<PrefillPolicyKind>(9)).Validate().ok());
}

TEST(PrefillPolicyTest, KindNames) {
  EXPECT_STREQ(PrefillPolicyKindName(PrefillPolicyKind::kBulk), "bulk");
  EXPECT_STREQ(PrefillPolicyKindName(PrefillPolicyKind::kSeparate), "separate");
  EXPECT_STREQ(PrefillPolicyKindName(PrefillPolicyKind::kPiggyback), "piggyback");
}

// SchedulerConfig's four policy fields describe one policy, and setting a policy sets them.
TEST(PrefillPolicyTest, SchedulerConfigFieldsDescribeThePolicy) {
  SchedulerConfig c;
  c.prefill_spread_steps = 0;
  EXPECT_EQ(c.prefill_policy().kind, PrefillPolicyKind::kBulk);
  c.prefill_spread_steps = 32;
  c.mixed_step_tokens = 10;
  EXPECT_EQ(c.prefill_policy(), Policy(PrefillPolicyKind::kPiggyback, 10, 32, 4));
  c.step_policy = StepPolicy::kSeparate;
  c.max_decode_stall = 3;
  EXPECT_EQ(c.prefill_policy().kind, PrefillPolicyKind::kSeparate);
  EXPECT_EQ(c.prefill_policy().max_decode_stall, 3);
  for (const PrefillPolicyConfig& p :
       {Policy(PrefillPolicyKind::kBulk), Policy(PrefillPolicyKind::kSeparate, 12, 128, 7),
        Policy(PrefillPolicyKind::kPiggyback, 6, 9)}) {
    SchedulerConfig s;
    s.set_prefill_policy(p);
    EXPECT_EQ(s.prefill_policy().kind, p.kind);
    EXPECT_EQ(MakePrefillPolicy(s.prefill_policy())->Describe(), MakePrefillPolicy(p)->Describe());
  }
}

}  // namespace
}  // namespace llmserve
