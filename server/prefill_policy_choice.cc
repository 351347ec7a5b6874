// ResolvePrefillPolicy: the table in prefill_policy_choice.h.
#include "server/prefill_policy_choice.h"

#include "absl/strings/str_cat.h"

namespace llmserve {

bool NeedsPiggybackCalibration(const EngineSpec& config) {
  return config.step_policy == StepPolicy::kMixed && config.piggyback == Piggyback::kAuto &&
         config.prefill_spread_steps > 0;
}

PrefillPolicyChoice ResolvePrefillPolicy(const EngineSpec& config,
                                         const absl::StatusOr<PiggybackTimings>& calibration) {
  PrefillPolicyChoice out;
  PrefillPolicyConfig& p = out.policy;
  p.max_decode_stall = config.max_decode_stall;
  p.rows = config.mixed_step_tokens;
  if (config.prefill_spread_steps > 0) p.horizon = config.prefill_spread_steps;
  if (config.step_policy == StepPolicy::kSeparate) {
    p.kind = PrefillPolicyKind::kSeparate;
    out.reason = "--step-policy separate";
    return out;
  }
  p.kind = PrefillPolicyKind::kBulk;
  if (config.piggyback == Piggyback::kOff) {
    out.reason = "--piggyback off";
    return out;
  }
  if (config.prefill_spread_steps == 0) {
    out.reason = "--prefill-spread-steps 0";
    return out;
  }
  if (config.piggyback == Piggyback::kOn) {
    p.kind = PrefillPolicyKind::kPiggyback;
    out.reason = "--piggyback on";
    return out;
  }
  if (!calibration.ok()) {
    out.reason = absl::StrCat("--piggyback auto, not measured: ", calibration.status().message());
    return out;
  }
  if (calibration->Pays()) p.kind = PrefillPolicyKind::kPiggyback;
  out.reason = absl::StrCat("--piggyback auto, measured once at start-up: ", calibration->Describe());
  return out;
}

}  // namespace llmserve
