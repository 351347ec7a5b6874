// RequestSampler: greedy, penalties (hand-computed), truncation (top-k / top-p / min-p),
// sampled distributions, seeding, incremental counts under replay, logprobs; and a
// double-precision reference sampler run on the same uniform draws.
#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <ostream>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace llmserve {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
using Ids = std::vector<int32_t>;

SamplingParams Greedy() {
  SamplingParams p;
  p.temperature = 0.0f;
  return p;
}

// One Sample on a copy of `logits` (Sample uses its argument as scratch).
int32_t SampleOnce(RequestSampler& s, const std::vector<float>& logits, const Ids& prompt = {},
                   const Ids& generated = {}) {
  std::vector<float> row = logits;
  return s.Sample(row, prompt, generated).id;
}

std::vector<float> RandomRow(std::mt19937& rng, int vocab, float stddev) {
  std::normal_distribution<float> d(0.0f, stddev);
  std::vector<float> row(vocab);
  for (float& x : row) x = d(rng);
  return row;
}

int32_t FirstArgmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

TEST(SamplerTest, GreedyIsArgmaxLowestIdOnTies) {
  RequestSampler s(Greedy(), 1);
  EXPECT_EQ(SampleOnce(s, {1.0f, 3.0f, 3.0f, 2.0f}), 1);
  EXPECT_EQ(SampleOnce(s, {5.0f, 5.0f}), 0);
  EXPECT_EQ(SampleOnce(s, {-2.0f, -1.0f, -1.0f}), 1);
  EXPECT_EQ(SampleOnce(s, {std::nanf(""), 0.5f, 0.7f, std::nanf("")}), 2);
  EXPECT_EQ(SampleOnce(s, {kNegInf, kNegInf, -1e30f}), 2);
  std::mt19937 rng(7);
  for (int i = 0; i < 50; ++i) {
    std::vector<float> row = RandomRow(rng, 1000, 3.0f);
    row[rng() % 1000] = 50.0f;
    row[rng() % 1000] = 50.0f;  // possibly a tie
    EXPECT_EQ(SampleOnce(s, row), FirstArgmax(row)) << i;
  }
}

struct PenaltyCase {
  const char* name;
  float rep, pres, freq;
  std::vector<float> logits;
  Ids prompt, generated;
  int32_t want;  // greedy choice after penalties
};

void PrintTo(const PenaltyCase& c, std::ostream* os) { *os << c.name; }

class PenaltyTest : public ::testing::TestWithParam<PenaltyCase> {};

TEST_P(PenaltyTest, ChangesTheGreedyChoice) {
  const PenaltyCase& c = GetParam();
  SamplingParams p = Greedy();
  p.repetition_penalty = c.rep;
  p.presence_penalty = c.pres;
  p.frequency_penalty = c.freq;
  RequestSampler s(p, 0);
  EXPECT_EQ(SampleOnce(s, c.logits, c.prompt, c.generated), c.want);
}

INSTANTIATE_TEST_SUITE_P(
    HandComputed, PenaltyTest,
    ::testing::Values(
        // repetition, positive logit: 2.0 / 2 = 1.0 < 1.01, but 2.0 / 1.9 = 1.053 > 1.01.
        PenaltyCase{"rep_pos_loses", 2.0f, 0, 0, {2.0f, 1.01f}, {0}, {}, 1},
        PenaltyCase{"rep_pos_keeps", 1.9f, 0, 0, {2.0f, 1.01f}, {0}, {}, 0},
        // repetition, negative logit: -1 * 2 = -2 < -1.9, but -1 * 1.8 = -1.8 > -1.9.
        PenaltyCase{"rep_neg_loses", 2.0f, 0, 0, {-1.0f, -1.9f}, {0}, {}, 1},
        PenaltyCase{"rep_neg_keeps", 1.8f, 0, 0, {-1.0f, -1.9f}, {0}, {}, 0},
        // repetition counts generated ids as well as the prompt; unseen ids untouched.
        PenaltyCase{"rep_generated", 2.0f, 0, 0, {2.0f, 1.01f}, {}, {0}, 1},
        PenaltyCase{"rep_other_id", 2.0f, 0, 0, {2.0f, 1.01f}, {1}, {}, 0},
        PenaltyCase{"rep_below_one", 0.5f, 0, 0, {1.0f, 1.5f}, {0}, {}, 0},  // 1 / 0.5 = 2
        // frequency: per occurrence. 3 - 2 * 0.3 = 2.4 < 2.5; 3 - 0.3 = 2.7 > 2.5.
        PenaltyCase{"freq_twice", 1.0f, 0, 0.3f, {3.0f, 2.5f}, {}, {0, 0}, 1},
        PenaltyCase{"freq_once", 1.0f, 0, 0.3f, {3.0f, 2.5f}, {}, {0}, 0},
        PenaltyCase{"freq_negative", 1.0f, 0, -0.2f, {2.5f, 2.8f}, {}, {0}, 1},
        PenaltyCase{"freq_negative_boosts", 1.0f, 0, -0.2f, {2.5f, 2.8f}, {}, {0, 0}, 0},
        // presence: once per distinct id, whatever the count. 3 - 0.6 < 2.5; 3 - 0.4 > 2.5.
        PenaltyCase{"pres_loses", 1.0f, 0.6f, 0, {3.0f, 2.5f}, {}, {0, 0, 0}, 1},
        PenaltyCase{"pres_once", 1.0f, 0.4f, 0, {3.0f, 2.5f}, {}, {0, 0, 0}, 0},
        // presence / frequency ignore the prompt.
        PenaltyCase{"pres_not_prompt", 1.0f, 2.0f, 2.0f, {3.0f, 2.5f}, {0, 0}, {}, 0},
        // order: repetition first, then subtraction. 3 / 2 - 0.4 = 1.1 < 1.2
        // (the other order would give (3 - 0.4) / 2 = 1.3 > 1.2).
        PenaltyCase{"rep_then_freq", 2.0f, 0, 0.4f, {3.0f, 1.2f}, {}, {0}, 1},
        // out-of-range ids are ignored.
        PenaltyCase{"out_of_range", 2.0f, 1.0f, 1.0f, {3.0f, 2.5f}, {-1, 7}, {9}, 0}),
    [](const ::testing::TestParamInfo<PenaltyCase>& info) { return std::string(info.param.name); });

TEST(SamplerTest, CountsAreIncrementalAndSurviveReplay) {
  SamplingParams p = Greedy();
  p.frequency_penalty = 0.3f;
  RequestSampler s(p, 0);
  const std::vector<float> row = {3.0f, 2.5f, 0.0f};
  EXPECT_EQ(SampleOnce(s, row, {}, {}), 0);
  EXPECT_EQ(SampleOnce(s, row, {}, {0}), 0);      // 2.7
  EXPECT_EQ(SampleOnce(s, row, {}, {0}), 0);      // replayed unchanged: still 2.7
  EXPECT_EQ(SampleOnce(s, row, {}, {0}), 0);
  EXPECT_EQ(SampleOnce(s, row, {}, {0, 2}), 0);   // another id: 0 still at 2.7
  EXPECT_EQ(SampleOnce(s, row, {}, {0, 2, 0}), 1);  // 2.4
  EXPECT_EQ(SampleOnce(s, row, {}, {0, 2, 0}), 1);
  EXPECT_EQ(SampleOnce(s, row, {}, {0}), 0);      // shrank (preempted): rebuilt
  EXPECT_EQ(SampleOnce(s, row, {}, {2, 2, 2}), 0);  // same length, different ids
  EXPECT_EQ(SampleOnce(s, row, {}, {0, 0}), 1);
}

TEST(SamplerTest, PromptChangeRebuildsRepetitionCounts) {
  SamplingParams p = Greedy();
  p.repetition_penalty = 2.0f;
  RequestSampler s(p, 0);
  const std::vector<float> row = {3.0f, 2.0f, 0.0f};
  EXPECT_EQ(SampleOnce(s, row, {0}, {}), 1);
  EXPECT_EQ(SampleOnce(s, row, {2}, {}), 0);
  EXPECT_EQ(SampleOnce(s, row, {2, 0}, {}), 1);
  EXPECT_EQ(SampleOnce(s, row, {2}, {}), 0);
}

TEST(SamplerTest, IncrementalEqualsFreshOnRandomHistories) {
  // A long-lived sampler fed one id at a time (with replays) chooses like a fresh one.
  SamplingParams p = Greedy();
  p.repetition_penalty = 1.3f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.2f;
  std::mt19937 rng(3);
  RequestSampler live(p, 0);
  const Ids prompt = {1, 2, 3, 3, 40};
  Ids generated;
  for (int step = 0; step < 200; ++step) {
    const std::vector<float> row = RandomRow(rng, 64, 1.0f);
    RequestSampler fresh(p, 0);
    const int32_t want = SampleOnce(fresh, row, prompt, generated);
    EXPECT_EQ(SampleOnce(live, row, prompt, generated), want) << step;
    if (rng() % 4 == 0) {
      EXPECT_EQ(SampleOnce(live, row, prompt, generated), want) << step;
    }
    generated.push_back(static_cast<int32_t>(rng() % 8));  // a small set: many repeats
  }
}

// ---- A straightforward double-precision reference of the documented pipeline ----

struct Reference {
  SamplingParams p;
  // Penalized logits (applied here independently of the sampler's bookkeeping).
  std::vector<double> Penalize(const std::vector<float>& logits, const Ids& prompt,
                               const Ids& generated) const {
    std::vector<double> l(logits.begin(), logits.end());
    std::map<int32_t, int> counts;
    for (int32_t id : generated) ++counts[id];
    std::vector<bool> seen(l.size());
    for (int32_t id : prompt) seen[id] = true;
    for (int32_t id : generated) seen[id] = true;
    for (size_t i = 0; i < l.size(); ++i) {
      float x = logits[i];
      if (seen[i] && p.repetition_penalty != 1.0f) {
        x = x > 0 ? x / p.repetition_penalty : x * p.repetition_penalty;
      }
      auto it = counts.find(static_cast<int32_t>(i));
      if (it != counts.end()) {
        x -= p.frequency_penalty * static_cast<float>(it->second);
        x -= p.presence_penalty;
      }
      l[i] = x;
    }
    return l;
  }
  // Id chosen for uniform u: the walk is in (prob desc, id asc) order when top-k
  // truncated, in id order otherwise (the sampler's documented walk orders).
  int32_t Choose(const std::vector<double>& l, double u) const {
    struct C {
      double v;
      int32_t id;
    };
    std::vector<C> c;
    for (size_t i = 0; i < l.size(); ++i) c.push_back({l[i], static_cast<int32_t>(i)});
    auto better = [](const C& a, const C& b) { return a.v > b.v || (a.v == b.v && a.id < b.id); };
    std::sort(c.begin(), c.end(), better);
    const bool topk = p.top_k > 0 && static_cast<size_t>(p.top_k) < c.size();
    if (topk) c.resize(p.top_k);
    const double m = c[0].v;
    double z = 0;
    for (C& x : c) z += (x.v = std::exp((x.v - m) / p.temperature));
    size_t keep = c.size();
    if (p.top_p < 1.0f) {
      double cum = 0;
      for (size_t j = 0; j < c.size(); ++j) {
        cum += c[j].v;
        if (cum >= p.top_p * z) {
          keep = j + 1;
          break;
        }
      }
    }
    c.resize(keep);
    c.erase(std::remove_if(c.begin() + 1, c.end(), [&](const C& x) { return x.v < p.min_p; }),
            c.end());
    if (!topk) std::sort(c.begin(), c.end(), [](const C& a, const C& b) { return a.id < b.id; });
    double total = 0;
    for (const C& x : c) total += x.v;
    double cum = 0;
    for (const C& x : c) {
      cum += x.v;
      if (cum > u * total) return x.id;
    }
    return c.back().id;
  }
};

double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

struct RefCase {
  const char* name;
  float temperature;
  int32_t top_k;
  float top_p, min_p, rep, pres, freq;
  int vocab;
  float stddev;
};

void PrintTo(const RefCase& c, std::ostream* os) { *os << c.name; }

class ReferenceTest : public ::testing::TestWithParam<RefCase> {};

TEST_P(ReferenceTest, SameIdsAsDoublePrecisionReferenceOnTheSameDraws) {
  const RefCase& c = GetParam();
  SamplingParams p;
  p.temperature = c.temperature;
  p.top_k = c.top_k;
  p.top_p = c.top_p;
  p.min_p = c.min_p;
  p.repetition_penalty = c.rep;
  p.presence_penalty = c.pres;
  p.frequency_penalty = c.freq;
  ASSERT_TRUE(p.Validate().ok());
  const uint64_t seed = 42;
  RequestSampler s(p, seed);
  std::mt19937_64 ref_rng(seed);  // one draw per token: the reference mirrors the stream
  const Reference ref{p};
  std::mt19937 rng(11);
  const Ids prompt = {3, 5, 5, 8};
  Ids generated;
  int mismatches = 0, distinct = 0;
  std::vector<bool> seen(c.vocab);
  const int steps = 1000;
  for (int step = 0; step < steps; ++step) {
    const std::vector<float> row = RandomRow(rng, c.vocab, c.stddev);
    const int32_t got = SampleOnce(s, row, prompt, generated);
    const int32_t want = ref.Choose(ref.Penalize(row, prompt, generated), Uniform(ref_rng));
    if (got != want) ++mismatches;
    if (!seen[got]) ++distinct, seen[got] = true;
    generated.push_back(got % 16);  // keep penalties in play
  }
  // FastExp (~2e-7 relative) may flip a draw that lands within ~1e-7 of a boundary.
  EXPECT_LE(mismatches, 2) << "of " << steps;
  RecordProperty("mismatches", mismatches);
  EXPECT_GT(distinct, 5);  // genuinely random, not stuck on one id
}

INSTANTIATE_TEST_SUITE_P(
    Pipelines, ReferenceTest,
    ::testing::Values(
        RefCase{"temperature", 0.8f, 0, 1.0f, 0.0f, 1.0f, 0, 0, 8000, 2.0f},
        RefCase{"top_k_40", 1.0f, 40, 1.0f, 0.0f, 1.0f, 0, 0, 8000, 2.0f},
        RefCase{"top_k_300_nth_element", 1.2f, 300, 1.0f, 0.0f, 1.0f, 0, 0, 5000, 2.0f},
        RefCase{"top_p_0_9", 0.7f, 0, 0.9f, 0.0f, 1.0f, 0, 0, 8000, 3.0f},
        RefCase{"top_p_0_5_peaked", 1.0f, 0, 0.5f, 0.0f, 1.0f, 0, 0, 4000, 5.0f},
        RefCase{"min_p", 1.0f, 0, 1.0f, 0.05f, 1.0f, 0, 0, 4000, 3.0f},
        RefCase{"top_k_top_p_min_p", 0.9f, 50, 0.8f, 0.02f, 1.0f, 0, 0, 8000, 3.0f},
        RefCase{"top_p_penalties", 1.0f, 0, 0.9f, 0.0f, 1.3f, 0.5f, 0.3f, 2000, 2.0f},
        RefCase{"top_k_penalties", 1.0f, 20, 1.0f, 0.0f, 1.2f, -0.5f, 0.4f, 2000, 2.0f}),
    [](const ::testing::TestParamInfo<RefCase>& info) { return std::string(info.param.name); });

TEST(SamplerTest, TopKOneAndTinyTopPEqualGreedy) {
  std::mt19937 rng(5);
  SamplingParams k1;
  k1.top_k = 1;
  SamplingParams tiny;
  tiny.top_p = 1e-6f;
  SamplingParams tiny_k;
  tiny_k.top_p = 1e-6f;
  tiny_k.top_k = 50;
  RequestSampler a(k1, 1), b(tiny, 2), c(tiny_k, 3);
  for (int i = 0; i < 100; ++i) {
    std::vector<float> row = RandomRow(rng, 2000, 1.0f);
    if (i % 3 == 0) row[rng() % 2000] = row[FirstArgmax(row)];  // a tie for the max
    const int32_t want = FirstArgmax(row);
    EXPECT_EQ(SampleOnce(a, row), want) << i;
    EXPECT_EQ(SampleOnce(b, row), want) << i;
    EXPECT_EQ(SampleOnce(c, row), want) << i;
  }
}

// Draws `n` tokens from `logits` and returns the count per id.
std::vector<int> Histogram(const SamplingParams& p, uint64_t seed, const std::vector<float>& logits,
                           int n) {
  RequestSampler s(p, seed);
  std::vector<int> counts(logits.size());
  for (int i = 0; i < n; ++i) ++counts[SampleOnce(s, logits)];
  return counts;
}

struct DistCase {
  const char* name;
  float temperature;
  int32_t top_k;
  float top_p, min_p;
  std::vector<double> target;  // expected probabilities of ids 0..5 (0 = pruned)
};

void PrintTo(const DistCase& c, std::ostream* os) { *os << c.name; }

class DistributionTest : public ::testing::TestWithParam<DistCase> {};

TEST_P(DistributionTest, EmpiricalFrequenciesMatchTheTruncatedTarget) {
  const DistCase& c = GetParam();
  const std::vector<double> base = {0.4, 0.25, 0.15, 0.1, 0.06, 0.04};
  SamplingParams p;
  p.temperature = c.temperature;
  p.top_k = c.top_k;
  p.top_p = c.top_p;
  p.min_p = c.min_p;
  // Both the small row and the same six tokens spread over a 3000-vocab row of -inf
  // (many 64-entry blocks, dense path) must follow the target.
  for (int spread : {1, 499}) {
    std::vector<float> logits(spread == 1 ? 6 : 3000, kNegInf);
    for (int i = 0; i < 6; ++i) logits[i * spread] = static_cast<float>(std::log(base[i]) + 1.7);
    const int n = 20000;
    const std::vector<int> counts = Histogram(p, 2024, logits, n);
    double chi2 = 0;
    int df = -1;
    for (int i = 0; i < 6; ++i) {
      const int got = counts[i * spread];
      if (c.target[i] == 0) {
        EXPECT_EQ(got, 0) << "pruned id " << i << " spread " << spread;
        continue;
      }
      const double expect = n * c.target[i];
      chi2 += (got - expect) * (got - expect) / expect;
      ++df;
    }
    int total = 0;
    for (int x : counts) total += x;
    EXPECT_EQ(total, n);
    // df <= 5: P(chi2 > 30) < 2e-5 for the true distribution; a wrong one is far above.
    EXPECT_LT(chi2, 30.0) << "df " << df << " spread " << spread;
  }
}

std::vector<double> Normalize(std::vector<double> v) {
  double s = 0;
  for (double x : v) s += x;
  for (double& x : v) x /= s;
  return v;
}

INSTANTIATE_TEST_SUITE_P(
    Known, DistributionTest,
    ::testing::Values(
        DistCase{"plain", 1.0f, 0, 1.0f, 0.0f, {0.4, 0.25, 0.15, 0.1, 0.06, 0.04}},
        DistCase{"temperature_0_5", 0.5f, 0, 1.0f, 0.0f,
                 Normalize({0.16, 0.0625, 0.0225, 0.01, 0.0036, 0.0016})},
        DistCase{"temperature_2", 2.0f, 0, 1.0f, 0.0f,
                 Normalize({std::sqrt(0.4), std::sqrt(0.25), std::sqrt(0.15), std::sqrt(0.1),
                            std::sqrt(0.06), std::sqrt(0.04)})},
        DistCase{"top_k_3", 1.0f, 3, 1.0f, 0.0f, Normalize({0.4, 0.25, 0.15, 0, 0, 0})},
        // 0.4 + 0.25 = 0.65 < 0.7 → three tokens.
        DistCase{"top_p_0_7", 1.0f, 0, 0.7f, 0.0f, Normalize({0.4, 0.25, 0.15, 0, 0, 0})},
        DistCase{"top_p_0_6", 1.0f, 0, 0.6f, 0.0f, Normalize({0.4, 0.25, 0, 0, 0, 0})},
        // min_p 0.2 × 0.4 = 0.08: drops 0.06 and 0.04.
        DistCase{"min_p_0_2", 1.0f, 0, 1.0f, 0.2f, Normalize({0.4, 0.25, 0.15, 0.1, 0, 0})},
        DistCase{"min_p_0_7", 1.0f, 0, 1.0f, 0.7f, {1, 0, 0, 0, 0, 0}},
        DistCase{"top_k_5_min_p", 1.0f, 5, 1.0f, 0.3f, Normalize({0.4, 0.25, 0.15, 0, 0, 0})},
        DistCase{"top_k_5_top_p", 1.0f, 5, 0.85f, 0.0f, Normalize({0.4, 0.25, 0.15, 0.1, 0, 0})}),
    [](const ::testing::TestParamInfo<DistCase>& info) { return std::string(info.param.name); });

TEST(SamplerTest, OneDrawPerTokenFromTheSeed) {
  // Four equal logits: the walk picks floor(4u) for u = (draw >> 11) · 2^-53, so the
  // ids are predicted exactly by an independent generator with the same seed.
  for (uint64_t seed : {0ull, 1ull, 123456789ull}) {
    RequestSampler s(SamplingParams{}, seed);
    EXPECT_EQ(s.seed(), seed);
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 200; ++i) {
      const int32_t want = static_cast<int32_t>(Uniform(rng) * 4.0);
      ASSERT_EQ(SampleOnce(s, {0.5f, 0.5f, 0.5f, 0.5f}), want) << "seed " << seed << " i " << i;
    }
  }
}

TEST(SamplerTest, SameSeedSameSequenceDifferentSeedDifferent) {
  std::mt19937 rng(17);
  const std::vector<float> row = RandomRow(rng, 32000, 1.0f);
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_p = 0.9f;
  auto run = [&](uint64_t seed, RequestSampler* other) {
    RequestSampler s(p, seed);
    Ids out;
    for (int i = 0; i < 50; ++i) {
      out.push_back(SampleOnce(s, row));
      if (other) SampleOnce(*other, row);  // interleaved with another request
    }
    return out;
  };
  RequestSampler noise(p, 999);
  const Ids a = run(7, nullptr);
  EXPECT_EQ(run(7, &noise), a);
  EXPECT_NE(run(8, nullptr), a);
}

// log-softmax in double.
std::vector<double> LogSoftmax(const std::vector<float>& v) {
  double m = -std::numeric_limits<double>::infinity();
  for (float x : v) m = std::max<double>(m, x);
  double s = 0;
  for (float x : v) s += std::exp(x - m);
  std::vector<double> out;
  for (float x : v) out.push_back(x - m - std::log(s));
  return out;
}

TEST(SamplerTest, LogprobsAreRawLogSoftmaxWithOrderedTopN) {
  std::mt19937 rng(23);
  SamplingParams p;
  p.temperature = 0.5f;  // neither temperature nor penalties change reported logprobs
  p.repetition_penalty = 1.5f;
  p.frequency_penalty = 1.0f;
  p.want_logprobs = true;
  p.logprobs = 5;
  RequestSampler s(p, 77);
  for (int iter = 0; iter < 20; ++iter) {
    std::vector<float> row = RandomRow(rng, 32000, 4.0f);
    row[100] = row[200] = row[50] = 30.0f;  // a three-way tie at the top
    const std::vector<double> ref = LogSoftmax(row);
    std::vector<float> scratch = row;
    const Ids prompt = {100, 7}, generated = {200, 200};
    const SampledToken t = s.Sample(scratch, prompt, generated);
    ASSERT_GE(t.id, 0);
    EXPECT_NEAR(t.logprob, ref[t.id], 1e-5) << iter;
    ASSERT_EQ(t.top.size(), 5u);
    std::vector<int32_t> order(row.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    EXPECT_EQ(t.top[0].first, 50);
    EXPECT_EQ(t.top[1].first, 100);
    EXPECT_EQ(t.top[2].first, 200);
    for (size_t j = 0; j < 5; ++j) {
      EXPECT_EQ(t.top[j].first, order[j]) << iter << " rank " << j;
      EXPECT_NEAR(t.top[j].second, ref[order[j]], 1e-5) << iter << " rank " << j;
    }
  }
}

TEST(SamplerTest, LogprobsOnlyWhenWanted) {
  SamplingParams p = Greedy();
  p.logprobs = 3;
  RequestSampler quiet(p, 0);
  std::vector<float> row = {1.0f, 2.0f, 0.0f};
  SampledToken t = quiet.Sample(row, {}, {});
  EXPECT_EQ(t.id, 1);
  EXPECT_EQ(t.logprob, 0.0f);
  EXPECT_TRUE(t.top.empty());

  p.want_logprobs = true;
  p.logprobs = 0;
  RequestSampler chosen_only(p, 0);
  row = {1.0f, 2.0f, 0.0f};
  t = chosen_only.Sample(row, {}, {});
  EXPECT_EQ(t.id, 1);
  EXPECT_NEAR(t.logprob, LogSoftmax({1.0f, 2.0f, 0.0f})[1], 1e-6);
  EXPECT_TRUE(t.top.empty());
}

// logit_bias is added before everything else: it moves greedy's argmax and bans a token
// from sampling, while the logprobs stay those of the raw logits.
TEST(SamplerTest, LogitBiasShiftsSelectionNotLogprobs) {
  const std::vector<float> row = {1.0f, 2.0f, 0.0f, 1.5f};
  SamplingParams p = Greedy();
  p.want_logprobs = true;
  p.logit_bias = {{2, 3.0f}};
  RequestSampler forced(p, 0);
  std::vector<float> scratch = row;
  const SampledToken t = forced.Sample(scratch, {}, {});
  EXPECT_EQ(t.id, 2);
  EXPECT_NEAR(t.logprob, LogSoftmax(row)[2], 1e-6);

  SamplingParams banned;  // temperature 1: id 1 would be drawn often without the ban
  banned.logit_bias = {{1, -100.0f}};
  RequestSampler s(banned, 5);
  int ones = 0;
  for (int i = 0; i < 500; ++i) ones += SampleOnce(s, row) == 1;
  EXPECT_EQ(ones, 0);
  EXPECT_TRUE(banned.Validate().ok());
  banned.logit_bias = {{1, 101.0f}};
  EXPECT_FALSE(banned.Validate().ok());
}

TEST(SamplerTest, NeverSamplesNanOrMinusInf) {
  std::vector<float> row(300, kNegInf);
  row[10] = 1.0f;
  row[20] = std::nanf("");
  row[200] = 1.5f;
  for (int32_t k : {0, 5, 299}) {
    SamplingParams p;
    p.top_k = k;
    p.temperature = 3.0f;
    RequestSampler s(p, static_cast<uint64_t>(k));
    for (int i = 0; i < 500; ++i) {
      const int32_t id = SampleOnce(s, row);
      ASSERT_TRUE(id == 10 || id == 200) << id;
    }
  }
}


// A row built from raw generator bits only (std::normal_distribution differs between
// standard libraries), in [-6, 6).
std::vector<float> PortableRow(uint64_t seed, int vocab) {
  std::mt19937_64 g(seed);
  std::vector<float> row(vocab);
  for (float& x : row) x = static_cast<float>(static_cast<double>(g() >> 40) * 0x1.0p-24 * 12.0 - 6.0);
  return row;
}

TEST(SamplerTest, SeededSequencesAreStable) {
  // Golden ids: the sampler's output for a seed must not change between builds, CPUs
  // (vector width) or standard libraries. A deliberate change of the algorithm updates
  // these lists.
  struct Golden {
    const char* name;
    SamplingParams params;
    Ids want;
  };
  std::vector<Golden> cases(4);
  cases[0].name = "temp0.8_top_p0.9";
  cases[0].params.temperature = 0.8f;
  cases[0].params.top_p = 0.9f;
  cases[1].name = "top_k40";
  cases[1].params.top_k = 40;
  cases[2].name = "min_p0.05_temp1.5";
  cases[2].params.temperature = 1.5f;
  cases[2].params.min_p = 0.05f;
  cases[3].name = "penalties_top_p0.7";
  cases[3].params.top_p = 0.7f;
  cases[3].params.repetition_penalty = 1.3f;
  cases[3].params.frequency_penalty = 0.5f;
  cases[3].params.presence_penalty = 0.5f;
  cases[0].want = {30016, 1554, 31213, 30061, 5709, 30215, 28375, 30191, 2892, 24222, 30248, 3387};
  cases[1].want = {17137, 12519, 9851, 25388, 9486, 28895, 13428, 7437, 5093, 440, 10193, 22801};
  cases[2].want = {30142, 1622, 31123, 30134, 5755, 30235, 28350, 30177, 2894, 24135, 30256, 3494};
  cases[3].want = {30012, 1553, 31250, 30052, 5663, 30237, 28344, 30191, 2894, 24222, 30281, 3387};
  for (const Golden& c : cases) {
    RequestSampler s(c.params, 1234);
    const Ids prompt = {1, 2, 3};
    Ids generated;
    for (int step = 0; step < 12; ++step) {
      const std::vector<float> row = PortableRow(static_cast<uint64_t>(step), 32000);
      generated.push_back(SampleOnce(s, row, prompt, generated));
    }
    EXPECT_EQ(generated, c.want) << c.name;
  }
}

}  // namespace
}  // namespace llmserve
