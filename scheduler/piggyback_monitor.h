// PiggybackMonitor: keeps --piggyback auto's decision true to the machine while serving.
//
// The start-up measurement (piggyback_calibration.h) decides once; on a shared machine
// whose memory bandwidth moves within minutes, a 1B model's decode step of 8 rows costs
// 47 ms in one state and 65 in another, while a step filled to 12 rows costs ~66 in both,
// so piggybacking pays in the slow state and not in the fast one. The monitor watches the
// engine's own steps and re-applies the same rule (PiggybackTimings::Pays) to moving
// averages of three kinds of step:
//
//   usual   decode only, usual_rows - 2 .. usual_rows rows      (what a c8 step costs;
//           usual_rows: UsualDecodeRows, scheduler.h)
//   filled  filled_rows - 1 .. filled_rows rows, < 64 of them prompt tokens
//   bulk    64 or more prompt tokens: time per row               (a bulk prefill token)
//
// Each kind starts from the start-up measurement. While piggybacking is on, the steps
// are filled ones and usual steps grow rare; while it is off, filled steps never happen.
// So when the estimate the current mode does not refresh is older than probe_interval,
// Probe() asks for one step of the other kind (StepProbe, scheduler.h): a decode-only
// step while on, a piggybacked one while off. A probe costs about one step's worth of
// prompt progress every probe_interval (5 s).
// Switching has a margin (on above a gain of 1.15, off below 1.05; the start-up rule is
// 1.1) and must be wanted for switch_after (10 s) with both kinds measured
// afresh in that time: a burst of slow steps from a neighbour on the machine (seen: a
// second of 90-140 ms steps) moves whichever average the mode refreshes and would
// otherwise flip the decision on a stale comparison. A real change of the machine's
// state lasts minutes; the monitor follows it within ~15-20 s.
// Engine thread only.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "scheduler/piggyback_calibration.h"
#include "scheduler/scheduler.h"

namespace llmserve {

struct PiggybackMonitorConfig {
  absl::Duration probe_interval = absl::Seconds(5);  // oldest an estimate gets before a probe
  double smoothing = 0.2;  // weight of a new sample in its average (of one after a gap of
                           // probe_interval or more, e.g. a probe's: 0.5 at least)
  double on_above = 1.15;  // switch on when PiggybackTimings::Gain() exceeds this
  double off_below = 1.05; // switch off when it falls below this
  absl::Duration switch_after = absl::Seconds(10);  // how long a switch must be wanted

  absl::Status Validate() const;
};

class PiggybackMonitor {
 public:
  // `start`: the start-up measurement (its row counts define the usual and filled
  // kinds); piggybacking starts as start.Pays() says.
  PiggybackMonitor(const PiggybackMonitorConfig& config, const PiggybackTimings& start, absl::Time now);

  // After a step's forward pass: its decode and prompt rows and the pass's duration.
  void Observe(int32_t decode_rows, int32_t prefill_rows, absl::Duration forward, absl::Time now);

  // Whether piggybacking should be on.
  bool on() const { return on_; }
  // What the next step should be to refresh the estimate the current mode starves.
  StepProbe Probe(absl::Time now) const;
  // The current averages (same fields and rule as the start-up measurement).
  const PiggybackTimings& timings() const { return t_; }
  // Times on() changed.
  int64_t switches() const { return switches_; }

 private:
  static void Blend(double& avg, double sample, double weight) { avg += weight * (sample - avg); }
  void Decide(absl::Time now);

  PiggybackMonitorConfig config_;
  PiggybackTimings t_;
  bool on_;
  int64_t switches_ = 0;
  absl::Time usual_seen_, filled_seen_;  // last sample of each kind (or the start)
  absl::Time wanted_since_;              // when the averages began to want a switch;
                                         // InfiniteFuture while they agree with on_
};

}  // namespace llmserve
