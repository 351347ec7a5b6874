// SamplingParams::Validate and StopConditions::Validate: every field in and out of its
// range, NaN/inf, and the messages naming the field and the allowed range.
#include "model/sampling_params.h"

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace llmserve {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

struct ParamCase {
  const char* name;
  std::function<void(SamplingParams&)> set;
  bool ok;
  const char* message;  // substring of the error when !ok
};

class SamplingParamsValidateTest : public ::testing::TestWithParam<ParamCase> {};

TEST_P(SamplingParamsValidateTest, Validate) {
  const ParamCase& c = GetParam();
  SamplingParams p;
  c.set(p);
  const absl::Status s = p.Validate();
  if (c.ok) {
    EXPECT_TRUE(s.ok()) << s;
  } else {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find(c.message), absl::string_view::npos) << s;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, SamplingParamsValidateTest,
    ::testing::Values(
        ParamCase{"defaults", [](SamplingParams&) {}, true, ""},
        ParamCase{"temp0", [](SamplingParams& p) { p.temperature = 0; }, true, ""},
        ParamCase{"temp_big", [](SamplingParams& p) { p.temperature = 100; }, true, ""},
        ParamCase{"temp_neg", [](SamplingParams& p) { p.temperature = -0.1f; }, false,
                  "temperature must be a finite number >= 0"},
        ParamCase{"temp_nan", [](SamplingParams& p) { p.temperature = kNan; }, false, "temperature"},
        ParamCase{"temp_inf", [](SamplingParams& p) { p.temperature = kInf; }, false, "temperature"},
        ParamCase{"topk0", [](SamplingParams& p) { p.top_k = 0; }, true, ""},
        ParamCase{"topk40", [](SamplingParams& p) { p.top_k = 40; }, true, ""},
        ParamCase{"topk_neg", [](SamplingParams& p) { p.top_k = -1; }, false,
                  "top_k must be >= 0 (0 = all tokens), got -1"},
        ParamCase{"topp1", [](SamplingParams& p) { p.top_p = 1; }, true, ""},
        ParamCase{"topp_small", [](SamplingParams& p) { p.top_p = 1e-6f; }, true, ""},
        ParamCase{"topp0", [](SamplingParams& p) { p.top_p = 0; }, false, "top_p must be in (0, 1], got 0"},
        ParamCase{"topp_big", [](SamplingParams& p) { p.top_p = 1.5f; }, false,
                  "top_p must be in (0, 1], got 1.5"},
        ParamCase{"topp_nan", [](SamplingParams& p) { p.top_p = kNan; }, false, "top_p"},
        ParamCase{"minp0", [](SamplingParams& p) { p.min_p = 0; }, true, ""},
        ParamCase{"minp1", [](SamplingParams& p) { p.min_p = 1; }, true, ""},
        ParamCase{"minp_neg", [](SamplingParams& p) { p.min_p = -0.01f; }, false, "min_p must be in [0, 1]"},
        ParamCase{"minp_big", [](SamplingParams& p) { p.min_p = 1.01f; }, false, "min_p must be in [0, 1]"},
        ParamCase{"minp_nan", [](SamplingParams& p) { p.min_p = kNan; }, false, "min_p"},
        ParamCase{"rep_small", [](SamplingParams& p) { p.repetition_penalty = 0.01f; }, true, ""},
        ParamCase{"rep_big", [](SamplingParams& p) { p.repetition_penalty = 5; }, true, ""},
        ParamCase{"rep0", [](SamplingParams& p) { p.repetition_penalty = 0; }, false,
                  "repetition_penalty must be a finite number > 0"},
        ParamCase{"rep_inf", [](SamplingParams& p) { p.repetition_penalty = kInf; }, false,
                  "repetition_penalty"},
        ParamCase{"rep_nan", [](SamplingParams& p) { p.repetition_penalty = kNan; }, false,
                  "repetition_penalty"},
        ParamCase{"pres_lo", [](SamplingParams& p) { p.presence_penalty = -2; }, true, ""},
        ParamCase{"pres_hi", [](SamplingParams& p) { p.presence_penalty = 2; }, true, ""},
        ParamCase{"pres_out", [](SamplingParams& p) { p.presence_penalty = 2.5f; }, false,
                  "presence_penalty must be in [-2, 2], got 2.5"},
        ParamCase{"pres_nan", [](SamplingParams& p) { p.presence_penalty = kNan; }, false,
                  "presence_penalty"},
        ParamCase{"freq_lo", [](SamplingParams& p) { p.frequency_penalty = -2; }, true, ""},
        ParamCase{"freq_out", [](SamplingParams& p) { p.frequency_penalty = -2.5f; }, false,
                  "frequency_penalty must be in [-2, 2], got -2.5"},
        ParamCase{"freq_inf", [](SamplingParams& p) { p.frequency_penalty = -kInf; }, false,
                  "frequency_penalty"},
        ParamCase{"logprobs0", [](SamplingParams& p) { p.logprobs = 0; }, true, ""},
        ParamCase{"logprobs20", [](SamplingParams& p) { p.logprobs = 20; }, true, ""},
        ParamCase{"logprobs21", [](SamplingParams& p) { p.logprobs = 21; }, false,
                  "logprobs must be in [0, 20], got 21"},
        ParamCase{"logprobs_neg", [](SamplingParams& p) { p.logprobs = -1; }, false,
                  "logprobs must be in [0, 20], got -1"}),
    [](const ::testing::TestParamInfo<ParamCase>& info) { return std::string(info.param.name); });

TEST(SamplingParamsTest, GreedyIsTemperatureZero) {
  SamplingParams p;
  EXPECT_FALSE(p.greedy());
  p.temperature = 0;
  EXPECT_TRUE(p.greedy());
}

struct StopCase {
  const char* name;
  std::function<void(StopConditions&)> set;
  bool ok;
  const char* message;
};

class StopConditionsValidateTest : public ::testing::TestWithParam<StopCase> {};

TEST_P(StopConditionsValidateTest, Validate) {
  const StopCase& c = GetParam();
  StopConditions s;
  c.set(s);
  const absl::Status st = s.Validate(/*vocab_size=*/100);
  if (c.ok) {
    EXPECT_TRUE(st.ok()) << st;
  } else {
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_NE(st.message().find(c.message), absl::string_view::npos) << st;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, StopConditionsValidateTest,
    ::testing::Values(
        StopCase{"defaults", [](StopConditions&) {}, true, ""},
        StopCase{"max1", [](StopConditions& s) { s.max_tokens = 1; }, true, ""},
        StopCase{"max0", [](StopConditions& s) { s.max_tokens = 0; }, false, "max_tokens must be >= 1, got 0"},
        StopCase{"max_neg", [](StopConditions& s) { s.max_tokens = -5; }, false, "max_tokens"},
        StopCase{"ids_ok", [](StopConditions& s) { s.stop_token_ids = {0, 99}; }, true, ""},
        StopCase{"id_vocab", [](StopConditions& s) { s.stop_token_ids = {3, 100}; }, false,
                 "stop_token_ids[1] must be in [0, 100), got 100"},
        StopCase{"id_neg", [](StopConditions& s) { s.stop_token_ids = {-1}; }, false,
                 "stop_token_ids[0] must be in [0, 100), got -1"},
        StopCase{"strings_ok", [](StopConditions& s) { s.stop_strings = {"\n\n", "é", "猫"}; }, true, ""},
        StopCase{"sixteen", [](StopConditions& s) { s.stop_strings.assign(16, "x"); }, true, ""},
        StopCase{"seventeen", [](StopConditions& s) { s.stop_strings.assign(17, "x"); }, false,
                 "stop_strings must have at most 16 entries, got 17"},
        StopCase{"empty", [](StopConditions& s) { s.stop_strings = {"a", ""}; }, false,
                 "stop_strings[1] must be non-empty"},
        StopCase{"len256", [](StopConditions& s) { s.stop_strings = {std::string(256, 'a')}; }, true, ""},
        StopCase{"len257", [](StopConditions& s) { s.stop_strings = {std::string(257, 'a')}; }, false,
                 "stop_strings[0] must be at most 256 bytes, got 257"},
        StopCase{"bad_utf8", [](StopConditions& s) { s.stop_strings = {"ok", "\xC3"}; }, false,
                 "stop_strings[1] must be valid UTF-8"},
        StopCase{"overlong", [](StopConditions& s) { s.stop_strings = {"\xC0\xAF"}; }, false,
                 "valid UTF-8"}),
    [](const ::testing::TestParamInfo<StopCase>& info) { return std::string(info.param.name); });

// FirstProblem names the field by id (callers lead the message with their own name for it)
// and Validate is "<member> <what>" of the same problem.
TEST(SamplingParamsTest, FirstProblemNamesTheFieldById) {
  SamplingParams ok;
  EXPECT_FALSE(ok.FirstProblem().has_value());
  SamplingParams p;
  p.top_p = 1.5f;
  p.logprobs = 30;  // also bad: the first in check order is reported
  const std::optional<SamplingProblem> problem = p.FirstProblem();
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->field, SamplingField::kTopP);
  EXPECT_EQ(problem->what, "must be in (0, 1], got 1.5");
  EXPECT_EQ(p.Validate().message(), "top_p must be in (0, 1], got 1.5");
  SamplingParams bias;
  bias.logit_bias = {{4, 101.0f}};
  ASSERT_TRUE(bias.FirstProblem().has_value());
  EXPECT_EQ(bias.FirstProblem()->field, SamplingField::kLogitBias);
  EXPECT_STREQ(SamplingFieldName(SamplingField::kRepetitionPenalty), "repetition_penalty");
}

}  // namespace
}  // namespace llmserve
