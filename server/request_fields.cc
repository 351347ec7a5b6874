#include "server/request_fields.h"

#include <string>
#include <utility>

#include "server/http_status.h"

namespace llmserve {
namespace {

using F = RequestField;

// The names both protocols share (the sampling and stopping fields).
FieldNames CommonNames() {
  FieldNames n;
  n[F::kTemperature] = {"temperature", "temperature"};
  n[F::kTopK] = {"top_k", "top_k"};
  n[F::kTopP] = {"top_p", "top_p"};
  n[F::kMinP] = {"min_p", "min_p"};
  n[F::kRepetitionPenalty] = {"repetition_penalty", "repetition_penalty"};
  n[F::kPresencePenalty] = {"presence_penalty", "presence_penalty"};
  n[F::kFrequencyPenalty] = {"frequency_penalty", "frequency_penalty"};
  n[F::kLogprobs] = {"logprobs", "logprobs"};
  n[F::kLogitBias] = {"logit_bias", "logit_bias"};
  n[F::kMaxTokens] = {"max_tokens", "max_tokens"};
  n[F::kStop] = {"stop", "stop"};
  n[F::kStopTokenIds] = {"stop_token_ids", "stop_token_ids"};
  n[F::kCacheSalt] = {"cache_salt", "cache_salt"};
  n[F::kRenderedChat] = {"the rendered chat", "messages"};
  return n;
}

// OpenAI's names for both endpoints (each endpoint's prompt fields differ).
FieldNames OpenAiNames() {
  FieldNames n = CommonNames();
  // An HTTP request id comes from the X-Request-Id header.
  n[F::kRequestId] = {"X-Request-Id", "X-Request-Id"};
  n[F::kInput] = {"prompt", "prompt"};
  n[F::kText] = {"prompt", "prompt"};
  n[F::kTokenIds] = {"prompt", "prompt"};
  n[F::kMessages] = {"messages", "messages"};
  n[F::kTools] = {"tools", "tools"};
  n[F::kChatText] = {"messages (roles, contents and tools)", "messages"};
  n[F::kConstraint] = {"response_format", "response_format"};
  return n;
}

FieldNames ChatNames(bool sent_max_completion_tokens) {
  FieldNames n = OpenAiNames();
  n[F::kInput] = {"messages", "messages"};
  n[F::kLogprobs] = {"top_logprobs", "top_logprobs"};
  if (sent_max_completion_tokens) n[F::kMaxTokens] = {"max_completion_tokens", "max_completion_tokens"};
  return n;
}

}  // namespace

const FieldNames& GrpcFieldNames() {
  static const FieldNames names = [] {
    FieldNames n = CommonNames();
    n[F::kInput] = {"input", "input"};
    n[F::kText] = {"text", "text"};
    n[F::kTokenIds] = {"tokens.ids", "tokens.ids"};
    n[F::kMessages] = {"chat.messages", "chat.messages"};
    n[F::kTools] = {"chat.tools_json", "chat.tools_json"};
    n[F::kChatText] = {"chat (roles, contents and tools_json)", "chat"};
    n[F::kRenderedChat] = {"the rendered chat", "chat"};
    n[F::kRequestId] = {"request_id", "request_id"};
    n[F::kConstraint] = {"constraint", "constraint"};
    return n;
  }();
  return names;
}

const FieldNames& OpenAiCompletionsFieldNames() {
  static const FieldNames names = OpenAiNames();
  return names;
}

const FieldNames& OpenAiChatFieldNames(bool sent_max_completion_tokens) {
  static const FieldNames with = ChatNames(true);
  static const FieldNames without = ChatNames(false);
  return sent_max_completion_tokens ? with : without;
}

absl::Status FieldError(const FieldNames& names, RequestField field, std::string_view rest) {
  const FieldName& n = names[field];
  std::string message(n.name);
  message.append(rest);
  return WithParam(absl::InvalidArgumentError(message), n.param);
}

absl::Status BlameField(absl::Status status, const FieldNames& names, RequestField field) {
  return WithParam(std::move(status), names[field].param);
}

}  // namespace llmserve
