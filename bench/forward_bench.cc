// Transformer::Forward step times on the model named by $LLMSERVE_BENCH_MODEL (any format
// LoadModel reads; scripts/gen_bench_models.py writes the "small" and "1b" shapes).
//
//   LLMSERVE_BENCH_MODEL=/tmp/bench/small.gguf forward_bench [google-benchmark flags]
//
// Per weight dtype (f32, bf16), with 2 threads:
//   Decode/B     one decode token for each of B sequences with 128 cached tokens each;
//                tokens_per_s, and weight_bytes_per_s = Transformer::weight_bytes() / step
//                time (the bandwidth a decode step needs, to compare with the machine's).
//   Prefill512   one 512-token prompt (capped at the context) from position 0;
//                tokens_per_s and gflops (2 x linear-layer parameters per token).
// Skips with a message when LLMSERVE_BENCH_MODEL is unset. With LLMSERVE_BENCH_PROFILE=1,
// each benchmark then runs a few more steps with the per-op profile on and prints where
// a step's time goes (stderr). LLMSERVE_BENCH_SMALL_GEMM=0 runs batches of 5..32 rows on
// oneDNN's matmul instead of model/ops/small_gemm.h; =ab alternates the two step by step
// in Decode and reports the median step of each (small_gemm_on_ms, small_gemm_off_ms).
// The KV cache has the weights' dtype (as llmserve's default); LLMSERVE_BENCH_KV=f32 or
// bf16 sets it, =ab alternates an f32 and a bf16 cache step by step in Decode and reports
// the median step of each (kv_f32_ms, kv_bf16_ms).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "model/kv_cache.h"
#include "model/model_loader.h"
#include "model/ops/small_gemm.h"
#include "model/transformer.h"

namespace {

using llmserve::DType;

constexpr int kThreads = 2;
constexpr int kDecodeContext = 128;

std::string ModelPath() {
  const char* env = std::getenv("LLMSERVE_BENCH_MODEL");
  return env != nullptr ? env : "";
}

// The loaded weights and one packed Transformer (of the dtype last asked for: a 1b model
// packed twice would not leave room for much else).
struct Loaded {
  std::unique_ptr<llmserve::ModelWeights> weights;
  std::unique_ptr<llmserve::Transformer> model;
  DType dtype = DType::kF32;
  std::string error;
};

Loaded& Get(DType dtype) {
  static Loaded l;
  if (l.weights == nullptr && l.error.empty()) {
    auto w = llmserve::LoadModel(ModelPath());
    if (!w.ok()) l.error = std::string(w.status().message());
    else l.weights = *std::move(w);
  }
  if (l.weights != nullptr && (l.model == nullptr || l.dtype != dtype)) {
    l.model.reset();
    llmserve::RuntimeConfig rt;
    rt.weight_dtype = dtype;
    rt.threads = kThreads;
    auto m = llmserve::Transformer::Create(*l.weights, rt);
    if (!m.ok()) {
      l.error = std::string(m.status().message());
    } else {
      l.model = *std::move(m);
      l.dtype = dtype;
    }
  }
  return l;
}

// With LLMSERVE_BENCH_PROFILE set, runs `step` a few times with the profile on and
// prints each op's share of the step time.
void MaybeProfile(const std::string& name, llmserve::Transformer& model, const std::function<void()>& step) {
  const char* env = std::getenv("LLMSERVE_BENCH_PROFILE");
  if (env == nullptr || *env == '\0' || std::string(env) == "0") return;
  model.SetProfiling(true);
  for (int i = 0; i < 5; ++i) step();
  const llmserve::ForwardProfile p = model.profile();
  model.SetProfiling(false);
  double total = 0;
  for (const auto& [op, sec] : p.ops) total += sec;
  std::fprintf(stderr, "profile %s: %.3f ms/step over %lld steps\n", name.c_str(), 1e3 * total / p.steps,
               static_cast<long long>(p.steps));
  for (const auto& [op, sec] : p.ops) {
    if (sec > 0) std::fprintf(stderr, "  %-16s %8.3f ms %5.1f%%\n", op.c_str(), 1e3 * sec / p.steps, 100 * sec / total);
  }
}

// Parameters of the linear layers and the head (what the FLOP count is made of).
double LinearParams(const llmserve::ModelConfig& c) {
  const double d = c.hidden_size, q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
  const double mlp = (c.activation == llmserve::Activation::kSilu ? 3.0 : 2.0) * d * c.ffn_dim;
  return c.num_layers * (d * (q + 2 * kv) + q * d + mlp) + static_cast<double>(c.vocab_size) * d;
}

// The KV dtype for weights of `weights`: LLMSERVE_BENCH_KV if f32 or bf16, else the same.
DType KvDType(DType weights) {
  const char* env = std::getenv("LLMSERVE_BENCH_KV");
  const std::string v = env != nullptr ? env : "";
  return v == "f32" ? DType::kF32 : v == "bf16" ? DType::kBF16 : weights;
}

std::unique_ptr<llmserve::KvCache> NewCache(const llmserve::ModelConfig& c, int64_t blocks, DType kv) {
  auto kc = llmserve::KvCacheConfig::ForModel(c, 16, kv);
  kc.num_blocks = blocks;
  auto cache = llmserve::KvCache::Create(kc);
  return cache.ok() ? *std::move(cache) : nullptr;
}

std::vector<int32_t> RandomTokens(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(vocab) - 1);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t& x : t) x = tok(rng);
  return t;
}

void Decode(benchmark::State& state, DType dtype) {
  Loaded& l = Get(dtype);
  if (l.model == nullptr) return state.SkipWithError(l.error.c_str());
  const llmserve::ModelConfig& c = l.model->config();
  const int batch = static_cast<int>(state.range(0));
  const int ctx = static_cast<int>(std::min<int64_t>(kDecodeContext, c.context_length - 1));
  const int64_t per_seq = (ctx + 1 + 15) / 16;
  const char* kv_env = std::getenv("LLMSERVE_BENCH_KV");
  const bool kv_ab = kv_env != nullptr && std::string(kv_env) == "ab";
  // caches[0] is the one of the run; with the KV A/B, caches[0] is f32 and caches[1] bf16.
  std::unique_ptr<llmserve::KvCache> caches[2];
  caches[0] = NewCache(c, per_seq * batch, kv_ab ? DType::kF32 : KvDType(dtype));
  if (kv_ab) caches[1] = NewCache(c, per_seq * batch, DType::kBF16);
  if (caches[0] == nullptr || (kv_ab && caches[1] == nullptr)) return state.SkipWithError("cannot allocate the KV cache");
  llmserve::KvCache* cache = caches[0].get();
  std::vector<int32_t> blocks(static_cast<size_t>(per_seq * batch));
  std::iota(blocks.begin(), blocks.end(), 0);
  auto table = [&](int s) { return std::span<const int32_t>(blocks.data() + s * per_seq, per_seq); };
  std::vector<float> logits(static_cast<size_t>(batch * c.vocab_size));

  // Prefill every sequence's context once.
  std::vector<int32_t> tokens = RandomTokens(int64_t{batch} * ctx, c.vocab_size, 1);
  std::vector<llmserve::ForwardBatch::Seq> seqs;
  std::vector<int32_t> rows;
  for (int s = 0; s < batch; ++s) {
    seqs.push_back({s * ctx, ctx, 0, table(s)});
    rows.push_back((s + 1) * ctx - 1);
  }
  absl::Status st;
  for (auto& kv : caches) {
    if (kv != nullptr && st.ok()) st = l.model->Forward({tokens, seqs, rows}, *kv, logits.data());
  }
  if (!st.ok()) return state.SkipWithError(std::string(st.message()).c_str());

  // Each step: one token per sequence at position ctx (rewritten every step).
  std::vector<int32_t> step_tokens = RandomTokens(batch, c.vocab_size, 2);
  seqs.clear();
  rows.clear();
  for (int s = 0; s < batch; ++s) {
    seqs.push_back({s, 1, ctx, table(s)});
    rows.push_back(s);
  }
  const char* ab_env = std::getenv("LLMSERVE_BENCH_SMALL_GEMM");
  const bool ab = ab_env != nullptr && std::string(ab_env) == "ab";
  std::vector<double> ms[2];  // step times of the A/B modes: [off, on] or [f32 KV, bf16 KV]
  for (auto _ : state) {
    const bool on = ms[1].size() <= ms[0].size();
    if (ab) llmserve::SetSmallGemmEnabled(on);
    if (kv_ab) cache = caches[on ? 1 : 0].get();
    const auto t0 = std::chrono::steady_clock::now();
    st = l.model->Forward({step_tokens, seqs, rows}, *cache, logits.data());
    benchmark::DoNotOptimize(logits.data());
    if (ab || kv_ab) {
      ms[on].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  if (ab) llmserve::SetSmallGemmEnabled(true);
  if (ab || kv_ab) {
    const char* names[2][2] = {{"small_gemm_off_ms", "small_gemm_on_ms"}, {"kv_f32_ms", "kv_bf16_ms"}};
    for (int on = 0; on < 2; ++on) {
      std::sort(ms[on].begin(), ms[on].end());
      if (!ms[on].empty()) state.counters[names[kv_ab ? 1 : 0][on]] = ms[on][ms[on].size() / 2];
    }
  }
  if (!st.ok()) return state.SkipWithError(std::string(st.message()).c_str());
  const std::string name = std::string("Decode/") + llmserve::DTypeName(dtype).data() + "/" + std::to_string(batch);
  MaybeProfile(name, *l.model, [&] { (void)l.model->Forward({step_tokens, seqs, rows}, *cache, logits.data()); });
  const double steps = static_cast<double>(state.iterations());
  state.counters["tokens_per_s"] = benchmark::Counter(steps * batch, benchmark::Counter::kIsRate);
  state.counters["weight_bytes_per_s"] =
      benchmark::Counter(steps * static_cast<double>(l.model->weight_bytes()), benchmark::Counter::kIsRate);
  state.counters["weight_MiB"] = static_cast<double>(l.model->weight_bytes()) / 1048576.0;
}

void Prefill(benchmark::State& state, DType dtype) {
  Loaded& l = Get(dtype);
  if (l.model == nullptr) return state.SkipWithError(l.error.c_str());
  const llmserve::ModelConfig& c = l.model->config();
  const int n = static_cast<int>(std::min<int64_t>(state.range(0), c.context_length));
  const int64_t nblocks = (n + 15) / 16;
  auto cache = NewCache(c, nblocks, KvDType(dtype));
  if (cache == nullptr) return state.SkipWithError("cannot allocate the KV cache");
  std::vector<int32_t> blocks(static_cast<size_t>(nblocks));
  std::iota(blocks.begin(), blocks.end(), 0);
  std::vector<int32_t> tokens = RandomTokens(n, c.vocab_size, 3);
  const std::vector<llmserve::ForwardBatch::Seq> seqs = {{0, n, 0, blocks}};
  const std::vector<int32_t> rows = {n - 1};
  std::vector<float> logits(static_cast<size_t>(c.vocab_size));
  absl::Status st;
  for (auto _ : state) {
    st = l.model->Forward({tokens, seqs, rows}, *cache, logits.data());
    benchmark::DoNotOptimize(logits.data());
  }
  if (!st.ok()) return state.SkipWithError(std::string(st.message()).c_str());
  const std::string name = std::string("Prefill/") + llmserve::DTypeName(dtype).data() + "/" + std::to_string(n);
  MaybeProfile(name, *l.model, [&] { (void)l.model->Forward({tokens, seqs, rows}, *cache, logits.data()); });
  const double steps = static_cast<double>(state.iterations());
  state.counters["tokens_per_s"] = benchmark::Counter(steps * n, benchmark::Counter::kIsRate);
  state.counters["gflops"] = benchmark::Counter(steps * n * 2.0 * LinearParams(c) * 1e-9, benchmark::Counter::kIsRate);
}

// f32 first, then bf16 (one packed model alive at a time).
BENCHMARK_CAPTURE(Decode, f32, DType::kF32)->Arg(1)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK_CAPTURE(Prefill, f32, DType::kF32)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK_CAPTURE(Decode, bf16, DType::kBF16)->Arg(1)->Arg(8)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK_CAPTURE(Prefill, bf16, DType::kBF16)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

}  // namespace

int main(int argc, char** argv) {
  if (ModelPath().empty()) {
    std::cout << "forward_bench: LLMSERVE_BENCH_MODEL is not set; skipping (point it at a model, e.g. one "
                 "written by scripts/gen_bench_models.py)\n";
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // LLMSERVE_BENCH_SMALL_GEMM=0: batches of 5..32 rows on oneDNN (A/B of model/ops/small_gemm.h).
  const char* small_gemm = std::getenv("LLMSERVE_BENCH_SMALL_GEMM");
  if (small_gemm != nullptr && std::string(small_gemm) == "0") llmserve::SetSmallGemmEnabled(false);
  benchmark::AddCustomContext("small_gemm", llmserve::SmallGemmEnabled() ? "on" : "off");
  benchmark::AddCustomContext("model", ModelPath());
  benchmark::AddCustomContext("threads", std::to_string(kThreads));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
