// The quantized linear layers (model/ops/quant_linear.cc over model/quant/quant_gemm.h) on
// the 1b model's shapes (TinyLlama: Q|K|V 2560×2048, output 2048×2048, gate|up 11264×2048,
// down 2048×5632, head 32000×2048), per weight type, M = 1, 4, 8, 16, 32, 512, 2 threads.
//
//   quant_gemm_bench [--threads=N] [--hot] [--types=Q4_K,Q8_0,bf16,...] [google-benchmark flags]
//
// (bf16: the dense bf16 layer, oneDNN-packed with its GEMV and small-batch kernels, to compare.)
//
// Reports weight bytes/s (packed bytes read per call: what batch-1 decode is bound by) and
// GOP/s (2·M·in·out per call). Each call alternates with a plain read of another copy's
// bytes (AVX-512 loads, the threads streaming contiguous halves): "read_fraction" is the
// kernel's bytes/s over that read's, medians of the alternating calls, so that a machine
// whose bandwidth moves minute to minute still gives a stable ratio (the measure:
// batch-1 decode must stream at >= 85% of the machine's read bandwidth). Weights are random blocks. By default each benchmark cycles
// through enough copies of the layer (>= 128 MiB) that the weights come from memory, as in
// a decode step; --hot keeps two copies, so a layer that fits the caches measures the
// kernel's arithmetic alone.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "benchmark/benchmark.h"
#include "model/quant/packed_layout.h"
#include "model/quant/quant_gemm.h"
#include "model/ops/dnn_context.h"
#include "model/ops/linear.h"
#include "model/ops/simd_math.h"
#include "tests/util/quant_blocks.h"

namespace {

using llmserve::QuantType;

struct Shape {
  const char* name;
  int64_t out, in;
};
constexpr Shape kShapes[] = {{"l2_fit", 512, 2048},  // fits the L2 caches: the arithmetic alone
                             {"attn_qkv", 2560, 2048},
                             {"attn_output", 2048, 2048},
                             {"ffn_gate_up", 11264, 2048},
                             {"ffn_down", 2048, 5632},
                             {"output", 32000, 2048}};
constexpr size_t kColdBytes = size_t{128} << 20;
bool hot = false;
int threads = 2;

llmserve::DnnContext& Ctx() {
  static std::unique_ptr<llmserve::DnnContext> ctx = [] {
    auto c = llmserve::DnnContext::Create();
    if (!c.ok()) std::exit(1);
    return std::move(*c);
  }();
  return *ctx;
}

// Reads `bytes` at `p` with 64-byte loads, the threads taking contiguous shares.
__attribute__((target("avx512f"))) void PlainRead(const uint8_t* p, size_t bytes) {
  int64_t total = 0;
#pragma omp parallel reduction(| : total)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const size_t lines = bytes / 64, lo = lines * t / nt, hi = lines * (t + 1) / nt;
    __m512i acc = _mm512_setzero_si512();
    for (size_t i = lo; i < hi; ++i) acc = _mm512_or_si512(acc, _mm512_loadu_si512(p + 64 * i));
    total = _mm512_reduce_or_epi64(acc);
  }
  benchmark::DoNotOptimize(total);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void Run(benchmark::State& state, QuantType type, Shape shape, int64_t m) {
  omp_set_num_threads(threads);
  // QuantType::kNone: the dense bf16 layer (oneDNN's packing, the GEMV / small-batch kernels),
  // for comparison.
  std::vector<uint8_t> file;
  llmserve::TensorView view;
  if (type == QuantType::kNone) {
    std::vector<uint16_t> w(static_cast<size_t>(shape.out * shape.in));
    for (size_t i = 0; i < w.size(); ++i) w[i] = llmserve::F32ToBF16(static_cast<float>((i * 7919) % 2001) * 1e-5f - 0.01f);
    file.resize(w.size() * 2);
    std::memcpy(file.data(), w.data(), file.size());
    view = {shape.name, llmserve::DType::kBF16, {shape.out, shape.in}, file.data(), file.size()};
  } else {
    file = llmserve::test_util::RandomQuantRows(type, shape.out, shape.in, 1);
    view = llmserve::test_util::QuantView(shape.name, type, shape.out, shape.in, file);
  }
  const llmserve::TensorView* parts[] = {&view};
  // This CPU's default kernels (the bf16 layer's GEMV / small-batch dispatch included).
  const llmserve::LinearOptions options = llmserve::DefaultLinearOptions(llmserve::DType::kBF16);
  std::vector<std::unique_ptr<llmserve::Linear>> copies;
  size_t bytes = 0;
  do {
    auto lin = llmserve::Linear::Create(Ctx(), parts, nullptr, options);
    if (!lin.ok()) {
      state.SkipWithError(std::string(lin.status().message()).c_str());
      return;
    }
    bytes += (*lin)->weight_bytes();
    copies.push_back(*std::move(lin));
  } while (copies.size() < 2 || (!hot && bytes < kColdBytes));
  std::vector<float> x(static_cast<size_t>(m * shape.in)), y(static_cast<size_t>(m * shape.out));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 1000) / 500.0f - 1.0f;
  // The same bytes, plain, for the read baseline (as many copies).
  const size_t wbytes = copies[0]->weight_bytes();
  std::vector<std::vector<uint8_t>> plain(copies.size(), std::vector<uint8_t>(wbytes, 1));
  size_t next = 0;
  std::vector<double> kernel_s, read_s;
  using Clock = std::chrono::steady_clock;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    copies[next]->Forward(x.data(), m, y.data());
    const auto t1 = Clock::now();
    benchmark::DoNotOptimize(y.data());
    state.PauseTiming();
    const size_t other = (next + copies.size() / 2) % copies.size();
    const auto t2 = Clock::now();
    PlainRead(plain[other].data(), wbytes);
    read_s.push_back(std::chrono::duration<double>(Clock::now() - t2).count());
    state.ResumeTiming();
    kernel_s.push_back(std::chrono::duration<double>(t1 - t0).count());
    next = (next + 1) % copies.size();
  }
  state.counters["read_fraction"] = Median(read_s) / Median(kernel_s);
  state.counters["read_gbs"] = static_cast<double>(wbytes) / Median(read_s) * 1e-9;
  const double calls = static_cast<double>(state.iterations());
  state.counters["weight_bytes_per_s"] =
      benchmark::Counter(calls * static_cast<double>(copies[0]->weight_bytes()), benchmark::Counter::kIsRate);
  state.counters["gops"] = benchmark::Counter(calls * 2e-9 * static_cast<double>(m * shape.in * shape.out),
                                              benchmark::Counter::kIsRate);
}

// ScratchAB/<type>/<shape>/M:m: the kernel itself (QuantGemm, the threads splitting the
// groups in halves as QuantLinear does) over cold copies, calls alternating between
// unpacking each panel into a per-thread scratch and unpacking it in registers for every
// row tile; the median time of each (scratch_us, registers_us) and "speedup" = registers /
// scratch. This is what QuantPanelScratchMinRows (quant_gemm.h) is chosen from.
void ScratchAB(benchmark::State& state, QuantType type, Shape shape, int64_t m) {
  omp_set_num_threads(threads);
  const std::vector<uint8_t> file = llmserve::test_util::RandomQuantRows(type, shape.out, shape.in, 1);
  std::vector<std::vector<uint8_t>> copies;
  const size_t bytes = llmserve::PackedQuantBytes(type, shape.out, shape.in);
  do {
    copies.emplace_back(bytes + 64);
  } while (copies.size() < 2 || (!hot && copies.size() * bytes < kColdBytes));
  auto aligned = [](std::vector<uint8_t>& v) {
    return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(v.data()) + 63) / 64 * 64);
  };
  for (auto& c : copies) llmserve::PackGgmlRows(type, file.data(), shape.out, shape.in, aligned(c));
  std::vector<float> x(static_cast<size_t>(m * shape.in)), y(static_cast<size_t>(m * shape.out));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 1000) / 500.0f - 1.0f;
  std::vector<uint8_t> acts(llmserve::QuantizedActsBytes(m, shape.in) + 64);
  const llmserve::QuantizedActs a = llmserve::MapQuantizedActs(aligned(acts), m, shape.in);
  const llmserve::QuantKernel kernel = llmserve::BestQuantKernel();
  llmserve::QuantizeActs(kernel, x.data(), shape.in, 0, m, a);
  const size_t panel = llmserve::QuantPanelScratchBytes(shape.in);
  std::vector<uint8_t> scratch(static_cast<size_t>(threads) * panel + 64);
  std::vector<double> us[2];
  size_t next = 0;
  for (auto _ : state) {
    const int side = us[1].size() < us[0].size() ? 1 : 0;  // 0 registers, 1 scratch
    const llmserve::PackedQuantMatrix w =
        llmserve::MakePackedQuantMatrix(type, shape.out, shape.in, aligned(copies[next]));
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t panels = (w.groups + llmserve::kQuantPanelGroups - 1) / llmserve::kQuantPanelGroups;
      const int64_t g0 = std::min(w.groups, panels * t / nt * llmserve::kQuantPanelGroups);
      const int64_t g1 = std::min(w.groups, panels * (t + 1) / nt * llmserve::kQuantPanelGroups);
      uint8_t* sc = side == 1 ? aligned(scratch) + static_cast<size_t>(t) * panel : nullptr;
      llmserve::QuantGemm(kernel, w, g0, g1, a, sc, nullptr, y.data(), shape.out);
    }
    us[side].push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    benchmark::DoNotOptimize(y.data());
    next = (next + 1) % copies.size();
  }
  for (auto& v : us) std::sort(v.begin(), v.end());
  const double reg = us[0].empty() ? 0 : us[0][us[0].size() / 2], scr = us[1].empty() ? 0 : us[1][us[1].size() / 2];
  state.counters["registers_us"] = reg;
  state.counters["scratch_us"] = scr;
  state.counters["speedup"] = scr > 0 ? reg / scr : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<QuantType> types(std::begin(llmserve::kAllQuantTypes), std::end(llmserve::kAllQuantTypes));
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--hot") {
      hot = true;
    } else if (a.rfind("--threads=", 0) == 0) {
      threads = std::atoi(a.c_str() + 10);
    } else if (a.rfind("--types=", 0) == 0) {
      types.clear();
      for (absl::string_view t : absl::StrSplit(a.substr(8), ',')) {
        if (t == "bf16") types.push_back(QuantType::kNone);
        for (QuantType q : llmserve::kAllQuantTypes) {
          if (llmserve::QuantTypeName(q) == t) types.push_back(q);
        }
      }
    } else {
      rest.push_back(argv[i]);
    }
  }
  for (QuantType t : types) {
    for (const Shape& s : kShapes) {
      for (int64_t m : {1, 4, 8, 16, 32, 512}) {
        const std::string name =
            std::string(t == QuantType::kNone ? "bf16" : llmserve::QuantTypeName(t)) + "/" + s.name + "/M:" + std::to_string(m) + (hot ? "/hot" : "");
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) { Run(st, t, s, m); })
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
      if (t == QuantType::kNone) continue;
      for (int64_t m : {4, 8, 16, 32, 64, 128, 256, 512}) {
        const std::string name = "ScratchAB/" + std::string(llmserve::QuantTypeName(t)) + "/" + s.name +
                                 "/M:" + std::to_string(m) + (hot ? "/hot" : "");
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) { ScratchAB(st, t, s, m); })
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
    }
  }
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
