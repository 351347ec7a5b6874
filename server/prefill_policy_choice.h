// The prefill policy flags resolved, once at start-up, into one fixed policy
// (scheduler/prefill_policy.h) for the scheduler:
//
//   --step-policy separate                        → separate(--max-decode-stall)
//   --step-policy mixed and
//     --piggyback off, or --prefill-spread-steps 0  → bulk
//     --piggyback on                               → piggyback(--mixed-step-tokens, H)
//     --piggyback auto                             → piggyback(R, H) where the start-up
//                                                    measurement (piggyback_calibration.h)
//                                                    says it pays; bulk where it does not or
//                                                    could not be measured
//   (H = --prefill-spread-steps, R = --mixed-step-tokens)
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "scheduler/prefill_policy.h"
#include "server/piggyback_calibration.h"
#include "server/engine_spec.h"

namespace llmserve {

struct PrefillPolicyChoice {
  PrefillPolicyConfig policy;
  std::string reason;  // which flag or measurement chose it, for the start-up log
};

// Whether `config` asks for the start-up measurement (--piggyback auto, step policy
// mixed, --prefill-spread-steps > 0).
bool NeedsPiggybackCalibration(const EngineSpec& config);

// The policy `config` asks for. `calibration` (the measurement, or why there is none) is
// read only when NeedsPiggybackCalibration(config). A pure function.
PrefillPolicyChoice ResolvePrefillPolicy(const EngineSpec& config,
                                         const absl::StatusOr<PiggybackTimings>& calibration);

}  // namespace llmserve
