// PiggybackMonitor (design in piggyback_monitor.h).
#include "scheduler/piggyback_monitor.h"

#include <algorithm>

namespace llmserve {
namespace {

constexpr int32_t kBulkPromptRows = 64;  // a step with this many prompt rows or more is bulk prefill
constexpr double kStaleWeight = 0.5;

}  // namespace

absl::Status PiggybackMonitorConfig::Validate() const {
  if (probe_interval <= absl::ZeroDuration()) return absl::InvalidArgumentError("probe_interval must be > 0");
  if (!(smoothing > 0 && smoothing <= 1)) return absl::InvalidArgumentError("smoothing must be in (0, 1]");
  if (!(off_below > 0 && off_below <= on_above)) {
    return absl::InvalidArgumentError("need 0 < off_below <= on_above");
  }
  if (switch_after < absl::ZeroDuration()) return absl::InvalidArgumentError("switch_after must be >= 0");
  return absl::OkStatus();
}

PiggybackMonitor::PiggybackMonitor(const PiggybackMonitorConfig& config, const PiggybackTimings& start,
                                   absl::Time now)
    : config_(config),
      t_(start),
      on_(start.Pays()),
      usual_seen_(now),
      filled_seen_(now),
      wanted_since_(absl::InfiniteFuture()) {}

void PiggybackMonitor::Observe(int32_t decode_rows, int32_t prefill_rows, absl::Duration forward, absl::Time now) {
  const int32_t rows = decode_rows + prefill_rows;
  if (rows <= 0) return;
  const double s = absl::ToDoubleSeconds(forward);
  // A sample after a long gap (a probe) counts for half: the average it joins is stale.
  auto weight = [&](absl::Time seen) {
    return now - seen >= config_.probe_interval ? std::max(config_.smoothing, kStaleWeight) : config_.smoothing;
  };
  if (prefill_rows >= kBulkPromptRows) {
    Blend(t_.prefill_token_s, s / rows, config_.smoothing);
  } else if (prefill_rows == 0 && decode_rows >= t_.decode_rows - kUsualDecodeSlack && decode_rows <= t_.decode_rows) {
    Blend(t_.decode_s, s, weight(usual_seen_));
    usual_seen_ = now;
  } else if (rows >= t_.filled_rows - 1 && rows <= t_.filled_rows) {
    Blend(t_.filled_s, s, weight(filled_seen_));
    filled_seen_ = now;
  } else {
    return;
  }
  Decide(now);
}

void PiggybackMonitor::Decide(absl::Time now) {
  const double gain = t_.Gain();
  const bool want = on_ ? gain >= config_.off_below : gain > config_.on_above;
  if (want == on_) {
    wanted_since_ = absl::InfiniteFuture();
    return;
  }
  if (wanted_since_ == absl::InfiniteFuture()) wanted_since_ = now;
  const bool fresh = usual_seen_ > wanted_since_ && filled_seen_ > wanted_since_;
  if (now - wanted_since_ >= config_.switch_after && fresh) {
    on_ = want;
    ++switches_;
    wanted_since_ = absl::InfiniteFuture();
  }
}

StepProbe PiggybackMonitor::Probe(absl::Time now) const {
  if (on_) return now - usual_seen_ >= config_.probe_interval ? StepProbe::kDecodeOnly : StepProbe::kNone;
  return now - filled_seen_ >= config_.probe_interval ? StepProbe::kPiggyback : StepProbe::kNone;
}

}  // namespace llmserve
