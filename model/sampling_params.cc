// SamplingParams / StopConditions validation: INVALID_ARGUMENT naming the first bad field
// and its allowed range.
#include "model/sampling_params.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "model/tokenizer/utf8.h"

namespace llmserve {
namespace {

constexpr size_t kMaxStopStrings = 16;
constexpr size_t kMaxStopStringBytes = 256;
constexpr int32_t kMaxLogprobs = 20;

// "<field> must be <range>, got <value>" for an integer field.
absl::Status BadInt(const char* field, const char* range, int64_t v) {
  return absl::InvalidArgumentError(absl::StrCat(field, " must be ", range, ", got ", v));
}

// "must be <range>, got <value>".
template <class T>
SamplingProblem Out(SamplingField field, const char* range, T v) {
  return {field, absl::StrCat("must be ", range, ", got ", v)};
}

}  // namespace

const char* SamplingFieldName(SamplingField field) {
  switch (field) {
    case SamplingField::kTemperature: return "temperature";
    case SamplingField::kTopK: return "top_k";
    case SamplingField::kTopP: return "top_p";
    case SamplingField::kMinP: return "min_p";
    case SamplingField::kRepetitionPenalty: return "repetition_penalty";
    case SamplingField::kPresencePenalty: return "presence_penalty";
    case SamplingField::kFrequencyPenalty: return "frequency_penalty";
    case SamplingField::kLogprobs: return "logprobs";
    case SamplingField::kLogitBias: return "logit_bias";
  }
  return "?";
}

std::optional<SamplingProblem> SamplingParams::FirstProblem() const {
  using F = SamplingField;
  // Every comparison below is false for NaN, so NaN fails each range check; inf is
  // rejected explicitly where the range is unbounded.
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) {
    return Out(F::kTemperature, "a finite number >= 0 (0 = greedy)", temperature);
  }
  if (top_k < 0) return Out(F::kTopK, ">= 0 (0 = all tokens)", top_k);
  if (!(top_p > 0.0f && top_p <= 1.0f)) return Out(F::kTopP, "in (0, 1]", top_p);
  if (!(min_p >= 0.0f && min_p <= 1.0f)) return Out(F::kMinP, "in [0, 1]", min_p);
  if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty)) {
    return Out(F::kRepetitionPenalty, "a finite number > 0 (1 = off)", repetition_penalty);
  }
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
    return Out(F::kPresencePenalty, "in [-2, 2]", presence_penalty);
  }
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
    return Out(F::kFrequencyPenalty, "in [-2, 2]", frequency_penalty);
  }
  if (logprobs < 0 || logprobs > kMaxLogprobs) return Out(F::kLogprobs, "in [0, 20]", logprobs);
  if (logit_bias.size() > kMaxLogitBias) return Out(F::kLogitBias, "at most 1024 entries", logit_bias.size());
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) return SamplingProblem{F::kLogitBias, absl::StrCat("must name token ids >= 0, got ", id)};
    if (!(bias >= -100.0f && bias <= 100.0f)) {
      return SamplingProblem{F::kLogitBias, absl::StrCat("must be in [-100, 100], got ", bias, " for token ", id)};
    }
  }
  return std::nullopt;
}

absl::Status SamplingParams::Validate() const {
  const std::optional<SamplingProblem> problem = FirstProblem();
  if (!problem.has_value()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(SamplingFieldName(problem->field), " ", problem->what));
}

absl::Status StopConditions::Validate(int32_t vocab_size) const {
  if (max_tokens < 1) return BadInt("max_tokens", ">= 1", max_tokens);
  for (size_t i = 0; i < stop_token_ids.size(); ++i) {
    const int32_t id = stop_token_ids[i];
    if (id < 0 || id >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("stop_token_ids[", i, "] must be in [0, ",
                                                     vocab_size, "), got ", id));
    }
  }
  if (stop_strings.size() > kMaxStopStrings) {
    return absl::InvalidArgumentError(absl::StrCat("stop_strings must have at most ",
                                                   kMaxStopStrings, " entries, got ",
                                                   stop_strings.size()));
  }
  for (size_t i = 0; i < stop_strings.size(); ++i) {
    const std::string& s = stop_strings[i];
    if (s.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("stop_strings[", i, "] must be non-empty"));
    }
    if (s.size() > kMaxStopStringBytes) {
      return absl::InvalidArgumentError(absl::StrCat("stop_strings[", i, "] must be at most ",
                                                     kMaxStopStringBytes, " bytes, got ",
                                                     s.size()));
    }
    if (!utf8::IsValid(s)) {
      return absl::InvalidArgumentError(absl::StrCat("stop_strings[", i,
                                                     "] must be valid UTF-8"));
    }
  }
  return absl::OkStatus();
}

SamplingParams DefaultSamplingParams(const GenerationDefaults& d) {
  SamplingParams p;
  if (d.temperature) p.temperature = *d.temperature;
  if (d.top_k) p.top_k = *d.top_k;
  if (d.top_p) p.top_p = *d.top_p;
  if (d.min_p) p.min_p = *d.min_p;
  if (d.repetition_penalty) p.repetition_penalty = *d.repetition_penalty;
  return p;
}

}  // namespace llmserve
