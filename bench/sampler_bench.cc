// RequestSampler::Sample on one 32000-entry row of random logits (normal, stddev 2, so
// top-p keeps a large share of the vocabulary: a pessimistic case; "Peaked" adds eight
// tokens far above the bulk, closer to a confident model), per configuration:
//
//   sampler_bench [google-benchmark flags]
//
// Each iteration copies the row into the scratch Sample consumes (a 128 KB memcpy, also
// timed; a real engine hands over its logits row in place). "Time" is ns per call.
#include <cstring>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "model/sampler.h"

namespace {

using llmserve::RequestSampler;
using llmserve::SamplingParams;

constexpr int kVocab = 32000;

std::vector<float> RandomRow(uint32_t seed, float stddev) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, stddev);
  std::vector<float> row(kVocab);
  for (float& x : row) x = d(rng);
  return row;
}

// `peaked`: a few tokens far above the bulk, as in a confident model's row.
void Run(benchmark::State& state, const SamplingParams& params, int prior_ids,
         bool peaked = false) {
  std::vector<float> row = RandomRow(1, 2.0f);
  if (peaked) {
    for (int i = 0; i < 8; ++i) row[(i * 7919) % kVocab] = 14.0f + static_cast<float>(i) * 0.5f;
  }
  std::vector<float> scratch(kVocab);
  std::mt19937 rng(2);
  std::vector<int32_t> prompt, generated;
  for (int i = 0; i < prior_ids; ++i) {
    (i % 2 ? prompt : generated).push_back(static_cast<int32_t>(rng() % kVocab));
  }
  RequestSampler sampler(params, 3);
  for (auto _ : state) {
    std::memcpy(scratch.data(), row.data(), sizeof(float) * kVocab);
    benchmark::DoNotOptimize(sampler.Sample(scratch, prompt, generated).id);
  }
}

void BM_Greedy(benchmark::State& state) {
  SamplingParams p;
  p.temperature = 0.0f;
  Run(state, p, 0);
}

void BM_Temperature(benchmark::State& state) {
  SamplingParams p;
  p.temperature = 0.8f;
  Run(state, p, 0);
}

void BM_TopK40(benchmark::State& state) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 40;
  Run(state, p, 0);
}

void BM_TopP09(benchmark::State& state) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_p = 0.9f;
  Run(state, p, 0);
}

void BM_TopP09Peaked(benchmark::State& state) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_p = 0.9f;
  Run(state, p, 0, /*peaked=*/true);
}

void BM_TopP09Penalties512(benchmark::State& state) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_p = 0.9f;
  p.repetition_penalty = 1.1f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.5f;
  Run(state, p, 512);
}

void BM_TopP09Logprobs5(benchmark::State& state) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_p = 0.9f;
  p.want_logprobs = true;
  p.logprobs = 5;
  Run(state, p, 0);
}

BENCHMARK(BM_Greedy);
BENCHMARK(BM_Temperature);
BENCHMARK(BM_TopK40);
BENCHMARK(BM_TopP09);
BENCHMARK(BM_TopP09Peaked);
BENCHMARK(BM_TopP09Penalties512);
BENCHMARK(BM_TopP09Logprobs5);

}  // namespace

BENCHMARK_MAIN();
