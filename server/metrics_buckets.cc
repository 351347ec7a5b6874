// Histogram buckets sized for CPU inference: a step of a tiny model takes tens of
// microseconds, a long generation on a large one minutes.
#include "server/metrics.h"

namespace llmserve {

const prometheus::Histogram::BucketBoundaries& RequestLatencyBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0,  2.5,
      5.0,   7.5,    10.0,  15.0, 20.0,  30.0, 40.0,  60.0, 120.0, 240.0, 480.0, 960.0};
  return *b;
}

const prometheus::Histogram::BucketBoundaries& InterTokenLatencyBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1,
      0.15,  0.2,    0.3,   0.4,    0.5,  0.75,  1.0,  2.5,  5.0,  10.0, 20.0};
  return *b;
}

const prometheus::Histogram::BucketBoundaries& StepDurationBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
      0.05,    0.1,    0.25,    0.5,    1.0,   2.5,    5.0,   10.0};
  return *b;
}

const prometheus::Histogram::BucketBoundaries& RequestTokenBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000};
  return *b;
}

const prometheus::Histogram::BucketBoundaries& IterationTokenBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
  return *b;
}

const prometheus::Histogram::BucketBoundaries& ConstraintCompileBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
      0.25,   0.5,     1.0,    2.5,   5.0,    10.0,  30.0, 60.0};
  return *b;
}

const prometheus::Histogram::BucketBoundaries& ConstraintMaskBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      0.000001, 0.0000025, 0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
      0.001,    0.0025,    0.005,    0.01,    0.025,    0.05,    0.1,    0.25,    1.0,     10.0};
  return *b;
}

}  // namespace llmserve
