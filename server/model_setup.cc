#include "server/model_setup.h"

#include <filesystem>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/chat_setup.h"
#include "server/engine_setup.h"

namespace llmserve {
namespace {

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
  auto loaded = LoadModelFiles(config);
  if (!loaded.ok()) return loaded.status();
  const ModelConfig model_config = loaded->weights->config;

  ModelSetup out;
  out.demo = config.model_path.empty();
  out.tokenizer = std::move(loaded->tokenizer);
  auto built = BuildEngine(config, *loaded->weights, *out.tokenizer, observer);
  if (!built.ok()) return built.status();
  out.engine = std::move(built->engine);
  out.num_blocks = built->num_blocks;
  const SchedulerConfig& sc = out.engine->config().scheduler;

  auto chat = SetUpChat(config.chat_template_path, model_config.format, *out.tokenizer);
  if (!chat.ok()) return chat.status();
  out.chat = std::move(chat->prompter);

  ServiceInfo& info = out.info;
  info.chat = out.chat.get();
  info.chat_template_source = chat->source;
  info.model_name = ServedModelName(config);
  info.config = model_config;
  info.num_parameters = CountParameters(*loaded->weights);
  info.weight_dtype = built->weight_format;
  info.kv_dtype = config.EffectiveKvDType();
  info.version = kLlmserveVersion;
  info.start_time = absl::Now();
  info.max_prompt_bytes = config.EffectiveMaxPromptBytes(sc.max_context);

  const int64_t capacity = int64_t{out.num_blocks} * config.block_size;
  const unsigned cores = std::thread::hardware_concurrency();
  out.summary = absl::StrFormat(
      "model %s (%s %s, %s params, %d layers, hidden %d, %d heads / %d KV heads, vocab %d, context %d), "
      "weights %s, KV %s, threads %s; KV cache %d blocks x %d = %d tokens (%.1f MiB); max_running %d, "
      "max_batched_tokens %d, max_prefill_chunk %d, max_waiting %d, max_prompt_bytes %d, prefill policy %s, "
      "prompt_pack_rows %d, kernels %s; chat template %s; linear layers %s",
      info.model_name, model_config.format, ArchitectureName(model_config.arch), ParamsString(info.num_parameters),
      model_config.num_layers, model_config.hidden_size, model_config.num_heads, model_config.num_kv_heads,
      model_config.vocab_size, model_config.context_length, built->weight_format,
      DTypeName(config.EffectiveKvDType()),
      config.threads > 0 ? absl::StrCat(config.threads) : absl::StrCat("all (", cores, ")"), out.num_blocks,
      config.block_size, capacity, static_cast<double>(built->kv_bytes_per_block) * out.num_blocks / (1 << 20),
      sc.max_running, sc.max_batched_tokens, sc.max_prefill_chunk, sc.max_waiting, info.max_prompt_bytes,
      built->prefill_policy, sc.prompt_pack_rows,
      built->kernels, chat->note, built->linear_layers);
  return out;
}

}  // namespace llmserve
