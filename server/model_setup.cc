#include "server/model_setup.h"

#include <algorithm>
#include <filesystem>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/kv_cache.h"
#include "model/end_of_generation.h"
#include "model/model_loader.h"
#include "model/runtime_config.h"
#include "model/tokenizer/tokenizer_loader.h"
#include "model/transformer.h"
#include "scheduler/engine_model.h"
#include "scheduler/prefill_policy.h"
#include "server/chat_setup.h"
#include "server/demo_model.h"
#include "server/piggyback_calibration.h"
#include "server/prefill_policy_choice.h"

namespace llmserve {
namespace {

// Resolves the prefill policy flags into one fixed policy (prefill_policy_choice.h),
// measuring on `model` and `cache` first for --piggyback auto, and writes it into `sc`.
// Returns the policy and why, for the startup log line.
std::string SetPrefillPolicy(const ServerConfig& config, Transformer& model, KvCache& cache, SchedulerConfig& sc) {
  absl::StatusOr<PiggybackTimings> measured = absl::FailedPreconditionError("not asked for");
  if (NeedsPiggybackCalibration(config)) {
    measured = MeasurePiggyback(model, cache, UsualDecodeRows(config.mixed_step_tokens), config.mixed_step_tokens,
                                config.threads);
  }
  const PrefillPolicyChoice choice = ResolvePrefillPolicy(config, measured);
  sc.set_prefill_policy(choice.policy);
  return absl::StrCat(MakePrefillPolicy(sc.prefill_policy())->Describe(), "; ", choice.reason);
}

struct Loaded {
  std::unique_ptr<ModelWeights> weights;
  std::unique_ptr<Tokenizer> tokenizer;
};

absl::Status Prefixed(const absl::Status& s, const std::string& what) {
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

absl::StatusOr<Loaded> LoadFiles(const ServerConfig& config) {
  if (config.model_path.empty()) {
    auto demo = MakeDemoModel();
    if (!demo.ok()) return Prefixed(demo.status(), "cannot build the demo model");
    return Loaded{std::move(demo->weights), std::move(demo->tokenizer)};
  }
  auto format = DetectModelFormat(config.model_path);
  if (!format.ok()) return Prefixed(format.status(), "cannot load model");
  std::string tok_path = config.tokenizer_path;
  if (tok_path.empty()) {
    if (*format == ModelFormat::kLlama2c) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot load model: ", config.model_path,
          " is a llama2.c checkpoint, which has no vocabulary: give --tokenizer (its tokenizer.bin)"));
    }
    tok_path = config.model_path;
  }
  Loaded out;
  auto weights = LoadModel(config.model_path);
  if (!weights.ok()) return Prefixed(weights.status(), "cannot load model");
  out.weights = *std::move(weights);
  auto tok = LoadTokenizer(tok_path);
  if (!tok.ok()) return Prefixed(tok.status(), "cannot load tokenizer");
  out.tokenizer = *std::move(tok);
  if (out.tokenizer->vocab_size() > out.weights->config.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat("tokenizer ", tok_path, " has ", out.tokenizer->vocab_size(),
                                                   " tokens, more than the model's ", out.weights->config.vocab_size,
                                                   ": they do not belong together"));
  }
  return out;
}

std::string ParamsString(int64_t n) {
  if (n >= 1'000'000'000) return absl::StrFormat("%.2fB", static_cast<double>(n) / 1e9);
  if (n >= 1'000'000) return absl::StrFormat("%.1fM", static_cast<double>(n) / 1e6);
  return absl::StrFormat("%.1fK", static_cast<double>(n) / 1e3);
}

}  // namespace

std::string ModelNameFromPath(const std::string& path) {
  std::filesystem::path p(path);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();  // "dir/" -> "dir"
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) return p.filename().string();
  const std::string stem = p.stem().string();
  return stem.empty() ? path : stem;
}

int64_t CountParameters(const ModelWeights& weights) {
  int64_t n = 0;
  for (const auto& [name, t] : weights.tensors()) n += t.numel();
  return n;
}

std::string ServedModelName(const ServerConfig& config) {
  if (!config.model_name.empty()) return config.model_name;
  return config.model_path.empty() ? std::string("demo") : ModelNameFromPath(config.model_path);
}

absl::StatusOr<ModelSetup> SetUpModel(const ServerConfig& config, EngineObserver* observer) {
  auto loaded = LoadFiles(config);
  if (!loaded.ok()) return loaded.status();
  const ModelConfig model_config = loaded->weights->config;

  RuntimeConfig runtime;
  runtime.weight_dtype = config.EffectiveWeightDType();
  runtime.weight_quant = config.weight_quant;
  runtime.kv_dtype = config.EffectiveKvDType();
  runtime.threads = config.threads;
  if (absl::Status s = runtime.Validate(); !s.ok()) return s;
  auto transformer = Transformer::Create(*loaded->weights, runtime);
  if (!transformer.ok()) return Prefixed(transformer.status(), "cannot prepare the model");
  const std::string weight_format = (*transformer)->weight_format();
  const std::string linear_layers = (*transformer)->weights_summary();
  const std::string kernels = (*transformer)->kernel_plan().Describe();

  auto num_blocks = ChooseKvBlocks(config, model_config);
  if (!num_blocks.ok()) return num_blocks.status();
  KvCacheConfig kv = KvCacheConfig::ForModel(model_config, config.block_size, config.EffectiveKvDType());
  kv.num_blocks = *num_blocks;
  auto cache = KvCache::Create(kv);
  if (!cache.ok()) return Prefixed(cache.status(), "cannot allocate the KV cache");

  ModelSetup out;
  out.demo = config.model_path.empty();
  out.num_blocks = *num_blocks;
  out.tokenizer = std::move(loaded->tokenizer);
  EngineConfig ec;
  SchedulerConfig& sc = ec.scheduler;
  sc.block_size = config.block_size;
  sc.num_blocks = *num_blocks;
  sc.max_running = config.max_running;
  sc.max_batched_tokens = config.max_batched_tokens;
  sc.max_prefill_chunk = config.max_prefill_chunk > 0 ? config.max_prefill_chunk : config.max_batched_tokens;
  sc.max_waiting = config.max_waiting;
  sc.max_context = static_cast<int32_t>(model_config.context_length);
  sc.eos_ids = EndOfGenerationIds(model_config, *out.tokenizer);
  sc.step_policy = config.step_policy;
  sc.max_decode_stall = config.max_decode_stall;
  sc.prefill_spread_steps = config.prefill_spread_steps;
  sc.mixed_step_tokens = config.mixed_step_tokens;
  const std::string prefill_policy = SetPrefillPolicy(config, **transformer, **cache, sc);
  ec.channel_capacity = static_cast<size_t>(config.channel_capacity);
  auto engine = Engine::Create(ec, MakeTransformerEngineModel(*std::move(transformer), *std::move(cache), config.threads),
                               out.tokenizer.get(), observer);
  if (!engine.ok()) return Prefixed(engine.status(), "cannot start the engine");
  out.engine = *std::move(engine);

  auto chat = SetUpChat(config.chat_template_path, model_config.format, *out.tokenizer);
  if (!chat.ok()) return chat.status();
  out.chat = std::move(chat->prompter);

  ServiceInfo& info = out.info;
  info.chat = out.chat.get();
  info.chat_template_source = chat->source;
  info.model_name = ServedModelName(config);
  info.config = model_config;
  info.num_parameters = CountParameters(*loaded->weights);
  info.weight_dtype = weight_format;
  info.kv_dtype = config.EffectiveKvDType();
  info.version = kLlmserveVersion;
  info.start_time = absl::Now();

  const int64_t capacity = int64_t{*num_blocks} * config.block_size;
  const unsigned cores = std::thread::hardware_concurrency();
  out.summary = absl::StrFormat(
      "model %s (%s %s, %s params, %d layers, hidden %d, %d heads / %d KV heads, vocab %d, context %d), "
      "weights %s, KV %s, threads %s; KV cache %d blocks x %d = %d tokens (%.1f MiB); max_running %d, "
      "max_batched_tokens %d, max_prefill_chunk %d, max_waiting %d, prefill policy %s, "
      "kernels %s; chat template %s; linear layers %s",
      info.model_name, model_config.format, ArchitectureName(model_config.arch), ParamsString(info.num_parameters),
      model_config.num_layers, model_config.hidden_size, model_config.num_heads, model_config.num_kv_heads,
      model_config.vocab_size, model_config.context_length, weight_format,
      DTypeName(config.EffectiveKvDType()),
      config.threads > 0 ? absl::StrCat(config.threads) : absl::StrCat("all (", cores, ")"), *num_blocks,
      config.block_size, capacity, static_cast<double>(kv.BytesPerBlock()) * *num_blocks / (1 << 20),
      sc.max_running, sc.max_batched_tokens, sc.max_prefill_chunk, sc.max_waiting, prefill_policy,
      kernels, chat->note, linear_layers);
  return out;
}

}  // namespace llmserve
