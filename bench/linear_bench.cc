// Linear::Forward on the "1b" model's shapes as the transformer runs them (TinyLlama: dim
// 2048, FFN 5632, KV dim 256; Q|K|V and gate|up fused, plus the vocabulary head), f32 and
// bf16 weights, M = 1, 4, 16, 512. For M <= kGemvMaxRows each runs twice: gemv:1 is the
// default path (the AVX-512 GEMV of model/ops/gemv.h), gemv:0 oneDNN's matmul.
//
//   linear_bench [--threads=N] [google-benchmark flags]      (default 2 threads)
//
// Reports GFLOP/s (2·M·in·out per call) and weight bytes/s ("bytes_per_second": packed
// weight bytes read per call). Weights are random. To measure what a decode step sees,
// each benchmark cycles through enough copies of the layer that the weights never sit in
// the last-level cache (>= 128 MiB in total).
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "model/ops/dnn_context.h"
#include "model/ops/gemv.h"
#include "model/ops/linear.h"
#include "model/runtime_config.h"

namespace {

using llmserve::DnnContext;
using llmserve::DType;
using llmserve::Linear;
using llmserve::TensorView;

struct Shape {
  const char* name;
  int64_t out, in;
};

// One decoder layer of the "1b" model, with the fused matrices the transformer builds.
constexpr Shape kLayer[] = {{"attn_qkv", 2560, 2048},
                            {"attn_output", 2048, 2048},
                            {"ffn_gate_up", 11264, 2048},
                            {"ffn_down", 2048, 5632}};
// The vocabulary head (runs once per sampled row).
constexpr Shape kHead = {"output", 32000, 2048};

constexpr size_t kColdBytes = size_t{128} << 20;

DnnContext& Ctx() {
  static std::unique_ptr<DnnContext> ctx = [] {
    auto c = DnnContext::Create();
    if (!c.ok()) {
      std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
      std::exit(1);
    }
    return std::move(*c);
  }();
  return *ctx;
}

std::vector<float> RandomFloats(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (float& f : v) f = d(rng);
  return v;
}

std::unique_ptr<Linear> MakeLinear(const Shape& s, DType compute, uint32_t seed) {
  const std::vector<float> w = RandomFloats(static_cast<size_t>(s.out * s.in), seed, 0.02f);
  TensorView view{s.name, DType::kF32, {s.out, s.in}, reinterpret_cast<const uint8_t*>(w.data()), w.size() * 4};
  auto lin = Linear::Create(Ctx(), view, nullptr, compute);
  if (!lin.ok()) {
    std::fprintf(stderr, "%s\n", lin.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*lin);
}

// Runs `shapes` (copies of them, rotating, so weights come from memory) over M rows.
// state.range(1) = 0 sends M <= kGemvMaxRows to oneDNN instead of the GEMV.
void RunLinears(benchmark::State& state, std::vector<Shape> shapes, DType compute) {
  const int64_t m = state.range(0);
  llmserve::SetGemvEnabled(state.range(1) != 0);
  size_t layer_bytes = 0;
  std::vector<std::unique_ptr<Linear>> layer;
  for (const Shape& s : shapes) layer.push_back(MakeLinear(s, compute, 1));
  for (const auto& l : layer) layer_bytes += l->weight_bytes();
  const size_t copies = std::max<size_t>(2, (kColdBytes + layer_bytes - 1) / layer_bytes);
  std::vector<std::vector<std::unique_ptr<Linear>>> all;
  all.push_back(std::move(layer));
  for (size_t c = 1; c < copies; ++c) {
    std::vector<std::unique_ptr<Linear>> l;
    for (const Shape& s : shapes) l.push_back(MakeLinear(s, compute, static_cast<uint32_t>(c + 1)));
    all.push_back(std::move(l));
  }
  int64_t max_in = 0, max_out = 0, flops = 0;
  for (const Shape& s : shapes) {
    max_in = std::max(max_in, s.in);
    max_out = std::max(max_out, s.out);
    flops += 2 * m * s.in * s.out;
  }
  const std::vector<float> x = RandomFloats(static_cast<size_t>(m * max_in), 7, 1.0f);
  std::vector<float> y(static_cast<size_t>(m * max_out));
  // Warm: primitives created, scratch buffers grown.
  for (auto& l : all) {
    for (auto& lin : l) lin->Forward(x.data(), m, y.data());
  }
  size_t next = 0;
  for (auto _ : state) {
    for (auto& lin : all[next]) lin->Forward(x.data(), m, y.data());
    next = (next + 1) % all.size();
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * layer_bytes));
  state.counters["GFLOP/s"] =
      benchmark::Counter(static_cast<double>(flops) * static_cast<double>(state.iterations()) / 1e9,
                         benchmark::Counter::kIsRate);
  state.counters["weight_MB"] = static_cast<double>(layer_bytes) / 1e6;
  state.counters["copies"] = static_cast<double>(copies);
  state.counters["gemv"] = m <= llmserve::kGemvMaxRows && all[0][0]->uses_gemv() ? 1 : 0;
  llmserve::SetGemvEnabled(true);
}

void BM_Linear(benchmark::State& state, Shape shape, DType compute) { RunLinears(state, {shape}, compute); }

void BM_Layer(benchmark::State& state, DType compute) {
  RunLinears(state, std::vector<Shape>(std::begin(kLayer), std::end(kLayer)), compute);
}

// M = 1, 4 on both paths (gemv:1, gemv:0), then 16 and 512 (oneDNN either way).
void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "gemv"});
  for (int64_t m : {int64_t{1}, llmserve::kGemvMaxRows}) {
    b->Args({m, 1});
    b->Args({m, 0});
  }
  b->Args({16, 1});
  b->Args({512, 1});
  b->Unit(benchmark::kMicrosecond)->UseRealTime();
}

void Register() {
  std::vector<Shape> shapes(std::begin(kLayer), std::end(kLayer));
  shapes.push_back(kHead);
  for (DType dt : {DType::kF32, DType::kBF16}) {
    const std::string dname(llmserve::DTypeName(dt));
    for (const Shape& s : shapes) {
      const std::string name = "Linear/" + dname + "/" + s.name + "_" + std::to_string(s.out) + "x" + std::to_string(s.in);
      benchmark::RegisterBenchmark(name.c_str(), BM_Linear, s, dt)->Apply(Args);
    }
    benchmark::RegisterBenchmark(("Layer/" + dname + "/4_fused_linears").c_str(), BM_Layer, dt)->Apply(Args);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      threads = std::atoi(argv[i] + 10);
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  const int in_effect = llmserve::ApplyThreadCount(threads);
  benchmark::AddCustomContext("threads", std::to_string(in_effect));
  benchmark::AddCustomContext("avx512_bf16", llmserve::CpuHasAvx512Bf16() ? "yes" : "no");
  Register();
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
