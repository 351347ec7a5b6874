// SamplingParams and StopConditions: what a request asks of token selection and when
// its generation ends. Plain values, validated once at submission.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "model/model_config.h"

namespace llmserve {

// The SamplingParams fields a range check can fail on (SamplingParams::FirstProblem).
enum class SamplingField {
  kTemperature,
  kTopK,
  kTopP,
  kMinP,
  kRepetitionPenalty,
  kPresencePenalty,
  kFrequencyPenalty,
  kLogprobs,
  kLogitBias,
};

// The field's name as a SamplingParams member ("top_p").
const char* SamplingFieldName(SamplingField field);

// A field out of its range: which, and the rule it breaks ("must be in (0, 1], got 1.5"),
// so that a caller can lead the message with its own name for the field.
struct SamplingProblem {
  SamplingField field;
  std::string what;
};

// Token selection for one request. Order of application on a step's logits:
//   0. logit_bias added to its ids' logits,
//   1. penalties (repetition over prompt + generated ids; presence and frequency over
//      generated ids only, as in vLLM / OpenAI),
//   2. temperature == 0 → greedy (argmax, lowest id on ties); otherwise divide by it,
//   3. top-k, then top-p (nucleus), then min-p truncation of the softmax,
//   4. draw from the renormalized distribution with the request's own generator.
// Logprobs report log-softmax of the raw model logits (before step 1), like vLLM's default.
struct SamplingParams {
  float temperature = 1.0f;         // >= 0; 0 = greedy
  int32_t top_k = 0;                // >= 0; 0 = all tokens
  float top_p = 1.0f;               // (0, 1]; 1 = off
  float min_p = 0.0f;               // [0, 1]; 0 = off; keep p >= min_p * p_max
  float repetition_penalty = 1.0f;  // > 0; 1 = off; CTRL-style: logit>0 ? l/r : l*r
  float presence_penalty = 0.0f;    // [-2, 2]; subtracted once per distinct generated id
  float frequency_penalty = 0.0f;   // [-2, 2]; subtracted per occurrence in generated ids
  std::optional<uint64_t> seed;     // unset: the engine draws one (and reports it)
  int32_t logprobs = 0;             // 0..20: top-n alternatives per token (0: only the chosen)
  bool want_logprobs = false;       // report the chosen token's logprob (and top-n)
  // (id, bias) added to the id's logit first; ids in [0, vocab) (checked by the caller, who
  // knows the vocabulary), biases in [-100, 100], at most kMaxLogitBias entries.
  std::vector<std::pair<int32_t, float>> logit_bias;

  static constexpr size_t kMaxLogitBias = 1024;

  // The first field out of range, or nullopt.
  std::optional<SamplingProblem> FirstProblem() const;
  // INVALID_ARGUMENT naming the first field out of range ("<member> <what>").
  absl::Status Validate() const;
  // True when the result is argmax of the penalized logits (no randomness).
  bool greedy() const { return temperature == 0.0f; }
};

// SamplingParams' defaults with a model's own (generation_config.json) where it has them.
SamplingParams DefaultSamplingParams(const GenerationDefaults& model_defaults);

// When generation ends (checked after each sampled token, in this order):
//   stop token: the id is EOS (unless ignore_eos) or in stop_token_ids → finished; the
//               stop id itself is not part of the output;
//   stop string: the detokenized output contains one of stop_strings → finished; the
//               text is cut before the match (the string is not returned);
//   length:     max_tokens generated.
struct StopConditions {
  int32_t max_tokens = 256;               // >= 1
  bool ignore_eos = false;                // EOS does not stop (still a stop id if listed)
  std::vector<int32_t> stop_token_ids;    // each in [0, vocab)
  std::vector<std::string> stop_strings;  // each non-empty, valid UTF-8; at most 16

  // INVALID_ARGUMENT naming the first bad field.
  absl::Status Validate(int32_t vocab_size) const;
};

}  // namespace llmserve
