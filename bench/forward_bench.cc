// Transformer::Forward step times on the model named by $LLMSERVE_BENCH_MODEL (any format
// LoadModel reads; scripts/gen_bench_models.py writes the "small" and "1b" shapes).
//
//   LLMSERVE_BENCH_MODEL=/tmp/bench/small.gguf forward_bench [google-benchmark flags]
//
// Per weight variant, with 2 threads: f32 and bf16 (every weight converted, quantized ones
// dequantized), int8 (every weight quantized at load: --weight-dtype int8) and file (a
// quantized file's own types, the rest bf16: --weight-dtype auto):
//   Decode/B     one decode token for each of B sequences with 128 cached tokens each;
//                tokens_per_s, and weight_bytes_per_s = Transformer::weight_bytes() / step
//                time (the bandwidth a decode step needs, to compare with the machine's).
//   Prefill512   one 512-token prompt (capped at the context) from position 0;
//                tokens_per_s and gflops (2 x linear-layer parameters per token).
//   Suffix/N/C   (bf16) a prompt's last N tokens after C cached ones: a prefix-cache hit.
// Skips with a message when LLMSERVE_BENCH_MODEL is unset. With LLMSERVE_BENCH_PROFILE=1,
// each benchmark then runs a few more steps with the per-op profile on and prints where
// a step's time goes (stderr). LLMSERVE_BENCH_SMALL_GEMM=0 builds the models without
// model/ops/small_gemm.h (its batches on oneDNN's matmul; RuntimeConfig::kernels);
// LLMSERVE_BENCH_SMALL_GEMM_ROWS=N gives it every M up to N. The kernel A/Bs below build
// the model twice, once per side (RuntimeConfig::kernels), and Decode alternates the two
// step by step over one KV cache, reporting the median step of each:
// LLMSERVE_BENCH_SMALL_GEMM=ab (small_gemm_on_ms, small_gemm_off_ms).
// The KV cache has the weights' dtype (as llmserve's default); LLMSERVE_BENCH_KV=f32 or
// bf16 sets it, =ab alternates an f32 and a bf16 cache step by step in Decode and reports
// the median step of each (kv_f32_ms, kv_bf16_ms). LLMSERVE_BENCH_KV_PREFETCH=ab
// alternates attention with and without its K/V prefetch stream (kv_prefetch_on_ms,
// kv_prefetch_off_ms); LLMSERVE_BENCH_BF16_FMA=ab the bf16 small-batch kernel with f32
// FMAs and with vdpbf16ps (bf16_fma_on_ms, bf16_fma_off_ms; model/ops/small_gemm.h).
// LLMSERVE_BENCH_FEW_ROWS=ab runs 1..4-row products on the small-batch kernel and on the
// GEMV (few_rows_small_gemm_on_ms, _off_ms). LLMSERVE_BENCH_CONTEXT=N sets Decode's
// cached tokens per sequence (default 128); =N,M alternates the two step by step, each
// with its own cache, and reports the median step of each (ctx_N_ms, ctx_M_ms): a serving
// run's decode steps see contexts from the prompt's length to prompt + output.
// LLMSERVE_BENCH_WEIGHTS_AB=A,B runs DecodeAB: two weight variants alternating step by step.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "benchmark/benchmark.h"
#include "model/kv_cache.h"
#include "model/model_loader.h"
#include "model/ops/small_gemm.h"
#include "model/runtime_config.h"
#include "model/transformer.h"

namespace {

using llmserve::DType;

constexpr int kThreads = 2;
constexpr int kDecodeContext = 128;

// Decode's contexts: LLMSERVE_BENCH_CONTEXT ("N" or "N,M"), else kDecodeContext.
std::vector<int> DecodeContexts() {
  std::vector<int> out;
  const char* env = std::getenv("LLMSERVE_BENCH_CONTEXT");
  std::string v = env != nullptr ? env : "";
  while (!v.empty() && out.size() < 2) {
    const size_t comma = v.find(',');
    const int n = std::atoi(v.substr(0, comma).c_str());
    if (n > 0) out.push_back(n);
    v = comma == std::string::npos ? "" : v.substr(comma + 1);
  }
  if (out.empty()) out.push_back(kDecodeContext);
  return out;
}

std::string ModelPath() {
  const char* env = std::getenv("LLMSERVE_BENCH_MODEL");
  return env != nullptr ? env : "";
}

// How the weights are packed (the server's --weight-dtype).
struct WeightVariant {
  const char* name;
  DType dtype;
  llmserve::WeightQuant quant;
  bool operator==(const WeightVariant& o) const { return dtype == o.dtype && quant == o.quant; }
};
constexpr WeightVariant kF32{"f32", DType::kF32, llmserve::WeightQuant::kNone};
constexpr WeightVariant kBf16{"bf16", DType::kBF16, llmserve::WeightQuant::kNone};
constexpr WeightVariant kInt8{"int8", DType::kBF16, llmserve::WeightQuant::kInt8};
constexpr WeightVariant kFile{"file", DType::kBF16, llmserve::WeightQuant::kAuto};

// The kernel choices every model of this run is built with (main sets them from
// LLMSERVE_BENCH_SMALL_GEMM=0 and LLMSERVE_BENCH_SMALL_GEMM_ROWS).
llmserve::KernelChoices g_kernels;

// Packs `weights` as `variant` with `kernels`.
absl::StatusOr<std::unique_ptr<llmserve::Transformer>> Build(const llmserve::ModelWeights& weights,
                                                             const WeightVariant& variant,
                                                             const llmserve::KernelChoices& kernels) {
  llmserve::RuntimeConfig rt;
  rt.weight_dtype = variant.dtype;
  rt.weight_quant = variant.quant;
  rt.threads = kThreads;
  rt.kernels = kernels;
  return llmserve::Transformer::Create(weights, rt);
}

// The loaded weights and one packed Transformer (of the variant last asked for: a 1b model
// packed twice would not leave room for much else, so a kernel A/B drops it first).
struct Loaded {
  std::unique_ptr<llmserve::ModelWeights> weights;
  std::unique_ptr<llmserve::Transformer> model;
  WeightVariant variant = kF32;
  std::string error;
};

Loaded& Get(const WeightVariant& variant) {
  static Loaded l;
  if (l.weights == nullptr && l.error.empty()) {
    auto w = llmserve::LoadModel(ModelPath());
    if (!w.ok()) l.error = std::string(w.status().message());
    else l.weights = *std::move(w);
  }
  if (l.weights != nullptr && (l.model == nullptr || !(l.variant == variant))) {
    l.model.reset();
    auto m = Build(*l.weights, variant, g_kernels);
    if (!m.ok()) {
      l.error = std::string(m.status().message());
    } else {
      l.model = *std::move(m);
      l.variant = variant;
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

// One decode setup of an A/B: a cache holding `ctx` tokens of every sequence, and the
// step's sequences (one token each at position ctx, rewritten every step).
struct DecodeVariant {
  std::string name;
  int ctx = 0;
  std::unique_ptr<llmserve::KvCache> cache;
  std::vector<int32_t> blocks;
  std::vector<llmserve::ForwardBatch::Seq> seqs;
};

// Allocates the variant's cache and prefills `batch` random contexts of v.ctx tokens.
absl::Status SetUpDecode(llmserve::Transformer& model, int batch, DType kv, DecodeVariant& v, float* logits) {
  const llmserve::ModelConfig& c = model.config();
  const int64_t per_seq = (v.ctx + 1 + 15) / 16;
  v.cache = NewCache(c, per_seq * batch, kv);
  if (v.cache == nullptr) return absl::ResourceExhaustedError("cannot allocate the KV cache");
  v.blocks.resize(static_cast<size_t>(per_seq * batch));
  std::iota(v.blocks.begin(), v.blocks.end(), 0);
  auto table = [&](int s) { return std::span<const int32_t>(v.blocks.data() + s * per_seq, per_seq); };
  std::vector<int32_t> tokens = RandomTokens(int64_t{batch} * v.ctx, c.vocab_size, 1);
  std::vector<llmserve::ForwardBatch::Seq> prompt;
  std::vector<int32_t> rows;
  for (int s = 0; s < batch; ++s) {
    prompt.push_back({s * v.ctx, v.ctx, 0, table(s)});
    rows.push_back((s + 1) * v.ctx - 1);
    v.seqs.push_back({s, 1, v.ctx, table(s)});
  }
  return model.Forward({tokens, prompt, rows}, *v.cache, logits);
}

// A kernel choice that Decode compares step by step (side 1: on), from the environment:
// LLMSERVE_BENCH_{SMALL_GEMM,KV_PREFETCH,BF16_FMA,FEW_ROWS}=ab. Each side is its own
// model, built with `apply(choices, on)`.
struct KernelAB {
  std::string name;  // counter prefix
  void (*apply)(llmserve::KernelChoices& k, bool on);
};

std::optional<KernelAB> KernelABFromEnv() {
  auto ab = [](const char* var) {
    const char* env = std::getenv(var);
    return env != nullptr && std::string(env) == "ab";
  };
  if (ab("LLMSERVE_BENCH_SMALL_GEMM")) {
    return KernelAB{"small_gemm", [](llmserve::KernelChoices& k, bool on) { k.small_gemm = on; }};
  }
  if (ab("LLMSERVE_BENCH_KV_PREFETCH")) {
    return KernelAB{"kv_prefetch", [](llmserve::KernelChoices& k, bool on) { k.kv_prefetch = on; }};
  }
  if (ab("LLMSERVE_BENCH_FEW_ROWS")) {
    return KernelAB{"few_rows_small_gemm", [](llmserve::KernelChoices& k, bool on) {
                      k.small_gemm_min_rows = on ? 1 : llmserve::kSmallGemmMinRows;
                    }};
  }
  if (ab("LLMSERVE_BENCH_BF16_FMA")) {
    return KernelAB{"bf16_fma", [](llmserve::KernelChoices& k, bool on) {
                      k.bf16_kernel = on ? llmserve::Bf16Kernel::kFma : llmserve::Bf16Kernel::kDot;
                    }};
  }
  return std::nullopt;
}

void Decode(benchmark::State& state, WeightVariant wv) {
  const DType dtype = wv.dtype;
  Loaded& l = Get(wv);
  if (l.model == nullptr) return state.SkipWithError(l.error.c_str());
  const llmserve::ModelConfig c = l.model->config();
  const int batch = static_cast<int>(state.range(0));
  auto clamp = [&](int ctx) { return static_cast<int>(std::min<int64_t>(ctx, c.context_length - 1)); };
  const char* kv_env = std::getenv("LLMSERVE_BENCH_KV");
  const bool kv_ab = kv_env != nullptr && std::string(kv_env) == "ab";
  const std::optional<KernelAB> kab = KernelABFromEnv();
  const bool kernel_ab = kab.has_value();  // a kernel A/B: two models, one cache
  // The models stepped: the loaded one, or the kernel A/B's two sides [off, on] (built
  // after dropping the loaded one, which Get() rebuilds for the next benchmark).
  std::unique_ptr<llmserve::Transformer> sides[2];
  if (kernel_ab) {
    l.model.reset();
    for (int side = 0; side < 2; ++side) {
      llmserve::KernelChoices k = g_kernels;
      kab->apply(k, side == 1);
      auto m = Build(*l.weights, wv, k);
      if (!m.ok()) return state.SkipWithError(std::string(m.status().message()).c_str());
      sides[side] = *std::move(m);
    }
  }
  auto model = [&](int side) -> llmserve::Transformer& { return kernel_ab ? *sides[side] : *l.model; };
  const std::vector<int> contexts = DecodeContexts();
  // One variant, or the two sides of the KV or context A/B (a kernel A/B runs one
  // variant on two models).
  std::vector<DecodeVariant> variants(kv_ab || contexts.size() == 2 ? 2 : 1);
  std::vector<DType> kv_types(variants.size(), KvDType(dtype));
  for (size_t i = 0; i < variants.size(); ++i) {
    variants[i].ctx = clamp(contexts[kv_ab ? 0 : i]);
    if (kv_ab) kv_types[i] = i == 0 ? DType::kF32 : DType::kBF16;
    variants[i].name = kv_ab ? (i == 0 ? "kv_f32_ms" : "kv_bf16_ms") : "ctx_" + std::to_string(variants[i].ctx) + "_ms";
  }
  std::vector<float> logits(static_cast<size_t>(batch * c.vocab_size));
  for (size_t i = 0; i < variants.size(); ++i) {
    if (absl::Status st = SetUpDecode(model(0), batch, kv_types[i], variants[i], logits.data()); !st.ok()) {
      return state.SkipWithError(std::string(st.message()).c_str());
    }
  }
  std::vector<int32_t> step_tokens = RandomTokens(batch, c.vocab_size, 2);
  std::vector<int32_t> rows(static_cast<size_t>(batch));
  std::iota(rows.begin(), rows.end(), 0);
  const bool ab = kernel_ab || variants.size() == 2;
  std::vector<double> ms[2];  // step times of the A/B sides: [off, on] or [variant 0, variant 1]
  absl::Status st;
  for (auto _ : state) {
    const int side = ab && ms[1].size() <= ms[0].size() ? 1 : 0;
    DecodeVariant& v = variants[kernel_ab ? 0 : static_cast<size_t>(side)];
    llmserve::Transformer& m = model(kernel_ab ? side : 0);
    const auto t0 = std::chrono::steady_clock::now();
    st = m.Forward({step_tokens, v.seqs, rows}, *v.cache, logits.data());
    benchmark::DoNotOptimize(logits.data());
    if (ab) ms[side].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  if (ab) {
    for (int side = 0; side < 2; ++side) {
      std::sort(ms[side].begin(), ms[side].end());
      const std::string name = kernel_ab ? kab->name + (side == 1 ? "_on_ms" : "_off_ms") : variants[side].name;
      if (!ms[side].empty()) state.counters[name] = ms[side][ms[side].size() / 2];
    }
  }
  if (!st.ok()) return state.SkipWithError(std::string(st.message()).c_str());
  const std::string name = std::string("Decode/") + wv.name + "/" + std::to_string(batch);
  DecodeVariant& v = variants.back();
  llmserve::Transformer& last = model(kernel_ab ? 1 : 0);
  MaybeProfile(name, last, [&] { (void)last.Forward({step_tokens, v.seqs, rows}, *v.cache, logits.data()); });
  const double steps = static_cast<double>(state.iterations());
  state.counters["tokens_per_s"] = benchmark::Counter(steps * batch, benchmark::Counter::kIsRate);
  state.counters["weight_bytes_per_s"] =
      benchmark::Counter(steps * static_cast<double>(last.weight_bytes()), benchmark::Counter::kIsRate);
  state.counters["weight_MiB"] = static_cast<double>(last.weight_bytes()) / 1048576.0;
  state.SetLabel(last.weight_format());
}

void Prefill(benchmark::State& state, WeightVariant wv) {
  const DType dtype = wv.dtype;
  Loaded& l = Get(wv);
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
  const std::string name = std::string("Prefill/") + wv.name + "/" + std::to_string(n);
  MaybeProfile(name, *l.model, [&] { (void)l.model->Forward({tokens, seqs, rows}, *cache, logits.data()); });
  const double steps = static_cast<double>(state.iterations());
  state.counters["tokens_per_s"] = benchmark::Counter(steps * n, benchmark::Counter::kIsRate);
  state.counters["gflops"] = benchmark::Counter(steps * n * 2.0 * LinearParams(c) * 1e-9, benchmark::Counter::kIsRate);
  state.SetLabel(l.model->weight_format());
}

// A prompt's last `n` tokens after `cached` tokens already in the cache: what a prefix-
// cache hit computes (the 1024 + 64 shape of bench/run_peer_bench.sh's prefix cell).
// Prefills the cached part once, then forwards the n rows at positions cached.. each
// iteration (rewriting the same rows); tokens_per_s counts the n rows, gflops the linear
// layers only (the attention over the cached context is the difference to cached = 0).
void Suffix(benchmark::State& state, WeightVariant wv) {
  Loaded& l = Get(wv);
  if (l.model == nullptr) return state.SkipWithError(l.error.c_str());
  const llmserve::ModelConfig& c = l.model->config();
  const int n = static_cast<int>(state.range(0));
  const int cached = static_cast<int>(std::min<int64_t>(state.range(1), c.context_length - n));
  if (cached < 0) return state.SkipWithError("the suffix does not fit the context");
  const int64_t nblocks = (cached + n + 15) / 16;
  auto cache = NewCache(c, nblocks, KvDType(wv.dtype));
  if (cache == nullptr) return state.SkipWithError("cannot allocate the KV cache");
  std::vector<int32_t> blocks(static_cast<size_t>(nblocks));
  std::iota(blocks.begin(), blocks.end(), 0);
  const std::vector<int32_t> tokens = RandomTokens(cached + n, c.vocab_size, 5);
  std::vector<float> logits(static_cast<size_t>(c.vocab_size));
  absl::Status st;
  if (cached > 0) {
    const std::vector<llmserve::ForwardBatch::Seq> prefix = {{0, cached, 0, blocks}};
    const std::vector<int32_t> none;
    st = l.model->Forward({std::span<const int32_t>(tokens).first(cached), prefix, none}, *cache, logits.data());
    if (!st.ok()) return state.SkipWithError(std::string(st.message()).c_str());
  }
  const std::span<const int32_t> suffix = std::span<const int32_t>(tokens).subspan(cached);
  const std::vector<llmserve::ForwardBatch::Seq> seqs = {{0, n, cached, blocks}};
  const std::vector<int32_t> rows = {n - 1};
  for (auto _ : state) {
    st = l.model->Forward({suffix, seqs, rows}, *cache, logits.data());
    benchmark::DoNotOptimize(logits.data());
  }
  if (!st.ok()) return state.SkipWithError(std::string(st.message()).c_str());
  const std::string name = absl::StrCat("Suffix/", wv.name, "/", n, "/", cached);
  MaybeProfile(name, *l.model, [&] { (void)l.model->Forward({suffix, seqs, rows}, *cache, logits.data()); });
  const double steps = static_cast<double>(state.iterations());
  state.counters["tokens_per_s"] = benchmark::Counter(steps * n, benchmark::Counter::kIsRate);
  state.counters["gflops"] = benchmark::Counter(steps * n * 2.0 * LinearParams(c) * 1e-9, benchmark::Counter::kIsRate);
  state.SetLabel(l.model->weight_format());
}

// Two weight variants of the model side by side (LLMSERVE_BENCH_WEIGHTS_AB, e.g. "bf16,int8"):
// both packed, decode steps of batch 1 alternating between them, the median step of each
// (<name>_ms) and their ratio (speedup = first / second). The machine's bandwidth moves by
// 2x within minutes, so the comparison the issue asks for (int8 against bf16 "in the same
// run") is made step by step.
void DecodeAB(benchmark::State& state) {
  const char* env = std::getenv("LLMSERVE_BENCH_WEIGHTS_AB");
  const std::string spec = env != nullptr ? env : "";
  std::vector<WeightVariant> sides;
  for (const WeightVariant& w : {kF32, kBf16, kInt8, kFile}) {
    for (absl::string_view n : absl::StrSplit(spec, ',')) {
      if (n == w.name) sides.push_back(w);
    }
  }
  if (sides.size() != 2) return state.SkipWithError("set LLMSERVE_BENCH_WEIGHTS_AB to two of f32,bf16,int8,file");
  auto weights = llmserve::LoadModel(ModelPath());
  if (!weights.ok()) return state.SkipWithError(std::string(weights.status().message()).c_str());
  std::unique_ptr<llmserve::Transformer> models[2];
  DecodeVariant dv[2];
  const int batch = static_cast<int>(state.range(0));
  std::vector<float> logits;
  for (int i = 0; i < 2; ++i) {
    const WeightVariant& w = sides[static_cast<size_t>(i)];
    auto m = Build(**weights, w, g_kernels);
    if (!m.ok()) return state.SkipWithError(std::string(m.status().message()).c_str());
    models[i] = *std::move(m);
    logits.resize(static_cast<size_t>(batch * models[i]->config().vocab_size));
    dv[i].ctx = static_cast<int>(std::min<int64_t>(kDecodeContext, models[i]->config().context_length - 1));
    if (absl::Status st = SetUpDecode(*models[i], batch, KvDType(w.dtype), dv[i], logits.data()); !st.ok()) {
      return state.SkipWithError(std::string(st.message()).c_str());
    }
  }
  const llmserve::ModelConfig& c = models[0]->config();
  std::vector<int32_t> step_tokens = RandomTokens(batch, c.vocab_size, 2);
  std::vector<int32_t> rows(static_cast<size_t>(batch));
  std::iota(rows.begin(), rows.end(), 0);
  std::vector<double> ms[2];
  for (auto _ : state) {
    const int side = ms[1].size() < ms[0].size() ? 1 : 0;
    const auto t0 = std::chrono::steady_clock::now();
    const absl::Status st = models[side]->Forward({step_tokens, dv[side].seqs, rows}, *dv[side].cache, logits.data());
    if (!st.ok()) return state.SkipWithError(std::string(st.message()).c_str());
    ms[side].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  double median[2];
  for (int i = 0; i < 2; ++i) {
    std::sort(ms[i].begin(), ms[i].end());
    median[i] = ms[i].empty() ? 0 : ms[i][ms[i].size() / 2];
    state.counters[std::string(sides[static_cast<size_t>(i)].name) + "_ms"] = median[i];
    state.counters[std::string(sides[static_cast<size_t>(i)].name) + "_MiB"] =
        static_cast<double>(models[i]->weight_bytes()) / 1048576.0;
  }
  state.counters["speedup"] = median[1] > 0 ? median[0] / median[1] : 0;
}
BENCHMARK(DecodeAB)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(20.0);

// One variant after another (one packed model alive at a time).
BENCHMARK_CAPTURE(Decode, f32, kF32)->Arg(1)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK_CAPTURE(Prefill, f32, kF32)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK_CAPTURE(Decode, bf16, kBf16)->Arg(1)->Arg(8)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK_CAPTURE(Prefill, bf16, kBf16)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK_CAPTURE(Suffix, bf16, kBf16)
    ->Args({64, 0})
    ->Args({64, 1024})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);
BENCHMARK_CAPTURE(Decode, int8, kInt8)->Arg(1)->Arg(8)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK_CAPTURE(Prefill, int8, kInt8)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK_CAPTURE(Decode, file, kFile)->Arg(1)->Arg(8)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK_CAPTURE(Prefill, file, kFile)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

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
  if (small_gemm != nullptr && std::string(small_gemm) == "0") g_kernels.small_gemm = false;
  // LLMSERVE_BENCH_SMALL_GEMM_ROWS=N: the small-batch kernel for every M up to N.
  if (const char* rows = std::getenv("LLMSERVE_BENCH_SMALL_GEMM_ROWS"); rows != nullptr) {
    g_kernels.small_gemm_max_rows = std::atoll(rows);
  }
  if (absl::Status s = g_kernels.Validate(); !s.ok()) {
    std::cerr << "forward_bench: " << s.message() << "\n";
    return 1;
  }
  benchmark::AddCustomContext("small_gemm", g_kernels.small_gemm ? "on" : "off");
  benchmark::AddCustomContext("model", ModelPath());
  benchmark::AddCustomContext("threads", std::to_string(kThreads));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
