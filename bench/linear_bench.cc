// Linear::Forward on the shapes the transformer runs (Q|K|V and gate|up fused, plus the
// vocabulary head) of the "small" model (dim 768, FFN 2048, KV dim 256) and the "1b" model
// (TinyLlama: dim 2048, FFN 5632, KV dim 256), f32 and bf16 weights, M = 1, 4, 8, 16, 32,
// 512. M <= 32 runs twice, back to back: fast:1 on layers built with this CPU's default
// dispatch (DefaultLinearOptions: the AVX-512 GEMV of model/ops/gemv.h for M <= 4, the
// kernel of model/ops/small_gemm.h for 5 <= M <= 32, or every M with its bf16 FMA
// kernel), fast:0 on the same weights built to run every M on oneDNN's matmul; compare
// the two within one run.
//
//   linear_bench [--threads=N] [--small_gemm_all] [--hot] [google-benchmark flags]  (default 2 threads)
//
// --small_gemm_all: the fast layers run the small-batch kernel for 5 <= M <= 32 and no
// other M, whatever the default dispatch says (to measure where it wins). The counters
// "gemv" and "small_gemm" say which kernel fast:1 ran.
//
// AB/<dtype>/<shape>/M:m alternates the fast path and oneDNN call by call and reports
// median and 10th-percentile times and their ratio ("speedup" = onednn / fast): use these
// to compare on a noisy, shared machine (e.g. --benchmark_filter='AB/.*/M:(8|16|32)$',
// repeated; OMP_WAIT_POLICY=passive when other processes load the cores, else spinning
// OpenMP barriers dominate every 2-thread call).
//
// Reports GFLOP/s (2·M·in·out per call) and weight bytes/s ("bytes_per_second": packed
// weight bytes read per call). Weights are random. To measure what a decode step sees,
// each benchmark cycles through enough copies of the layer that the weights never sit in
// the last-level cache (>= 128 MiB in total); consecutive benchmarks of one shape share them.
#include <algorithm>
#include <chrono>
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
#include "model/ops/small_gemm.h"
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

// One decoder layer of the "small" model, with the fused matrices the transformer builds.
constexpr Shape kSmallLayer[] = {{"small_attn_qkv", 1280, 768},
                                 {"small_attn_output", 768, 768},
                                 {"small_ffn_gate_up", 4096, 768},
                                 {"small_ffn_down", 768, 2048}};
// Its vocabulary head.
constexpr Shape kSmallHead = {"small_output", 32000, 768};
// One decoder layer of the "1b" model.
constexpr Shape kLayer[] = {{"attn_qkv", 2560, 2048},
                            {"attn_output", 2048, 2048},
                            {"ffn_gate_up", 11264, 2048},
                            {"ffn_down", 2048, 5632}};
// The vocabulary head (runs once per sampled row).
constexpr Shape kHead = {"output", 32000, 2048};

constexpr size_t kColdBytes = size_t{128} << 20;
// --hot: two copies only, so a layer that fits the caches is read from them (the kernel's
// arithmetic and fixed costs without the weight stream; compare with the default).
bool hot_weights = false;
// --small_gemm_all (see above).
bool small_gemm_all = false;

// The options of the fast layers (this CPU's default dispatch) or of the oneDNN ones.
llmserve::LinearOptions Options(DType compute, bool fast) {
  llmserve::LinearOptions o = llmserve::DefaultLinearOptions(compute);
  if (!fast) {
    o.dense.gemv = false;
    o.dense.small_gemm_max_rows = 0;
  } else if (small_gemm_all) {
    o.dense.small_gemm_min_rows = llmserve::kSmallGemmMinRows;
    o.dense.small_gemm_max_rows = llmserve::kSmallGemmMaxRows;
  }
  return o;
}

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

std::unique_ptr<Linear> MakeLinear(const Shape& s, DType compute, bool fast, uint32_t seed) {
  const std::vector<float> w = RandomFloats(static_cast<size_t>(s.out * s.in), seed, 0.02f);
  TensorView view{s.name, DType::kF32, {s.out, s.in}, reinterpret_cast<const uint8_t*>(w.data()), w.size() * 4};
  auto lin = Linear::Create(Ctx(), view, nullptr, Options(compute, fast));
  if (!lin.ok()) {
    std::fprintf(stderr, "%s\n", lin.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*lin);
}

// Copies of a list of layers (>= kColdBytes in total) built for the fast path and for
// oneDNN, kept for the next benchmark of the same shapes and dtype (building them costs
// more than measuring).
struct Copies {
  std::string key;
  size_t layer_bytes = 0;
  std::vector<std::vector<std::unique_ptr<Linear>>> all[2];  // [fast]: copies of the layer list
};

std::string Key(const std::vector<Shape>& shapes, DType compute) {
  std::string key(llmserve::DTypeName(compute));
  for (const Shape& s : shapes) key.append("/").append(s.name);
  return key;
}

Copies& GetCopies(const std::vector<Shape>& shapes, DType compute) {
  static Copies cached;
  const std::string key = Key(shapes, compute);
  if (cached.key == key) return cached;
  cached = Copies();  // free the previous set first
  cached.key = key;
  for (int fast = 0; fast < 2; ++fast) {
    std::vector<std::unique_ptr<Linear>> layer;
    for (const Shape& s : shapes) layer.push_back(MakeLinear(s, compute, fast == 1, 1));
    if (fast == 0) {
      for (const auto& l : layer) cached.layer_bytes += l->weight_bytes();
    }
    const size_t copies =
        hot_weights ? 2 : std::max<size_t>(2, (kColdBytes + cached.layer_bytes - 1) / cached.layer_bytes);
    cached.all[fast].push_back(std::move(layer));
    for (size_t c = 1; c < copies; ++c) {
      std::vector<std::unique_ptr<Linear>> l;
      for (const Shape& s : shapes) l.push_back(MakeLinear(s, compute, fast == 1, static_cast<uint32_t>(c + 1)));
      cached.all[fast].push_back(std::move(l));
    }
  }
  return cached;
}

// Runs `shapes` (copies of them, rotating, so weights come from memory) over M rows.
// state.range(1) = 0 runs the layers built to send every M to oneDNN instead of the GEMV
// / small-batch kernel.
void RunLinears(benchmark::State& state, std::vector<Shape> shapes, DType compute) {
  const int64_t m = state.range(0);
  const bool fast = state.range(1) != 0;
  Copies& copies = GetCopies(shapes, compute);
  const size_t layer_bytes = copies.layer_bytes;
  auto& all = copies.all[fast ? 1 : 0];
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
  state.counters["copies"] = static_cast<double>(all.size());
  state.counters["gemv"] = m <= llmserve::kGemvMaxRows && all[0][0]->uses_gemv() && !all[0][0]->uses_small_gemm(m) ? 1 : 0;
  state.counters["small_gemm"] = all[0][0]->uses_small_gemm(m) ? 1 : 0;
}

void BM_Linear(benchmark::State& state, Shape shape, DType compute) { RunLinears(state, {shape}, compute); }

void BM_Layer(benchmark::State& state, std::vector<Shape> layer, DType compute) {
  RunLinears(state, std::move(layer), compute);
}

// The q-quantile (0..1) of v.
double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

double Median(std::vector<double> v) { return Quantile(std::move(v), 0.5); }

// A/B on a noisy machine: each iteration times one call of the fast path (GEMV / small-
// batch kernel) and one of oneDNN's matmul on different cold copies, in alternating
// order. Counters: median microseconds of each ("fast_us", "onednn_us") and the median
// of the per-iteration ratios onednn/fast ("speedup" > 1: the fast path wins); and the
// 10th percentiles ("fast_p10_us", "onednn_p10_us", "speedup_p10" their ratio), which
// preemption by other processes disturbs less than the medians.
void BM_AB(benchmark::State& state, Shape shape, DType compute) {
  const int64_t m = state.range(0);
  Copies& copies = GetCopies({shape}, compute);
  const std::vector<float> x = RandomFloats(static_cast<size_t>(m * shape.in), 7, 1.0f);
  std::vector<float> y(static_cast<size_t>(m * shape.out));
  for (auto& side : copies.all) {
    for (auto& l : side) l[0]->Forward(x.data(), m, y.data());  // primitives created
  }
  std::vector<double> fast_us, onednn_us, ratio;
  size_t next = 0;
  bool fast_first = true;
  // Each call on the next copy (of its side), so that the weights come from memory.
  auto time_one = [&](bool fast) {
    auto& side = copies.all[fast ? 1 : 0];
    Linear& lin = *side[next % side.size()][0];
    next = next + 1;
    const auto t0 = std::chrono::steady_clock::now();
    lin.Forward(x.data(), m, y.data());
    benchmark::DoNotOptimize(y.data());
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  };
  for (auto _ : state) {
    double f, o;
    if (fast_first) {
      f = time_one(true);
      o = time_one(false);
    } else {
      o = time_one(false);
      f = time_one(true);
    }
    fast_first = !fast_first;
    fast_us.push_back(f);
    onednn_us.push_back(o);
    ratio.push_back(o / f);
  }
  state.counters["fast_us"] = Median(fast_us);
  state.counters["onednn_us"] = Median(onednn_us);
  state.counters["speedup"] = Median(ratio);
  state.counters["fast_p10_us"] = Quantile(fast_us, 0.1);
  state.counters["onednn_p10_us"] = Quantile(onednn_us, 0.1);
  state.counters["speedup_p10"] = Quantile(onednn_us, 0.1) / Quantile(fast_us, 0.1);
  state.counters["small_gemm"] = copies.all[1][0][0]->uses_small_gemm(m) ? 1 : 0;
  state.counters["fast_GFLOPs"] = 2e-3 * static_cast<double>(m * shape.in * shape.out) / Median(fast_us);
}

// M = 1, 4, 8, 16, 32 on both paths (fast:1, fast:0), then 512 (oneDNN either way).
void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "fast"});
  for (int64_t m : {int64_t{1}, llmserve::kGemvMaxRows, int64_t{8}, int64_t{16}, llmserve::kSmallGemmMaxRows}) {
    b->Args({m, 1});
    b->Args({m, 0});
  }
  b->Args({512, 1});
  b->Unit(benchmark::kMicrosecond)->UseRealTime();
}

void Register() {
  std::vector<Shape> shapes(std::begin(kSmallLayer), std::end(kSmallLayer));
  shapes.push_back(kSmallHead);
  shapes.insert(shapes.end(), std::begin(kLayer), std::end(kLayer));
  shapes.push_back(kHead);
  for (DType dt : {DType::kF32, DType::kBF16}) {
    const std::string dname(llmserve::DTypeName(dt));
    for (const Shape& s : shapes) {
      const std::string name = "Linear/" + dname + "/" + s.name + "_" + std::to_string(s.out) + "x" + std::to_string(s.in);
      benchmark::RegisterBenchmark(name.c_str(), BM_Linear, s, dt)->Apply(Args);
      benchmark::RegisterBenchmark(("AB/" + name.substr(7)).c_str(), BM_AB, s, dt)
          ->ArgName("M")
          ->Arg(1)
          ->Arg(llmserve::kGemvMaxRows)
          ->Arg(8)
          ->Arg(16)
          ->Arg(llmserve::kSmallGemmMaxRows)
          ->Unit(benchmark::kMicrosecond);
    }
    benchmark::RegisterBenchmark(("Layer/" + dname + "/small_4_fused_linears").c_str(), BM_Layer,
                                 std::vector<Shape>(std::begin(kSmallLayer), std::end(kSmallLayer)), dt)
        ->Apply(Args);
    benchmark::RegisterBenchmark(("Layer/" + dname + "/1b_4_fused_linears").c_str(), BM_Layer,
                                 std::vector<Shape>(std::begin(kLayer), std::end(kLayer)), dt)
        ->Apply(Args);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--small_gemm_all") == 0) {
      small_gemm_all = true;
    } else if (std::strcmp(argv[i], "--hot") == 0) {
      hot_weights = true;
    } else if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      threads = std::atoi(argv[i] + 10);
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  const int in_effect = llmserve::ApplyThreadCount(threads);
  benchmark::AddCustomContext("threads", std::to_string(in_effect));
  benchmark::AddCustomContext("avx512_bf16", llmserve::CpuHasAvx512Bf16() ? "yes" : "no");
  for (DType dt : {DType::kF32, DType::kBF16}) {
    const llmserve::LinearOptions o = Options(dt, true);
    benchmark::AddCustomContext("fast_" + std::string(llmserve::DTypeName(dt)),
                                llmserve::DescribeDenseDispatch(dt, o.isa, o.dense));
  }
  Register();
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
