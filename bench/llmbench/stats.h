// Summary statistics over latency samples: mean and percentiles with linear interpolation
// between order statistics (numpy.percentile's default, as vLLM's benchmark reports).
#pragma once

#include <cstddef>
#include <vector>

namespace llmbench {

// Summary of a sample; all zero when count == 0.
struct Summary {
  size_t count = 0;
  double mean = 0;
  double min = 0;
  double max = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
};

// The q-th percentile (q in [0, 100]) of an ascending-sorted, non-empty sample.
double PercentileSorted(const std::vector<double>& sorted, double q);

// Summarizes `values` (sorted in place).
Summary Summarize(std::vector<double>* values);

}  // namespace llmbench
