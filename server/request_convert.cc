#include "server/request_convert.h"

#include <algorithm>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "model/tokenizer/utf8.h"
#include "server/http_status.h"

namespace llmserve {
namespace {

using F = RequestField;

absl::Status Invalid(std::string message) { return absl::InvalidArgumentError(std::move(message)); }

// " must be at most <max_bytes> bytes (...), got <bytes>" when `bytes` exceeds max_bytes
// (0 = no bound), else "". Checked before any tokenizing or rendering, so that a huge text
// costs the server no more than reading it.
std::string TextBytesProblem(size_t bytes, int64_t max_bytes) {
  if (max_bytes <= 0 || bytes <= static_cast<uint64_t>(max_bytes)) return "";
  return absl::StrCat(" must be at most ", max_bytes, " bytes (the server's --max-prompt-bytes), got ", bytes);
}

// The neutral field SamplingParams' own check names.
RequestField FieldOf(SamplingField f) {
  switch (f) {
    case SamplingField::kTemperature: return F::kTemperature;
    case SamplingField::kTopK: return F::kTopK;
    case SamplingField::kTopP: return F::kTopP;
    case SamplingField::kMinP: return F::kMinP;
    case SamplingField::kRepetitionPenalty: return F::kRepetitionPenalty;
    case SamplingField::kPresencePenalty: return F::kPresencePenalty;
    case SamplingField::kFrequencyPenalty: return F::kFrequencyPenalty;
    case SamplingField::kLogprobs: return F::kLogprobs;
    case SamplingField::kLogitBias: break;
  }
  return F::kLogitBias;
}

// The sampling fields; unset ones keep what `out` holds (the defaults).
absl::Status ConvertSampling(const GenerationInput& in, int32_t vocab_size, SamplingParams* out) {
  const FieldNames& names = *in.names;
  if (in.temperature.has_value()) {
    const float t = *in.temperature;
    if (!(t >= 0.0f && t <= kMaxTemperature)) {  // also refuses NaN
      return FieldError(names, F::kTemperature,
                        absl::StrCat(" must be in [0, ", kMaxTemperature, "] (0 = greedy), got ", t));
    }
    out->temperature = t;
  }
  if (in.top_k.has_value()) out->top_k = *in.top_k;
  if (in.top_p.has_value()) out->top_p = *in.top_p;
  if (in.min_p.has_value()) out->min_p = *in.min_p;
  if (in.repetition_penalty.has_value()) out->repetition_penalty = *in.repetition_penalty;
  if (in.presence_penalty.has_value()) out->presence_penalty = *in.presence_penalty;
  if (in.frequency_penalty.has_value()) out->frequency_penalty = *in.frequency_penalty;
  if (in.seed.has_value()) out->seed = *in.seed;
  if (in.logprobs.has_value()) {
    out->want_logprobs = true;
    out->logprobs = *in.logprobs;
  }
  if (in.logit_bias.size() > SamplingParams::kMaxLogitBias) {
    return FieldError(names, F::kLogitBias, absl::StrCat(" must have at most ", SamplingParams::kMaxLogitBias,
                                                         " entries, got ", in.logit_bias.size()));
  }
  // Sorted by id (a map): the same request sums its biases the same way.
  for (const auto& [id, bias] : in.logit_bias) {
    if (id < 0 || id >= vocab_size) {
      return FieldError(names, F::kLogitBias, absl::StrCat(" must name token ids in [0, ", vocab_size, "), got ", id));
    }
    out->logit_bias.emplace_back(id, bias);
  }
  // The ranges are SamplingParams' own rules; the message leads with the caller's name.
  if (std::optional<SamplingProblem> p = out->FirstProblem()) {
    return FieldError(names, FieldOf(p->field), absl::StrCat(" ", p->what));
  }
  return absl::OkStatus();
}

// max_tokens (range only; the context check needs the prompt), stop, stop_token_ids.
absl::Status ConvertStop(const GenerationInput& in, int32_t vocab_size, StopConditions* out) {
  const FieldNames& names = *in.names;
  if (in.max_tokens.has_value() && *in.max_tokens < 1) {
    return FieldError(names, F::kMaxTokens, absl::StrCat(" must be >= 1, got ", *in.max_tokens));
  }
  if (in.stop.size() > kMaxStopStrings) {
    return FieldError(names, F::kStop,
                      absl::StrCat(" must have at most ", kMaxStopStrings, " strings, got ", in.stop.size()));
  }
  for (size_t i = 0; i < in.stop.size(); ++i) {
    const std::string& s = in.stop[i];
    if (s.empty()) return FieldError(names, F::kStop, absl::StrCat("[", i, "] must be non-empty"));
    if (s.size() > kMaxStopStringBytes) {
      return FieldError(names, F::kStop,
                        absl::StrCat("[", i, "] must be at most ", kMaxStopStringBytes, " bytes, got ", s.size()));
    }
    if (!utf8::IsValid(s)) return FieldError(names, F::kStop, absl::StrCat("[", i, "] must be valid UTF-8"));
    out->stop_strings.push_back(s);
  }
  for (size_t i = 0; i < in.stop_token_ids.size(); ++i) {
    const int32_t id = in.stop_token_ids[i];
    if (id < 0 || id >= vocab_size) {
      return FieldError(names, F::kStopTokenIds,
                        absl::StrCat("[", i, "] must be in [0, ", vocab_size, "), got ", id));
    }
    out->stop_token_ids.push_back(id);
  }
  out->ignore_eos = in.ignore_eos;
  return absl::OkStatus();
}

// An error naming `field` if any id is outside [0, vocab_size) (a tokenizer larger than the model).
absl::Status CheckPromptIds(const std::vector<int32_t>& ids, int32_t vocab_size, const FieldNames& names,
                            RequestField field) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size) {
      return FieldError(names, field,
                        absl::StrCat(" encodes to token ", ids[i], " (position ", i,
                                     "), outside the model's vocabulary (", vocab_size, ")"));
    }
  }
  return absl::OkStatus();
}

// The prompt ids: the token list as given, the text tokenized, or the conversation rendered.
absl::StatusOr<std::vector<int32_t>> ConvertInput(const GenerationInput& in, const Tokenizer& tokenizer,
                                                  const RequestLimits& limits) {
  const FieldNames& names = *in.names;
  const int32_t vocab_size = limits.vocab_size;
  switch (in.prompt) {
    case PromptKind::kTokens: {
      const std::vector<int32_t>& ids = in.token_ids;
      if (ids.empty()) return FieldError(names, F::kTokenIds, " must be non-empty");
      for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= vocab_size) {
          return FieldError(names, F::kTokenIds,
                            absl::StrCat("[", i, "] must be in [0, ", vocab_size, "), got ", ids[i]));
        }
      }
      return ids;
    }
    case PromptKind::kText: {
      const std::string& text = in.text;
      if (text.empty()) return FieldError(names, F::kText, " must be non-empty");
      if (std::string p = TextBytesProblem(text.size(), limits.max_prompt_bytes); !p.empty()) {
        return FieldError(names, F::kText, p);
      }
      if (!utf8::IsValid(text)) return FieldError(names, F::kText, " must be valid UTF-8");
      EncodeOptions opts;
      opts.add_bos = in.add_bos.value_or(tokenizer.add_bos_default());
      absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(text, opts);
      if (!ids.ok()) {
        return FieldError(names, F::kText, absl::StrCat(" could not be tokenized: ", ids.status().message()));
      }
      if (ids->empty()) return FieldError(names, F::kText, " encodes to no tokens");
      if (absl::Status s = CheckPromptIds(*ids, vocab_size, names, F::kText); !s.ok()) return s;
      return ids;
    }
    case PromptKind::kChat: {
      absl::StatusOr<RenderedChat> rendered = RenderChat(in.chat, names, limits);
      if (!rendered.ok()) return rendered.status();
      return std::move(rendered->ids);
    }
    case PromptKind::kNone:
      break;
  }
  return FieldError(names, F::kInput, " is required: set text, tokens or chat");
}

// The neutral field the prompt is (the context checks blame it).
RequestField PromptField(PromptKind kind) {
  switch (kind) {
    case PromptKind::kTokens: return F::kTokenIds;
    case PromptKind::kChat: return F::kMessages;
    case PromptKind::kText:
    case PromptKind::kNone:
      break;
  }
  return F::kText;
}

// Compiles in.constraint (if any) into out->constraint; errors lead with the caller's
// name for the field.
absl::Status CompileConstraint(const GenerationInput& in, const RequestLimits& limits, EngineRequest* out,
                               ConstraintCompileReport* report) {
  if (!in.constraint.has_value()) return absl::OkStatus();
  const FieldName& fallback = (*in.names)[F::kConstraint];
  const std::string name = in.constraint_field.empty() ? std::string(fallback.name) : in.constraint_field;
  const std::string param = in.constraint_field.empty() ? std::string(fallback.param) : in.constraint_field;
  if (limits.constraints == nullptr) {
    return WithParam(absl::FailedPreconditionError(
                         absl::StrCat(name, ": constraints need a tokenizer; this server's engine has none")),
                     param);
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<constraint::ConstraintCache::Result> got = limits.constraints->Get(*in.constraint);
  if (report != nullptr) {
    report->attempted = true;
    report->kind = in.constraint->kind;
    report->cache_hit = got.ok() && got->cache_hit;
    report->time = absl::Now() - start;
  }
  if (!got.ok()) {
    const absl::Status& s = got.status();
    const std::string message = absl::StrCat(name, ": ", absl::string_view(s.message().data(), s.message().size()));
    switch (s.code()) {
      case absl::StatusCode::kInvalidArgument:
        return WithParam(Invalid(message), param);
      case absl::StatusCode::kResourceExhausted:
        // A bound the request's constraint hit: its own fault (the same request fails
        // again), so HTTP says 400, not 429's "retry later".
        return WithParam(WithHttpStatus(absl::ResourceExhaustedError(message), 400), param);
      default:
        return WithParam(absl::Status(s.code(), message), param);
    }
  }
  out->constraint = std::move(got->constraint);
  return absl::OkStatus();
}

}  // namespace

absl::StatusCode RefusalCode(const absl::Status& status) {
  if (status.code() == absl::StatusCode::kResourceExhausted && HttpStatusCode(status) == 400) {
    return absl::StatusCode::kInvalidArgument;
  }
  return status.code();
}

absl::StatusOr<EngineRequest> ToEngineRequest(const GenerationInput& in, const Tokenizer& tokenizer,
                                              const RequestLimits& limits, std::string_view fallback_id,
                                              ConstraintCompileReport* report) {
  const FieldNames& names = *in.names;
  EngineRequest out;
  if (in.request_id.size() > kMaxRequestIdBytes) {
    return FieldError(names, F::kRequestId,
                      absl::StrCat(" must be at most ", kMaxRequestIdBytes, " bytes, got ", in.request_id.size()));
  }
  out.request_id = in.request_id.empty() ? std::string(fallback_id) : in.request_id;
  if (in.cache_salt.size() > kMaxCacheSaltBytes) {
    return FieldError(names, F::kCacheSalt,
                      absl::StrCat(" must be at most ", kMaxCacheSaltBytes, " bytes, got ", in.cache_salt.size()));
  }
  out.cache_salt = in.cache_salt;
  if (in.prompt == PromptKind::kNone) return FieldError(names, F::kInput, " is required: set text, tokens or chat");
  // Cheap checks before tokenizing.
  out.sampling = limits.sampling_defaults;
  if (absl::Status s = ConvertSampling(in, limits.vocab_size, &out.sampling); !s.ok()) return s;
  if (absl::Status s = ConvertStop(in, limits.vocab_size, &out.stop); !s.ok()) return s;
  absl::StatusOr<std::vector<int32_t>> prompt = ConvertInput(in, tokenizer, limits);
  if (!prompt.ok()) return prompt.status();
  out.prompt = *std::move(prompt);

  const int64_t n = static_cast<int64_t>(out.prompt.size());
  if (in.max_tokens.has_value()) {
    const int32_t max_tokens = *in.max_tokens;
    out.stop.max_tokens = max_tokens;
    if (n + max_tokens > limits.max_context) {
      // "max_tokens" as the caller spelled it: it is what to change.
      const FieldName& m = names[F::kMaxTokens];
      return WithParam(Invalid(absl::StrCat("prompt (", n, " tokens) + ",
                                            absl::string_view(m.name.data(), m.name.size()), " (", max_tokens, ") = ",
                                            n + max_tokens, " exceeds the context length (", limits.max_context, ")")),
                       m.param);
    }
  } else {
    if (n >= limits.max_context) {
      return BlameField(
          Invalid(absl::StrCat("prompt (", n, " tokens) leaves no room to generate in the context length (",
                               limits.max_context, ")")),
          names, PromptField(in.prompt));
    }
    out.stop.max_tokens = static_cast<int32_t>(std::min<int64_t>(kDefaultMaxTokens, limits.max_context - n));
  }
  // A backstop: the engine's own rules (same ranges as above).
  if (absl::Status s = out.stop.Validate(limits.vocab_size); !s.ok()) return s;
  // Last: compiling a constraint is the costliest check (a cache hit is a lookup).
  if (absl::Status s = CompileConstraint(in, limits, &out, report); !s.ok()) return s;
  return out;
}

int64_t DefaultMaxPromptBytes(int32_t max_context) {
  return std::max(kMinPromptBytes, kDefaultPromptBytesPerToken * std::max<int64_t>(max_context, 0));
}

absl::StatusOr<RenderedChat> RenderChat(const ChatConversation& c, const FieldNames& names,
                                        const RequestLimits& limits) {
  const ChatPrompter* chat = limits.chat;
  if (chat == nullptr) {
    return absl::FailedPreconditionError(
        "the model has no chat template: give the server one with --chat-template FILE, or send text");
  }
  if (c.messages.empty()) return FieldError(names, F::kMessages, " must be non-empty");
  if (c.messages.size() > static_cast<size_t>(kMaxChatMessages)) {
    return FieldError(names, F::kMessages,
                      absl::StrCat(" must have at most ", kMaxChatMessages, " entries, got ", c.messages.size()));
  }
  if (!utf8::IsValid(c.tools_json)) return FieldError(names, F::kTools, " must be valid UTF-8");
  size_t text_bytes = c.tools_json.size();
  for (const ChatTurn& m : c.messages) text_bytes += m.role.size() + m.content.size();
  if (std::string p = TextBytesProblem(text_bytes, limits.max_prompt_bytes); !p.empty()) {
    return FieldError(names, F::kChatText, p);
  }
  for (size_t i = 0; i < c.messages.size(); ++i) {
    const ChatTurn& m = c.messages[i];
    if (m.role.empty()) return FieldError(names, F::kMessages, absl::StrCat("[", i, "].role must be non-empty"));
    if (!utf8::IsValid(m.role)) {
      return FieldError(names, F::kMessages, absl::StrCat("[", i, "].role must be valid UTF-8"));
    }
    if (!utf8::IsValid(m.content)) {
      return FieldError(names, F::kMessages, absl::StrCat("[", i, "].content must be valid UTF-8"));
    }
  }
  RenderedChat out;
  absl::StatusOr<std::string> text = chat->Render(c);
  if (!text.ok()) {
    // A template that raises, or one this conversation drives over the renderer's caps
    // (RESOURCE_EXHAUSTED), is the request's fault: the same request would fail again.
    absl::Status s = text.status();
    if (s.code() == absl::StatusCode::kResourceExhausted) s = Invalid(std::string(s.message()));
    return BlameField(std::move(s), names, F::kRenderedChat);
  }
  out.text = *std::move(text);
  absl::StatusOr<std::vector<int32_t>> ids = chat->Encode(out.text);
  if (!ids.ok()) {
    return FieldError(names, F::kRenderedChat, absl::StrCat(" could not be tokenized: ", ids.status().message()));
  }
  if (ids->empty()) return FieldError(names, F::kRenderedChat, " encodes to no tokens");
  if (absl::Status s = CheckPromptIds(*ids, limits.vocab_size, names, F::kRenderedChat); !s.ok()) return s;
  out.ids = *std::move(ids);
  return out;
}

v1::FinishReason ToFinishReason(SequenceState state) {
  switch (state) {
    case SequenceState::kFinishedEos: return v1::FINISH_REASON_EOS;
    case SequenceState::kFinishedStopToken: return v1::FINISH_REASON_STOP_TOKEN;
    case SequenceState::kFinishedStopString: return v1::FINISH_REASON_STOP_SEQUENCE;
    case SequenceState::kFinishedLength: return v1::FINISH_REASON_LENGTH;
    case SequenceState::kFinishedCancelled: return v1::FINISH_REASON_CANCELLED;
    case SequenceState::kFinishedDeadline: return v1::FINISH_REASON_DEADLINE;
    case SequenceState::kFinishedError: return v1::FINISH_REASON_ERROR;
    case SequenceState::kFinishedConstraint: return v1::FINISH_REASON_CONSTRAINT;
    case SequenceState::kWaiting:
    case SequenceState::kRunning:
    case SequenceState::kPreempted:
      break;
  }
  return v1::FINISH_REASON_UNSPECIFIED;
}

void ToChunk(GenerationDelta&& delta, v1::Chunk* out) {
  out->mutable_ids()->Add(delta.ids.begin(), delta.ids.end());
  out->set_text(std::move(delta.text));
  for (const TokenLogprobs& lp : delta.logprobs) {
    v1::TokenLogprob* t = out->add_logprobs();
    t->set_id(lp.id);
    t->set_logprob(lp.logprob);
    for (const auto& [id, logprob] : lp.top) {
      v1::TopLogprob* top = t->add_top();
      top->set_id(id);
      top->set_logprob(logprob);
    }
  }
}

void ToFinal(const GenerationFinal& f, const std::string& request_id, v1::Final* out) {
  out->set_finish_reason(ToFinishReason(f.reason));
  if (f.reason == SequenceState::kFinishedStopString) out->set_stop_sequence(f.stop_string);
  out->mutable_usage()->set_prompt_tokens(f.prompt_tokens);
  out->mutable_usage()->set_completion_tokens(f.completion_tokens);
  out->mutable_usage()->set_cached_tokens(f.cached_tokens);
  out->mutable_timings()->set_queue_seconds(absl::ToDoubleSeconds(f.queue_time));
  out->mutable_timings()->set_time_to_first_token_seconds(absl::ToDoubleSeconds(f.time_to_first_token));
  out->mutable_timings()->set_total_seconds(absl::ToDoubleSeconds(f.total_time));
  out->set_seed(f.seed);
  out->set_request_id(request_id);
  out->set_preemptions(f.preemptions);
  if (f.reason == SequenceState::kFinishedError) {
    std::string error(f.status.message());
    if (error.empty()) error = "generation failed";
    std::string clean;
    utf8::AppendReplacingInvalid(error, &clean);  // a proto3 string must be UTF-8
    out->set_error(std::move(clean));
  }
}

absl::Status FinalCallStatus(const GenerationFinal& f) {
  switch (f.reason) {
    case SequenceState::kFinishedError:
      return f.status.ok() ? absl::InternalError("generation failed") : f.status;
    case SequenceState::kFinishedDeadline:
      return absl::DeadlineExceededError("the call's deadline passed during generation");
    case SequenceState::kFinishedCancelled:  // only the server cancels a live call (Engine::Stop)
      return absl::UnavailableError("generation was cancelled: the server is shutting down");
    default:
      return absl::OkStatus();
  }
}

absl::Status FillTokenize(const v1::TokenizeRequest& request, const Tokenizer& tokenizer, int64_t max_text_bytes,
                          v1::TokenizeResponse* out) {
  if (std::string p = TextBytesProblem(request.text().size(), max_text_bytes); !p.empty()) {
    return Invalid(absl::StrCat("text", p));
  }
  if (!utf8::IsValid(request.text())) return Invalid("text must be valid UTF-8");
  EncodeOptions opts;
  opts.add_bos = request.has_add_bos() ? request.add_bos() : tokenizer.add_bos_default();
  absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(request.text(), opts);
  if (!ids.ok()) return Invalid(absl::StrCat("text could not be tokenized: ", ids.status().message()));
  out->mutable_ids()->Add(ids->begin(), ids->end());
  for (int32_t id : *ids) {
    std::string piece;
    utf8::AppendReplacingInvalid(tokenizer.TokenBytes(id), &piece);
    out->add_pieces(std::move(piece));
  }
  return absl::OkStatus();
}

absl::Status FillDetokenize(const v1::DetokenizeRequest& request, const Tokenizer& tokenizer,
                        v1::DetokenizeResponse* out) {
  const int32_t vocab = tokenizer.vocab_size();
  for (int i = 0; i < request.ids_size(); ++i) {
    const int32_t id = request.ids(i);
    if (id < 0 || id >= vocab) {
      return Invalid(absl::StrCat("ids[", i, "] must be in [0, ", vocab, "), got ", id));
    }
  }
  DecodeOptions opts;
  opts.skip_special = request.skip_special();
  const std::span<const int32_t> ids(request.ids().data(), static_cast<size_t>(request.ids_size()));
  out->set_text(tokenizer.Decode(ids, opts));
  return absl::OkStatus();
}

}  // namespace llmserve
