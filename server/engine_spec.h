// EngineSpec: what an engine is built from (the model files, the runtime, the KV cache
// and the scheduler settings), with the product defaults and one Validate(). The
// server (ServerConfig extends it), llmrun and engine_bench all fill one from the same
// flags (server/engine_flags.h) and build with BuildEngine (server/engine_setup.h).
//
// One place for each default: the fields the scheduler and engine also have take their
// defaults from SchedulerConfig / EngineConfig; the rest are set here. The exceptions,
// on purpose: max_prefill_chunk 0 stands for max_batched_tokens (SchedulerConfig holds
// the resolved number), and prefill_spread_steps is 128 here (the product's piggybacking)
// and prompt_pack_rows 16 (the product's one-prompt-after-another prefill) while
// SchedulerConfig's 0s keep them off for the scheduler's own tests and fakes.
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
#include "scheduler/engine.h"
#include "scheduler/scheduler.h"

namespace llmserve {

// Piggybacking prompt tokens on decode steps (scheduler/prefill_policy.h): measured once at
// start-up and used where it pays (server/prefill_policy_choice.h), or forced.
enum class Piggyback : uint8_t { kAuto, kOn, kOff };
// "auto" / "on" / "off".
const char* PiggybackName(Piggyback p);
// Parses "auto" / "on" / "off"; INVALID_ARGUMENT otherwise.
absl::StatusOr<Piggyback> ParsePiggyback(std::string_view s);

struct EngineSpec {
  // Model.
  std::string model_path;          // llama2.c .bin, .gguf or HF directory; "" = built-in demo model
  std::string tokenizer_path;      // "" = the model's own (required for llama2.c checkpoints)

  // Runtime.
  int32_t threads = 0;             // compute threads, 0 = all cores
  std::optional<DType> weight_dtype;  // f32 or bf16; unset = bf16 with avx512_bf16, else f32
  WeightQuant weight_quant = WeightQuant::kAuto;  // --weight-dtype: auto keeps quantized tensors,
                                                  // f32/bf16 dequantize them, int8 quantizes all
  std::optional<DType> kv_dtype;   // f32 or bf16; unset = the weight dtype in effect

  // KV cache and scheduler.
  int64_t kv_cache_bytes = int64_t{2} << 30;  // KV budget; capped to max_running full contexts
  int32_t kv_blocks = 0;           // > 0: exactly this many blocks (overrides kv_cache_bytes)
  int32_t block_size = SchedulerConfig{}.block_size;          // tokens per KV block
  int32_t max_running = SchedulerConfig{}.max_running;        // sequences in the running batch
  int32_t max_batched_tokens = SchedulerConfig{}.max_batched_tokens;  // tokens per step, >= max_running
  int32_t max_prefill_chunk = 0;   // prompt tokens per sequence per step; 0 = max_batched_tokens
  int32_t max_waiting = SchedulerConfig{}.max_waiting;  // queued requests beyond which a submit is refused
  StepPolicy step_policy = SchedulerConfig{}.step_policy;
  int32_t max_decode_stall = SchedulerConfig{}.max_decode_stall;  // separate policy: prefill steps in a row
                                                                  // while decodes wait
  Piggyback piggyback = Piggyback::kAuto;  // mixed policy: prompt tokens on decode steps (auto: where it pays)
  int32_t prefill_spread_steps = 128;  // piggybacking: only while the pending prompt tokens fit in this many
                                       // decode steps; 0 = off (scheduler/scheduler.h)
  int32_t mixed_step_tokens = SchedulerConfig{}.mixed_step_tokens;  // piggybacking: fill decode steps up to
                                                                    // this many rows
  int32_t prompt_pack_rows = 16;   // a further prompt joins a step only below its decode rows
                                   // plus this many (SchedulerConfig::prompt_pack_rows)
                                   // (scheduler/scheduler.h); 0 = pack prompts up to the step's budget
  bool prefix_caching = SchedulerConfig{}.prefix_caching;  // share computed KV blocks by prompt prefix
  int32_t channel_capacity = static_cast<int32_t>(EngineConfig{}.channel_capacity);  // deltas queued per
                                                                                     // stream before they coalesce

  // INVALID_ARGUMENT naming the flag (--name) and the allowed range.
  absl::Status Validate() const;

  // The weight dtype in effect (resolves the default).
  DType EffectiveWeightDType() const;
  // The KV cache dtype in effect: the weights' by default (as vLLM's "auto": bf16 weights
  // get a bf16 cache, half the bytes per token and the bf16 attention kernel).
  DType EffectiveKvDType() const;
};

// --weight-dtype: "auto" (quantized tensors keep their format, the rest the default dtype),
// "f32" / "bf16" (every weight in that dtype), "int8" (every weight quantized at load to
// int8 blocks of 32). INVALID_ARGUMENT naming `flag`.
absl::Status ParseWeightDType(const std::string& flag, const std::string& value, EngineSpec* spec);
// The --weight-dtype value `spec` stands for: "auto", "f32", "bf16" or "int8".
std::string WeightDTypeFlagValue(const EngineSpec& spec);
// The --kv-dtype value `spec` stands for: "auto", "f32" or "bf16".
std::string KvDTypeFlagValue(const EngineSpec& spec);

// "f32" / "bf16" (or "auto" -> nullopt: the default); INVALID_ARGUMENT naming `flag`.
absl::StatusOr<std::optional<DType>> ParseComputeDType(const std::string& flag, const std::string& value,
                                                       bool allow_auto);

// A byte count: digits with an optional K, M, G or T suffix (powers of 1024; "2G", "512MiB",
// "1073741824"). INVALID_ARGUMENT naming `flag`.
absl::StatusOr<int64_t> ParseByteSize(const std::string& flag, const std::string& value);
// The shortest ParseByteSize spelling of `bytes` ("2G", "1536M", "1000").
std::string FormatByteSize(int64_t bytes);

// OK if lo <= value <= hi, else INVALID_ARGUMENT "--flag=value: must be in [lo, hi]note"
// (the form of every range error Validate() gives).
absl::Status FlagInRange(const char* flag, int64_t value, int64_t lo, int64_t hi, const std::string& note = "");
// INVALID_ARGUMENT "--flag=value: must be <requirement>".
absl::Status FlagOutOfRange(const char* flag, int64_t value, const std::string& requirement);
// An on|off flag's value: true for "on", false for "off", else INVALID_ARGUMENT
// "--flag=value: must be on or off".
absl::StatusOr<bool> ParseOnOff(const char* flag, const std::string& value);

// KV blocks for `spec` on `model`: kv_blocks if set, else as many as kv_cache_bytes holds,
// capped at max_running sequences of the whole context (what the engine could ever use).
// INVALID_ARGUMENT if that is not even one block.
absl::StatusOr<int32_t> ChooseKvBlocks(const EngineSpec& spec, const ModelConfig& model);

}  // namespace llmserve
