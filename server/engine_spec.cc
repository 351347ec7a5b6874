#include "server/engine_spec.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "model/kv_cache.h"
#include "model/runtime_config.h"

namespace llmserve {

const char* PiggybackName(Piggyback p) {
  switch (p) {
    case Piggyback::kOn: return "on";
    case Piggyback::kOff: return "off";
    case Piggyback::kAuto: break;
  }
  return "auto";
}

absl::StatusOr<Piggyback> ParsePiggyback(std::string_view s) {
  if (s == "auto") return Piggyback::kAuto;
  if (s == "on") return Piggyback::kOn;
  if (s == "off") return Piggyback::kOff;
  return absl::InvalidArgumentError(absl::StrCat("piggyback must be auto, on or off, not \"", std::string(s), "\""));
}
absl::Status FlagOutOfRange(const char* flag, int64_t value, const std::string& requirement) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", value, ": must be ", requirement));
}

absl::StatusOr<bool> ParseOnOff(const char* flag, const std::string& value) {
  if (value == "on" || value == "off") return value == "on";
  return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", value, ": must be on or off"));
}

absl::Status FlagInRange(const char* flag, int64_t value, int64_t lo, int64_t hi, const std::string& note) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return FlagOutOfRange(flag, value, absl::StrCat("in [", lo, ", ", hi, "]", note));
}

absl::Status EngineSpec::Validate() const {
  if (model_path.empty() && !tokenizer_path.empty()) {
    return absl::InvalidArgumentError("--tokenizer needs --model (the built-in demo model has its own vocabulary)");
  }
  if (absl::Status s = FlagInRange("threads", threads, 0, 1024, " (0 = all cores)"); !s.ok()) return s;
  if (kv_blocks == 0 && kv_cache_bytes < 1) return FlagOutOfRange("kv-cache-bytes", kv_cache_bytes, ">= 1");
  if (absl::Status s = FlagInRange("kv-blocks", kv_blocks, 0, std::numeric_limits<int32_t>::max(),
                               " (0 = from --kv-cache-bytes)");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = FlagInRange("block-size", block_size, 1, 1024); !s.ok()) return s;
  if (absl::Status s = FlagInRange("max-running", max_running, 1, 1 << 20); !s.ok()) return s;
  if (max_batched_tokens < max_running || max_batched_tokens > (1 << 24)) {
    return FlagOutOfRange("max-batched-tokens", max_batched_tokens,
                      absl::StrCat("in [--max-running (", max_running, "), ", 1 << 24, "]"));
  }
  if (max_prefill_chunk < 0 || max_prefill_chunk > max_batched_tokens) {
    return FlagOutOfRange("max-prefill-chunk", max_prefill_chunk,
                      absl::StrCat("in [0, --max-batched-tokens (", max_batched_tokens, ")] (0 = max-batched-tokens)"));
  }
  if (absl::Status s = FlagInRange("max-waiting", max_waiting, 1, 1 << 24); !s.ok()) return s;
  if (step_policy != StepPolicy::kMixed && step_policy != StepPolicy::kSeparate) {
    return absl::InvalidArgumentError("--step-policy must be mixed or separate");
  }
  if (absl::Status s = FlagInRange("max-decode-stall", max_decode_stall, 1, 1 << 20); !s.ok()) return s;
  if (piggyback != Piggyback::kAuto && piggyback != Piggyback::kOn && piggyback != Piggyback::kOff) {
    return absl::InvalidArgumentError("--piggyback must be auto, on or off");
  }
  if (absl::Status s = FlagInRange("prefill-spread-steps", prefill_spread_steps, 0, 1 << 20); !s.ok()) return s;
  if (absl::Status s = FlagInRange("mixed-step-tokens", mixed_step_tokens, 1, 1 << 24); !s.ok()) return s;
  if (absl::Status s = FlagInRange("prompt-pack-rows", prompt_pack_rows, 0, 1 << 24); !s.ok()) return s;
  if (absl::Status s = FlagInRange("channel-capacity", channel_capacity, 1, 1 << 20); !s.ok()) return s;
  for (DType t : {EffectiveWeightDType(), EffectiveKvDType()}) {
    if (t != DType::kF32 && t != DType::kBF16) {
      return absl::InvalidArgumentError(absl::StrCat("dtype ", DTypeName(t), " is not supported: use f32 or bf16"));
    }
  }
  return absl::OkStatus();
}

DType EngineSpec::EffectiveWeightDType() const { return weight_dtype.value_or(DefaultWeightDType()); }

DType EngineSpec::EffectiveKvDType() const { return kv_dtype.value_or(EffectiveWeightDType()); }

absl::Status ParseWeightDType(const std::string& flag, const std::string& value, EngineSpec* spec) {
  if (value == "int8") {
    spec->weight_quant = WeightQuant::kInt8;
    spec->weight_dtype.reset();
    return absl::OkStatus();
  }
  auto dtype = ParseComputeDType(flag, value, /*allow_auto=*/true);
  if (!dtype.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", value, ": must be auto, f32, bf16 or int8"));
  }
  spec->weight_dtype = *dtype;
  spec->weight_quant = dtype->has_value() ? WeightQuant::kNone : WeightQuant::kAuto;
  return absl::OkStatus();
}

std::string WeightDTypeFlagValue(const EngineSpec& spec) {
  if (spec.weight_quant == WeightQuant::kInt8) return "int8";
  if (spec.weight_quant == WeightQuant::kAuto) return "auto";
  return std::string(DTypeName(spec.EffectiveWeightDType()));
}

absl::StatusOr<std::optional<DType>> ParseComputeDType(const std::string& flag, const std::string& value,
                                                       bool allow_auto) {
  if (value == "f32") return std::optional<DType>(DType::kF32);
  if (value == "bf16") return std::optional<DType>(DType::kBF16);
  if (allow_auto && value == "auto") return std::optional<DType>();
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", value, ": must be f32 or bf16", allow_auto ? " (or auto)" : ""));
}

absl::StatusOr<int64_t> ParseByteSize(const std::string& flag, const std::string& value) {
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", value,
                                                   ": expected a byte count such as 2G, 512M or 1073741824"));
  };
  size_t digits = 0;
  while (digits < value.size() && value[digits] >= '0' && value[digits] <= '9') ++digits;
  if (digits == 0 || digits > 18) return bad();
  int64_t n = std::stoll(value.substr(0, digits));
  std::string suffix = value.substr(digits);  // "", K, KB, KiB, ... or B
  if (suffix.size() == 3 && suffix.compare(1, 2, "iB") == 0) suffix.resize(1);
  else if (suffix.size() == 2 && suffix[1] == 'B') suffix.resize(1);
  else if (suffix == "B") suffix.clear();
  int shift = 0;
  if (suffix == "K" || suffix == "k") shift = 10;
  else if (suffix == "M" || suffix == "m") shift = 20;
  else if (suffix == "G" || suffix == "g") shift = 30;
  else if (suffix == "T" || suffix == "t") shift = 40;
  else if (!suffix.empty()) return bad();
  if (n > (std::numeric_limits<int64_t>::max() >> shift)) return bad();
  return n << shift;
}

absl::StatusOr<int32_t> ChooseKvBlocks(const EngineSpec& spec, const ModelConfig& model) {
  if (spec.kv_blocks > 0) return spec.kv_blocks;
  KvCacheConfig kv = KvCacheConfig::ForModel(model, spec.block_size, spec.EffectiveKvDType());
  const size_t per_block = kv.BytesPerBlock();
  if (per_block == 0) return absl::InvalidArgumentError("the model's KV geometry is invalid");
  const int64_t blocks_per_seq = (model.context_length + spec.block_size - 1) / spec.block_size;
  const int64_t useful = std::min<int64_t>(int64_t{spec.max_running} * blocks_per_seq,
                                           std::numeric_limits<int32_t>::max());
  const int64_t fit = static_cast<int64_t>(static_cast<uint64_t>(spec.kv_cache_bytes) / per_block);
  if (fit < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--kv-cache-bytes=", spec.kv_cache_bytes,
                                                   " holds no KV block: one block of ", spec.block_size,
                                                   " tokens takes ", per_block, " bytes for this model"));
  }
  return static_cast<int32_t>(std::min(fit, useful));
}

std::string KvDTypeFlagValue(const EngineSpec& spec) {
  return spec.kv_dtype.has_value() ? std::string(DTypeName(*spec.kv_dtype)) : std::string("auto");
}

std::string FormatByteSize(int64_t bytes) {
  static constexpr struct {
    int shift;
    char suffix;
  } kUnits[] = {{40, 'T'}, {30, 'G'}, {20, 'M'}, {10, 'K'}};
  for (const auto& u : kUnits) {
    if (bytes > 0 && bytes % (int64_t{1} << u.shift) == 0) return absl::StrCat(bytes >> u.shift, std::string(1, u.suffix));
  }
  return absl::StrCat(bytes);
}

}  // namespace llmserve
