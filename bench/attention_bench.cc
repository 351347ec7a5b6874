// PagedAttention throughput for the "1b" geometry (TinyLlama: 32 heads, 4 KV heads,
// head_dim 64, 22 layers), one layer per call, f32 and bf16 caches, 2 threads.
//
//   attention_bench [--threads=N] [google-benchmark flags]
//
// Cases: decode of 16 sequences at context 512, of 8 at context 192 (the middle of a
// 128 + 128-token request, as in the serving benchmark), of 1 sequence at context 2048,
// a 512-token prefill (one chunk, causal), and a prompt's last 64 tokens after 1024
// cached ones (a prefix-cache hit). "hot" repeats one layer, whose K/V then
// sit in the caches (16 MiB f32 for 16 × 512); "cold" walks the 22 layers in turn, so
// the K/V come from DRAM as in a real step. "swept_prefetch_ab" (bf16 decode) sweeps
// 64 MiB before each call and alternates the K/V prefetch stream on and off. Counters:
//   kv_bytes_per_second  K and V bytes the call must read (each token once per KV head)
//   gflops               2 · 2 · heads · head_dim · (keys each query sees), summed
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "benchmark/benchmark.h"
#include "model/kv_cache.h"
#include "model/ops/paged_attention.h"
#include "model/ops/small_gemm.h"
#include "model/runtime_config.h"

namespace {

using llmserve::AttentionSeq;
using llmserve::DType;
using llmserve::KvCache;
using llmserve::KvCacheConfig;

constexpr int64_t kLayers = 22, kHeads = 32, kKvHeads = 4, kHeadDim = 64, kBlock = 16, kPoolBlocks = 1024;
int g_threads = 2;

// The kernel a Transformer plans on this CPU, with or without the K/V prefetch stream.
llmserve::AttentionOptions Options(bool kv_prefetch) {
  const llmserve::CpuFeatures cpu = llmserve::CpuFeatures::Detect();
  return llmserve::AttentionOptions{cpu.isa(), kv_prefetch,
                                    llmserve::Bf16KernelFor(cpu) == llmserve::Bf16Kernel::kDot};
}

// A filled cache and a batch: `seqs` sequences of `rows` rows each after `cached` tokens.
struct Problem {
  std::unique_ptr<KvCache> cache;
  std::vector<std::vector<int32_t>> tables;
  std::vector<AttentionSeq> seqs;
  std::vector<float> q, out;
  double kv_bytes = 0, flops = 0;
};

std::unique_ptr<Problem> Make(DType dtype, int seqs, int rows, int cached) {
  auto p = std::make_unique<Problem>();
  const int context = cached + rows;
  const int64_t blocks_per_seq = (context + kBlock - 1) / kBlock;
  KvCacheConfig c;
  c.num_layers = kLayers;
  c.num_kv_heads = kKvHeads;
  c.head_dim = kHeadDim;
  c.block_size = kBlock;
  c.dtype = dtype;
  // A pool like a server's (1024 blocks: 16 MiB per layer and K or V in f32, on huge
  // pages like the server's), the batch's blocks drawn from all of it.
  c.num_blocks = std::max<int64_t>(seqs * blocks_per_seq, kPoolBlocks);
  auto cache = KvCache::Create(c);
  if (!cache.ok()) return nullptr;
  p->cache = std::move(*cache);
  std::mt19937 rng(1);
  std::vector<int32_t> ids(static_cast<size_t>(c.num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);  // scattered blocks, as after some churn
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t kv_dim = kKvHeads * kHeadDim;
  std::vector<float> kv(static_cast<size_t>(context * kv_dim));
  for (float& x : kv) x = normal(rng);
  std::vector<int32_t> positions(static_cast<size_t>(context));
  std::iota(positions.begin(), positions.end(), 0);
  for (int s = 0; s < seqs; ++s) {
    p->tables.emplace_back(ids.begin() + s * blocks_per_seq, ids.begin() + (s + 1) * blocks_per_seq);
    for (int64_t l = 0; l < kLayers; ++l) {
      p->cache->Write(llmserve::CpuFeatures::Detect().isa(), l, kv.data(), kv.data(), kv_dim, context, positions.data(),
                      p->tables.back().data(), blocks_per_seq);
    }
    AttentionSeq a;
    a.row_start = s * rows;
    a.rows = rows;
    a.context = context;
    a.block_table = p->tables.back();
    p->seqs.push_back(a);
    p->kv_bytes += 2.0 * context * kv_dim * static_cast<double>(DTypeSize(dtype));
    for (int r = 0; r < rows; ++r) p->flops += 4.0 * kHeads * kHeadDim * (cached + r + 1);
  }
  p->q.resize(static_cast<size_t>(seqs * rows * kHeads * kHeadDim));
  for (float& x : p->q) x = normal(rng);
  p->out.resize(p->q.size());
  return p;
}

// Problems are built once per shape and kept (the writes take a while).
Problem* Get(DType dtype, int seqs, int rows, int cached) {
  static std::map<std::tuple<int, int, int, int>, std::unique_ptr<Problem>> problems;
  auto key = std::make_tuple(static_cast<int>(dtype), seqs, rows, cached);
  auto it = problems.find(key);
  if (it == problems.end()) it = problems.emplace(key, Make(dtype, seqs, rows, cached)).first;
  return it->second.get();
}

void Attention(benchmark::State& state, DType dtype, int seqs, int rows, int cached, bool cold) {
  llmserve::ApplyThreadCount(g_threads);
  Problem* p = Get(dtype, seqs, rows, cached);
  if (p == nullptr) {
    state.SkipWithError("cannot create the KV cache");
    return;
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  const int64_t width = kHeads * kHeadDim;
  int64_t layer = 0;
  for (auto _ : state) {
    llmserve::PagedAttention(Options(true), *p->cache, layer, p->seqs, p->q.data(), width, kHeads, scale,
                             p->out.data(), width);
    benchmark::ClobberMemory();
    if (cold) layer = (layer + 1) % kLayers;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["kv_bytes_per_second"] = benchmark::Counter(p->kv_bytes * n, benchmark::Counter::kIsRate);
  state.counters["gflops"] = benchmark::Counter(p->flops * n * 1e-9, benchmark::Counter::kIsRate);
  state.counters["threads"] = omp_get_max_threads();
}

// The decode shapes again, each call after a 64 MiB sweep of both threads (as a step's
// matmuls evict the K/V between a layer's attention and the next), alternating calls with
// and without the K/V prefetch stream (AttentionOptions::kv_prefetch). Counters: the median call
// of each (prefetch_on_us, prefetch_off_us) and on / off; time: the sweeps excluded.
void SweptPrefetchAB(benchmark::State& state, int seqs, int cached) {
  llmserve::ApplyThreadCount(g_threads);
  Problem* p = Get(DType::kBF16, seqs, 1, cached);
  if (p == nullptr) {
    state.SkipWithError("cannot create the KV cache");
    return;
  }
  static std::vector<char> junk(64 << 20, 1);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  const int64_t width = kHeads * kHeadDim;
  std::vector<double> us[2];
  int64_t layer = 0;
  for (auto _ : state) {
    state.PauseTiming();
    long sum = 0;
#pragma omp parallel for reduction(+ : sum)
    for (size_t i = 0; i < junk.size(); i += 64) sum += junk[i];
    benchmark::DoNotOptimize(sum);
    const int on = us[1].size() <= us[0].size() ? 1 : 0;
    state.ResumeTiming();
    const auto t0 = std::chrono::steady_clock::now();
    llmserve::PagedAttention(Options(on == 1), *p->cache, layer, p->seqs, p->q.data(), width, kHeads, scale,
                             p->out.data(), width);
    us[on].push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    benchmark::ClobberMemory();
    layer = (layer + 1) % kLayers;
  }
  for (auto& v : us) std::sort(v.begin(), v.end());
  if (us[0].empty() || us[1].empty()) return;
  const double off = us[0][us[0].size() / 2], on = us[1][us[1].size() / 2];
  state.counters["prefetch_on_us"] = on;
  state.counters["prefetch_off_us"] = off;
  state.counters["on_over_off"] = on / off;
}

void Register() {
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    const std::string dt = dtype == DType::kF32 ? "f32" : "bf16";
    for (bool cold : {false, true}) {
      const std::string temp = cold ? "cold" : "hot";
      benchmark::RegisterBenchmark(("decode_16x512/" + dt + "/" + temp).c_str(), Attention, dtype, 16, 1, 511, cold)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("decode_8x192/" + dt + "/" + temp).c_str(), Attention, dtype, 8, 1, 191, cold)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("decode_1x2048/" + dt + "/" + temp).c_str(), Attention, dtype, 1, 1, 2047, cold)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
    if (dtype == DType::kBF16) {
      for (auto [seqs, cached] : {std::pair{8, 191}, std::pair{16, 511}, std::pair{1, 2047}}) {
        const std::string name =
            "decode_" + std::to_string(seqs) + "x" + std::to_string(cached + 1) + "/bf16/swept_prefetch_ab";
        benchmark::RegisterBenchmark(name.c_str(), SweptPrefetchAB, seqs, cached)
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
      }
    }
    benchmark::RegisterBenchmark(("prefill_512/" + dt).c_str(), Attention, dtype, 1, 512, 0, false)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("suffix_64x1088/" + dt).c_str(), Attention, dtype, 1, 64, 1024, false)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      g_threads = std::atoi(argv[i] + 10);
      std::copy(argv + i + 1, argv + argc, argv + i);
      --argc;
      --i;
    }
  }
  Register();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
