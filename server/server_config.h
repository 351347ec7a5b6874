// ServerConfig: everything the llmserve binary is told on its command line (server/main.cc
// fills it from flags), with the defaults and one Validate().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/dtype.h"
#include "model/model_config.h"
#include "model/runtime_config.h"
#include "scheduler/scheduler.h"

namespace llmserve {

// Piggybacking prompt tokens on decode steps (scheduler/prefill_policy.h): measured once at
// start-up and used where it pays (server/prefill_policy_choice.h), or forced.
enum class Piggyback : uint8_t { kAuto, kOn, kOff };
// "auto" / "on" / "off".
const char* PiggybackName(Piggyback p);
// Parses "auto" / "on" / "off"; INVALID_ARGUMENT otherwise.
absl::StatusOr<Piggyback> ParsePiggyback(std::string_view s);

struct ServerConfig {
  // Model.
  std::string model_path;          // llama2.c .bin, .gguf or HF directory; "" = built-in demo model
  std::string tokenizer_path;      // "" = the model's own (required for llama2.c checkpoints)
  std::string model_name;          // reported by GetModelInfo; "" = from the path ("demo" for the demo)
  std::string chat_template_path;  // --chat-template: a Jinja file overriding the model's own ("" = the model's)

  // Network.
  std::string host = "0.0.0.0";    // address to listen on (IPv4, IPv6 or a name)
  int32_t port = 50051;            // 0 = any free port (the chosen one is logged)
  int32_t metrics_port = 9400;     // Prometheus /metrics on host:metrics_port; 0 = off
  std::string metrics_prefix = "llmserve_";  // metric name prefix, [a-zA-Z_:][a-zA-Z0-9_:]* ("vllm:")

  // Runtime.
  int32_t threads = 0;             // compute threads, 0 = all cores
  std::optional<DType> weight_dtype;  // f32 or bf16; unset = bf16 with avx512_bf16, else f32
  WeightQuant weight_quant = WeightQuant::kAuto;  // --weight-dtype: auto keeps quantized tensors,
                                                  // f32/bf16 dequantize them, int8 quantizes all
  std::optional<DType> kv_dtype;   // f32 or bf16; unset = the weight dtype in effect

  // KV cache and scheduler.
  int64_t kv_cache_bytes = int64_t{2} << 30;  // KV budget; capped to max_running full contexts
  int32_t kv_blocks = 0;           // > 0: exactly this many blocks (overrides kv_cache_bytes)
  int32_t block_size = 16;         // tokens per KV block
  int32_t max_running = 64;        // sequences in the running batch
  int32_t max_batched_tokens = 512;  // tokens per engine step, >= max_running
  int32_t max_prefill_chunk = 0;   // prompt tokens per sequence per step; 0 = max_batched_tokens
  int32_t max_waiting = 256;       // queued requests beyond which Generate gets RESOURCE_EXHAUSTED
  StepPolicy step_policy = StepPolicy::kMixed;
  int32_t max_decode_stall = 4;    // separate policy: prefill steps in a row while decodes wait
  Piggyback piggyback = Piggyback::kAuto;  // mixed policy: prompt tokens on decode steps (auto: where it pays)
  int32_t prefill_spread_steps = 128;  // piggybacking: only while the pending prompt tokens fit in this many
                                       // decode steps; 0 = off (scheduler/prefill_policy.h)
  int32_t mixed_step_tokens = 12;      // piggybacking: fill decode steps up to this many rows
  int32_t channel_capacity = 32;   // deltas queued per stream before they coalesce

  // Lifecycle.
  int32_t drain_delay_seconds = 0;     // SIGTERM: serve on (health NOT_SERVING) this long before refusing
  int32_t drain_timeout_seconds = 30;  // then: how long in-flight streams may finish
  std::string log_level = "info";  // trace, debug, info, warn, error

  // INVALID_ARGUMENT naming the flag (--name) and the allowed range.
  absl::Status Validate() const;

  // "host:port", with an IPv6 literal bracketed.
  std::string ListenAddress() const;
  // The same for metrics_port.
  std::string MetricsAddress() const;
  // The weight dtype in effect (resolves the default).
  DType EffectiveWeightDType() const;
  // The KV cache dtype in effect: the weights' by default (as vLLM's "auto": bf16 weights
  // get a bf16 cache, half the bytes per token and the bf16 attention kernel).
  DType EffectiveKvDType() const;
};

// A Prometheus metric name prefix: non-empty, [a-zA-Z_:][a-zA-Z0-9_:]*.
bool ValidMetricsPrefix(const std::string& prefix);

// --weight-dtype: "auto" (quantized tensors keep their format, the rest the default dtype),
// "f32" / "bf16" (every weight in that dtype), "int8" (every weight quantized at load to
// int8 blocks of 32). INVALID_ARGUMENT naming `flag`.
absl::Status ParseWeightDType(const std::string& flag, const std::string& value, ServerConfig* config);
// The --weight-dtype value `config` stands for: "auto", "f32", "bf16" or "int8".
std::string WeightDTypeFlagValue(const ServerConfig& config);

// "f32" / "bf16" (or "auto" -> nullopt: the default); INVALID_ARGUMENT naming `flag`.
absl::StatusOr<std::optional<DType>> ParseComputeDType(const std::string& flag, const std::string& value,
                                                       bool allow_auto);

// A byte count: digits with an optional K, M, G or T suffix (powers of 1024; "2G", "512MiB",
// "1073741824"). INVALID_ARGUMENT naming `flag`.
absl::StatusOr<int64_t> ParseByteSize(const std::string& flag, const std::string& value);

// KV blocks for `config` on `model`: kv_blocks if set, else as many as kv_cache_bytes holds,
// capped at max_running sequences of the whole context (what the engine could ever use).
// INVALID_ARGUMENT if that is not even one block.
absl::StatusOr<int32_t> ChooseKvBlocks(const ServerConfig& config, const ModelConfig& model);

}  // namespace llmserve
