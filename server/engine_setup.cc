#include "server/engine_setup.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "model/end_of_generation.h"
#include "model/kv_cache.h"
#include "model/model_loader.h"
#include "model/tokenizer/tokenizer_loader.h"
#include "model/transformer.h"
#include "scheduler/engine_model.h"
#include "scheduler/prefill_policy.h"
#include "server/demo_model.h"
#include "server/piggyback_calibration.h"
#include "server/prefill_policy_choice.h"

namespace llmserve {
namespace {

absl::Status Prefixed(const absl::Status& s, const std::string& what) {
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

// Resolves the prefill policy flags into one fixed policy (prefill_policy_choice.h),
// measuring on `model` and `cache` first for --piggyback auto, and writes it into `sc`.
// Returns the policy and why, for the startup log line.
std::string SetPrefillPolicy(const EngineSpec& spec, Transformer& model, KvCache& cache, SchedulerConfig& sc) {
  absl::StatusOr<PiggybackTimings> measured = absl::FailedPreconditionError("not asked for");
  if (NeedsPiggybackCalibration(spec)) {
    measured = MeasurePiggyback(model, cache, UsualDecodeRows(spec.mixed_step_tokens), spec.mixed_step_tokens,
                                spec.threads);
  }
  const PrefillPolicyChoice choice = ResolvePrefillPolicy(spec, measured);
  sc.set_prefill_policy(choice.policy);
  return absl::StrCat(MakePrefillPolicy(sc.prefill_policy())->Describe(), "; ", choice.reason);
}

}  // namespace

absl::StatusOr<LoadedModel> LoadModelFiles(const EngineSpec& spec) {
  if (spec.model_path.empty()) {
    auto demo = MakeDemoModel();
    if (!demo.ok()) return Prefixed(demo.status(), "cannot build the demo model");
    return LoadedModel{std::move(demo->weights), std::move(demo->tokenizer)};
  }
  auto format = DetectModelFormat(spec.model_path);
  if (!format.ok()) return Prefixed(format.status(), "cannot load model");
  std::string tok_path = spec.tokenizer_path;
  if (tok_path.empty()) {
    if (*format == ModelFormat::kLlama2c) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot load model: ", spec.model_path,
          " is a llama2.c checkpoint, which has no vocabulary: give --tokenizer (its tokenizer.bin)"));
    }
    tok_path = spec.model_path;
  }
  LoadedModel out;
  auto weights = LoadModel(spec.model_path);
  if (!weights.ok()) return Prefixed(weights.status(), "cannot load model");
  out.weights = *std::move(weights);
  TokenizerLoadOptions tok_options;
  tok_options.model_vocab_size = out.weights->config.vocab_size;
  auto tok = LoadTokenizer(tok_path, tok_options);
  if (!tok.ok()) return Prefixed(tok.status(), "cannot load tokenizer");
  out.tokenizer = *std::move(tok);
  if (out.tokenizer->vocab_size() > out.weights->config.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat("tokenizer ", tok_path, " has ", out.tokenizer->vocab_size(),
                                                   " tokens, more than the model's ", out.weights->config.vocab_size,
                                                   ": they do not belong together"));
  }
  return out;
}

RuntimeConfig RuntimeConfigFor(const EngineSpec& spec) {
  RuntimeConfig runtime;
  runtime.weight_dtype = spec.EffectiveWeightDType();
  runtime.weight_quant = spec.weight_quant;
  runtime.kv_dtype = spec.EffectiveKvDType();
  runtime.threads = spec.threads;
  return runtime;
}

EngineConfig EngineConfigFor(const EngineSpec& spec, const ModelConfig& model, int32_t num_blocks,
                             std::vector<int32_t> eos_ids) {
  EngineConfig ec;
  SchedulerConfig& sc = ec.scheduler;
  sc.block_size = spec.block_size;
  sc.num_blocks = num_blocks;
  sc.max_running = spec.max_running;
  sc.max_batched_tokens = spec.max_batched_tokens;
  sc.max_prefill_chunk = spec.max_prefill_chunk > 0 ? spec.max_prefill_chunk : spec.max_batched_tokens;
  sc.max_waiting = spec.max_waiting;
  sc.max_context = static_cast<int32_t>(model.context_length);
  sc.eos_ids = std::move(eos_ids);
  sc.step_policy = spec.step_policy;
  sc.max_decode_stall = spec.max_decode_stall;
  sc.prefill_spread_steps = spec.prefill_spread_steps;
  sc.mixed_step_tokens = spec.mixed_step_tokens;
  sc.prompt_pack_rows = spec.prompt_pack_rows;
  sc.prefix_caching = spec.prefix_caching;
  ec.channel_capacity = static_cast<size_t>(spec.channel_capacity);
  return ec;
}

std::string DescribeEngineConfig(const EngineConfig& ec) {
  const SchedulerConfig& sc = ec.scheduler;
  return absl::StrCat("block_size=", sc.block_size, " num_blocks=", sc.num_blocks, " max_running=", sc.max_running,
                      " max_batched_tokens=", sc.max_batched_tokens, " max_prefill_chunk=", sc.max_prefill_chunk,
                      " max_waiting=", sc.max_waiting, " max_context=", sc.max_context, " eos_ids=[",
                      absl::StrJoin(sc.eos_ids, ","), "] step_policy=", StepPolicyName(sc.step_policy),
                      " max_decode_stall=", sc.max_decode_stall, " prefill_spread_steps=", sc.prefill_spread_steps,
                      " mixed_step_tokens=", sc.mixed_step_tokens, " prefill_policy=",
                      MakePrefillPolicy(sc.prefill_policy())->Describe(), " prompt_pack_rows=", sc.prompt_pack_rows,
                      " channel_capacity=", ec.channel_capacity,
                      " prefix_caching=", sc.prefix_caching ? "on" : "off");
}

absl::StatusOr<BuiltEngine> BuildEngine(const EngineSpec& spec, const ModelWeights& weights,
                                        const Tokenizer& tokenizer, EngineObserver* observer) {
  const ModelConfig& model_config = weights.config;
  const RuntimeConfig runtime = RuntimeConfigFor(spec);
  if (absl::Status s = runtime.Validate(); !s.ok()) return s;
  auto transformer = Transformer::Create(weights, runtime);
  if (!transformer.ok()) return Prefixed(transformer.status(), "cannot prepare the model");
  BuiltEngine out;
  out.weight_format = (*transformer)->weight_format();
  out.linear_layers = (*transformer)->weights_summary();
  out.kernels = (*transformer)->kernel_plan().Describe();

  auto num_blocks = ChooseKvBlocks(spec, model_config);
  if (!num_blocks.ok()) return num_blocks.status();
  KvCacheConfig kv = KvCacheConfig::ForModel(model_config, spec.block_size, spec.EffectiveKvDType());
  kv.num_blocks = *num_blocks;
  auto cache = KvCache::Create(kv);
  if (!cache.ok()) return Prefixed(cache.status(), "cannot allocate the KV cache");
  out.num_blocks = *num_blocks;
  out.kv_bytes_per_block = kv.BytesPerBlock();

  EngineConfig ec = EngineConfigFor(spec, model_config, *num_blocks, EndOfGenerationIds(model_config, tokenizer));
  out.prefill_policy = SetPrefillPolicy(spec, **transformer, **cache, ec.scheduler);
  auto engine = Engine::Create(ec, MakeTransformerEngineModel(*std::move(transformer), *std::move(cache), spec.threads),
                               &tokenizer, observer);
  if (!engine.ok()) return Prefixed(engine.status(), "cannot start the engine");
  out.engine = *std::move(engine);
  return out;
}

}  // namespace llmserve
