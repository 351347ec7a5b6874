// PiggybackMonitor (scheduler/piggyback_monitor.h): the start-up decision kept current
// from step times fed to it, with a margin, and the probes it asks for.
#include "scheduler/piggyback_monitor.h"

#include "gtest/gtest.h"

namespace llmserve {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

// A start-up measurement: 8-row decode steps, 12-row filled ones, bulk tokens of 4.8 ms.
PiggybackTimings Start(double decode_ms, double filled_ms) {
  PiggybackTimings t;
  t.decode_rows = 8;
  t.filled_rows = 12;
  t.decode_s = decode_ms / 1e3;
  t.filled_s = filled_ms / 1e3;
  t.prefill_token_s = 4.8e-3;
  return t;
}

absl::Duration Ms(double ms) { return absl::Microseconds(static_cast<int64_t>(ms * 1e3)); }

// Feeds `n` steps of (decode, prefill) rows taking `ms`, 70 ms apart, from `*now`.
void Feed(PiggybackMonitor& m, absl::Time* now, int n, int32_t decode, int32_t prefill, double ms) {
  for (int i = 0; i < n; ++i) {
    *now += absl::Milliseconds(70);
    m.Observe(decode, prefill, Ms(ms), *now);
  }
}

TEST(PiggybackMonitorTest, StartsFromTheStartUpMeasurement) {
  EXPECT_TRUE(PiggybackMonitor({}, Start(66, 67), kT0).on());   // slow state: gain 1.17
  EXPECT_FALSE(PiggybackMonitor({}, Start(47, 66), kT0).on());  // fast state: 0.97
}

// Serves `seconds` of 70 ms steps as the engine would: while on, filled steps (6 decode +
// 6 prompt rows) unless the monitor asks for a decode-only probe (8 rows); while off,
// usual 8-row steps unless it asks for a piggybacked probe. `usual_ms` / `filled_ms`: what
// those steps cost. Returns the time of the first switch (InfiniteFuture if none).
absl::Time Serve(PiggybackMonitor& m, absl::Time* now, double seconds, double usual_ms, double filled_ms) {
  const absl::Time end = *now + absl::Seconds(seconds);
  const int64_t switches = m.switches();
  absl::Time first = absl::InfiniteFuture();
  while (*now < end) {
    const StepProbe probe = m.Probe(*now);
    const bool filled = m.on() ? probe != StepProbe::kDecodeOnly : probe == StepProbe::kPiggyback;
    *now += absl::Milliseconds(70);
    if (filled) {
      m.Observe(m.on() ? 6 : 8, m.on() ? 6 : 4, Ms(filled_ms), *now);
    } else {
      m.Observe(8, 0, Ms(usual_ms), *now);
    }
    if (m.switches() != switches && first == absl::InfiniteFuture()) first = *now;
  }
  return first;
}

// Slow state, piggybacking on: the machine turns fast (8-row steps 47 ms, 12-row ones
// still 66). Only the decode-only probes see it; the monitor switches off within 25 s.
// Then, off, every step is a usual one: when they slow down again (65 ms) it switches
// back on within 15 s.
TEST(PiggybackMonitorTest, FollowsTheMachineBothWays) {
  absl::Time now = kT0;
  PiggybackMonitor m({}, Start(65, 67), now);
  ASSERT_TRUE(m.on());
  EXPECT_EQ(Serve(m, &now, 30, 65, 66), absl::InfiniteFuture());  // the slow state goes on
  EXPECT_TRUE(m.on());
  const absl::Time fast = now;
  const absl::Time off = Serve(m, &now, 40, 47, 66);
  ASSERT_NE(off, absl::InfiniteFuture());
  EXPECT_LE(off - fast, absl::Seconds(25));
  EXPECT_FALSE(m.on());
  EXPECT_EQ(m.switches(), 1);
  EXPECT_LT(m.timings().decode_s, 50e-3);

  const absl::Time slow = now;
  const absl::Time on = Serve(m, &now, 40, 65, 66);
  ASSERT_NE(on, absl::InfiniteFuture());
  EXPECT_LE(on - slow, absl::Seconds(15));
  EXPECT_TRUE(m.on());
  EXPECT_EQ(m.switches(), 2);
}

// A second of slow steps from a neighbour (every step 140 ms, then 90) moves only the
// average the mode refreshes; the decision waits for fresh samples of both kinds and
// does not flip.
TEST(PiggybackMonitorTest, ABurstOfSlowStepsDoesNotFlipIt) {
  for (const bool start_on : {true, false}) {
    absl::Time now = kT0;
    PiggybackMonitor m({}, start_on ? Start(65, 67) : Start(47, 66), now);
    const double usual = start_on ? 65 : 47;
    Serve(m, &now, 4.5, usual, 66);
    Serve(m, &now, 0.5, 140, 140);
    Serve(m, &now, 0.5, 90, 90);
    Serve(m, &now, 60, usual, 66);
    EXPECT_EQ(m.on(), start_on);
    EXPECT_EQ(m.switches(), 0);
  }
}

// Off, the filled estimate is only refreshed by kPiggyback probes.
TEST(PiggybackMonitorTest, AsksForAPiggybackProbeWhileOff) {
  absl::Time now = kT0;
  PiggybackMonitor m({}, Start(47, 66), now);
  ASSERT_FALSE(m.on());
  Feed(m, &now, 70, 8, 0, 47);
  EXPECT_EQ(m.Probe(now), StepProbe::kNone);
  Feed(m, &now, 2, 8, 0, 47);
  ASSERT_EQ(m.Probe(now), StepProbe::kPiggyback);
  Feed(m, &now, 1, 8, 4, 50);  // the filled step costs less now: 66 -> 58 ms, gain 1.10: still off
  EXPECT_FALSE(m.on());
  EXPECT_EQ(m.Probe(now), StepProbe::kNone);
  EXPECT_NEAR(m.timings().filled_s, 58e-3, 1e-4);
}

// Between a gain of 1.05 (off_below) and 1.15 (on_above), neither state changes.
TEST(PiggybackMonitorTest, MarginKeepsTheCurrentState) {
  for (const bool start_on : {true, false}) {
    absl::Time now = kT0;
    PiggybackMonitor m({}, start_on ? Start(60, 62) : Start(47, 66), now);
    ASSERT_EQ(m.on(), start_on);
    for (int i = 0; i < 200; ++i) {  // 8 rows 52 ms, 12 rows 62 ms: gain (39 + 28.8) / 62 = 1.094
      Feed(m, &now, 1, 8, 0, 52);
      Feed(m, &now, 1, 8, 4, 62);
    }
    EXPECT_NEAR(m.timings().Gain(), 67.8 / 62, 1e-3);
    EXPECT_EQ(m.on(), start_on);
    EXPECT_EQ(m.switches(), 0);
  }
}

// Bulk steps (64+ prompt rows) move the per-token cost; steps of other sizes are ignored.
TEST(PiggybackMonitorTest, WhichStepsCount) {
  absl::Time now = kT0;
  PiggybackMonitor m({}, Start(66, 67), now);
  Feed(m, &now, 1, 2, 126, 128 * 6.0);  // 6 ms a row: 4.8 -> 5.04 ms
  EXPECT_NEAR(m.timings().prefill_token_s, 5.04e-3, 1e-6);
  const PiggybackTimings before = m.timings();
  Feed(m, &now, 5, 3, 0, 30);   // too few rows for a usual step
  Feed(m, &now, 5, 9, 0, 30);   // between usual and filled
  Feed(m, &now, 5, 13, 0, 30);  // beyond filled
  Feed(m, &now, 5, 0, 0, 30);   // nothing
  EXPECT_EQ(m.timings().decode_s, before.decode_s);
  EXPECT_EQ(m.timings().filled_s, before.filled_s);
  EXPECT_EQ(m.timings().prefill_token_s, before.prefill_token_s);
  Feed(m, &now, 1, 11, 0, 80);  // an 11-row decode step is a filled one: 67 + 0.2 (80 - 67)
  EXPECT_NEAR(m.timings().filled_s, 69.6e-3, 1e-6);
}

TEST(PiggybackMonitorTest, ConfigValidate) {
  EXPECT_TRUE(PiggybackMonitorConfig{}.Validate().ok());
  PiggybackMonitorConfig c;
  c.probe_interval = absl::ZeroDuration();
  EXPECT_FALSE(c.Validate().ok());
  c = {};
  c.smoothing = 0;
  EXPECT_FALSE(c.Validate().ok());
  c = {};
  c.off_below = 1.2;  // above on_above
  EXPECT_FALSE(c.Validate().ok());
  c = {};
  c.switch_after = absl::Seconds(-1);
  EXPECT_FALSE(c.Validate().ok());
}

}  // namespace
}  // namespace llmserve
