// request_fields: the fields of a generation request that a check can refuse, named
// neutrally, and the names each protocol's callers know them by. The one validation
// (request_convert.h) leads every error message with the caller's own name for the field
// and attaches the field as the status's "param" payload (http_status.h's WithParam), so
// neither protocol translates the other's messages:
//
//   RequestField::kText  ──GrpcFieldNames()──────────────▶ "text must be non-empty"
//                        ──OpenAiCompletionsFieldNames()──▶ "prompt must be non-empty" (param prompt)
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "absl/status/status.h"

namespace llmserve {

// Every field a check refuses (a check naming a field not listed here is a bug).
enum class RequestField {
  kInput,              // no prompt of any kind
  kText,               // a text prompt
  kTokenIds,           // a prompt of token ids
  kMessages,           // a chat's messages
  kTools,              // a chat's tool definitions (JSON)
  kChatText,           // a chat's roles, contents and tools together (the byte bound)
  kRenderedChat,       // the chat as the template rendered it (template errors, tokenizing)
  kTemperature,
  kTopK,
  kTopP,
  kMinP,
  kRepetitionPenalty,
  kPresencePenalty,
  kFrequencyPenalty,
  kLogprobs,           // the number of alternatives per token
  kLogitBias,
  kMaxTokens,
  kStop,
  kStopTokenIds,
  kRequestId,
  kCacheSalt,
  kConstraint,         // the output constraint (GenerationInput::constraint_field names the
                       // exact field the caller used; this entry is the fallback)
};
inline constexpr size_t kNumRequestFields = static_cast<size_t>(RequestField::kConstraint) + 1;

// How a caller names one field.
struct FieldName {
  std::string_view name;   // leads the error message: "chat.messages", "prompt"
  std::string_view param;  // the field alone, for OpenAI's error "param": "messages"
};

// A caller's names, indexed by RequestField. Every entry points at static strings.
class FieldNames {
 public:
  const FieldName& operator[](RequestField f) const { return names_[static_cast<size_t>(f)]; }
  FieldName& operator[](RequestField f) { return names_[static_cast<size_t>(f)]; }

 private:
  std::array<FieldName, kNumRequestFields> names_{};
};

// llmserve.v1.GenerateRequest's names ("text", "tokens.ids", "chat.messages", ...).
const FieldNames& GrpcFieldNames();
// OpenAI Completions' names ("prompt" for a text or token prompt).
const FieldNames& OpenAiCompletionsFieldNames();
// OpenAI Chat Completions' names ("messages", "tools", "top_logprobs"); max_tokens is
// "max_completion_tokens" when the client sent that field, else "max_tokens".
const FieldNames& OpenAiChatFieldNames(bool sent_max_completion_tokens);

// INVALID_ARGUMENT "<caller's name><rest>" (rest: " must be non-empty", "[3] must be ...")
// carrying the caller's param for the field.
absl::Status FieldError(const FieldNames& names, RequestField field, std::string_view rest);

// `status` (its message as is) blamed on `field`: carries the caller's param.
absl::Status BlameField(absl::Status status, const FieldNames& names, RequestField field);

}  // namespace llmserve
