// generation_input: a generation request in neither protocol's terms — what the engine
// needs, unchecked, plus the names the caller used for its fields (request_fields.h) so
// that the one validation (request_convert.h's ToEngineRequest) speaks the caller's words.
//
//   v1::GenerateRequest ──FromGenerateRequest──┐
//                                              ├─▶ GenerationInput ──ToEngineRequest──▶ EngineRequest
//   OpenAI JSON ─────────ParseOpenAiRequest────┘
//
// Builders only map (and check JSON types); every value's range is ToEngineRequest's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "constraint/constraint_spec.h"
#include "llmserve/v1/llmserve.pb.h"
#include "model/chat/chat_prompt.h"
#include "server/request_fields.h"

namespace llmserve {

// Which prompt a request carries.
enum class PromptKind {
  kNone,    // none: refused
  kText,    // `text`, tokenized
  kTokens,  // `token_ids` as given
  kChat,    // `chat`, rendered with the model's template, then tokenized
};

struct GenerationInput {
  PromptKind prompt = PromptKind::kNone;
  std::string text;                // kText
  std::vector<int32_t> token_ids;  // kTokens
  ChatConversation chat;           // kChat (messages, tools_json, add_generation_prompt)
  std::optional<bool> add_bos;     // kText; unset: the tokenizer's default

  // Sampling; unset fields take the model's defaults (RequestLimits::sampling_defaults).
  std::optional<float> temperature;
  std::optional<int32_t> top_k;
  std::optional<float> top_p;
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;
  std::optional<float> presence_penalty;
  std::optional<float> frequency_penalty;
  std::optional<uint64_t> seed;
  std::optional<int32_t> logprobs;        // set: report logprobs with this many alternatives
  std::map<int32_t, float> logit_bias;    // token id → bias

  // Stopping.
  std::optional<int32_t> max_tokens;      // unset: 256 or what the context leaves
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;

  std::string request_id;  // "" : the server names it
  std::string cache_salt;

  // Structured output: what the generated text must match (unset: unconstrained), compiled
  // by ToEngineRequest. `constraint_field` is the caller's name for the field that carried
  // it ("constraint.json_schema", "response_format.json_schema.schema", "guided_regex"):
  // compile errors lead with it and name it as "param" ("": names[kConstraint]).
  std::optional<constraint::ConstraintSpec> constraint;
  std::string constraint_field;

  // The caller's names for the fields above (static tables; never null).
  const FieldNames* names = &GrpcFieldNames();
};

// The chat a v1::ChatInput carries (add_generation_prompt unset is true).
ChatConversation ChatFromProto(const llmserve::v1::ChatInput& chat);

// `request` as a GenerationInput with the gRPC names. Pure mapping: nothing is checked.
GenerationInput FromGenerateRequest(const llmserve::v1::GenerateRequest& request);

}  // namespace llmserve
