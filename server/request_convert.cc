#include "server/request_convert.h"

#include <algorithm>
#include <span>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/tokenizer/utf8.h"

namespace llmserve {
namespace {

absl::Status Invalid(std::string message) { return absl::InvalidArgumentError(std::move(message)); }

// `field` holds `bytes` bytes of text; more than `max_bytes` (0 = no bound) is refused before
// any tokenizing or rendering, so that a huge text costs the server no more than reading it.
absl::Status CheckTextBytes(std::string_view field, size_t bytes, int64_t max_bytes) {
  if (max_bytes <= 0 || bytes <= static_cast<uint64_t>(max_bytes)) return absl::OkStatus();
  return Invalid(absl::StrCat(absl::string_view(field.data(), field.size()), " must be at most ", max_bytes,
                              " bytes (the server's --max-prompt-bytes), got ", bytes));
}

// The sampling fields; unset ones keep what `out` holds (the defaults).
absl::Status ConvertSampling(const v1::GenerateRequest& r, int32_t vocab_size, SamplingParams* out) {
  if (r.has_temperature()) {
    const float t = r.temperature();
    if (!(t >= 0.0f && t <= kMaxTemperature)) {  // also refuses NaN
      return Invalid(absl::StrCat("temperature must be in [0, ", kMaxTemperature, "] (0 = greedy), got ", t));
    }
    out->temperature = t;
  }
  if (r.has_top_k()) out->top_k = r.top_k();
  if (r.has_top_p()) out->top_p = r.top_p();
  if (r.has_min_p()) out->min_p = r.min_p();
  if (r.has_repetition_penalty()) out->repetition_penalty = r.repetition_penalty();
  if (r.has_presence_penalty()) out->presence_penalty = r.presence_penalty();
  if (r.has_frequency_penalty()) out->frequency_penalty = r.frequency_penalty();
  if (r.has_seed()) out->seed = r.seed();
  if (r.has_logprobs()) {
    out->want_logprobs = true;
    out->logprobs = r.logprobs();
  }
  if (static_cast<size_t>(r.logit_bias_size()) > SamplingParams::kMaxLogitBias) {
    return Invalid(absl::StrCat("logit_bias must have at most ", SamplingParams::kMaxLogitBias, " entries, got ",
                                r.logit_bias_size()));
  }
  for (const auto& [id, bias] : r.logit_bias()) {
    if (id < 0 || id >= vocab_size) {
      return Invalid(absl::StrCat("logit_bias must name token ids in [0, ", vocab_size, "), got ", id));
    }
    out->logit_bias.emplace_back(id, bias);
  }
  // A proto map has no order: sort, so the same request sums its biases the same way.
  std::sort(out->logit_bias.begin(), out->logit_bias.end());
  return out->Validate();  // names the proto's field for each range
}

// max_tokens (range only; the context check needs the prompt), stop, stop_token_ids.
absl::Status ConvertStop(const v1::GenerateRequest& r, int32_t vocab_size, StopConditions* out) {
  if (r.has_max_tokens() && r.max_tokens() < 1) {
    return Invalid(absl::StrCat("max_tokens must be >= 1, got ", r.max_tokens()));
  }
  if (static_cast<size_t>(r.stop_size()) > kMaxStopStrings) {
    return Invalid(absl::StrCat("stop must have at most ", kMaxStopStrings, " strings, got ", r.stop_size()));
  }
  for (int i = 0; i < r.stop_size(); ++i) {
    const std::string& s = r.stop(i);
    if (s.empty()) return Invalid(absl::StrCat("stop[", i, "] must be non-empty"));
    if (s.size() > kMaxStopStringBytes) {
      return Invalid(absl::StrCat("stop[", i, "] must be at most ", kMaxStopStringBytes, " bytes, got ", s.size()));
    }
    if (!utf8::IsValid(s)) return Invalid(absl::StrCat("stop[", i, "] must be valid UTF-8"));
    out->stop_strings.push_back(s);
  }
  for (int i = 0; i < r.stop_token_ids_size(); ++i) {
    const int32_t id = r.stop_token_ids(i);
    if (id < 0 || id >= vocab_size) {
      return Invalid(absl::StrCat("stop_token_ids[", i, "] must be in [0, ", vocab_size, "), got ", id));
    }
    out->stop_token_ids.push_back(id);
  }
  out->ignore_eos = r.ignore_eos();
  return absl::OkStatus();
}

// An error if any id is outside [0, vocab_size) (a tokenizer larger than the model).
absl::Status CheckPromptIds(const std::vector<int32_t>& ids, int32_t vocab_size, const char* what) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size) {
      return Invalid(absl::StrCat(what, " encodes to token ", ids[i], " (position ", i,
                                  "), outside the model's vocabulary (", vocab_size, ")"));
    }
  }
  return absl::OkStatus();
}

// The prompt ids: the token list as given, the text tokenized, or the conversation rendered.
absl::StatusOr<std::vector<int32_t>> ConvertInput(const v1::GenerateRequest& r, const Tokenizer& tokenizer,
                                                  const RequestLimits& limits) {
  const int32_t vocab_size = limits.vocab_size;
  switch (r.input_case()) {
    case v1::GenerateRequest::kTokens: {
      const auto& ids = r.tokens().ids();
      if (ids.empty()) return Invalid("tokens.ids must be non-empty");
      for (int i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= vocab_size) {
          return Invalid(absl::StrCat("tokens.ids[", i, "] must be in [0, ", vocab_size, "), got ", ids[i]));
        }
      }
      return std::vector<int32_t>(ids.begin(), ids.end());
    }
    case v1::GenerateRequest::kText: {
      const std::string& text = r.text();
      if (text.empty()) return Invalid("text must be non-empty");
      if (absl::Status s = CheckTextBytes("text", text.size(), limits.max_prompt_bytes); !s.ok()) return s;
      if (!utf8::IsValid(text)) return Invalid("text must be valid UTF-8");
      EncodeOptions opts;
      opts.add_bos = r.has_add_bos() ? r.add_bos() : tokenizer.add_bos_default();
      absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(text, opts);
      if (!ids.ok()) return Invalid(absl::StrCat("text could not be tokenized: ", ids.status().message()));
      if (ids->empty()) return Invalid("text encodes to no tokens");
      if (absl::Status s = CheckPromptIds(*ids, vocab_size, "text"); !s.ok()) return s;
      return ids;
    }
    case v1::GenerateRequest::kChat: {
      absl::StatusOr<RenderedChat> rendered = RenderChat(r.chat(), limits);
      if (!rendered.ok()) return rendered.status();
      return std::move(rendered->ids);
    }
    case v1::GenerateRequest::INPUT_NOT_SET:
      break;
  }
  return Invalid("input is required: set text, tokens or chat");
}

}  // namespace

absl::StatusOr<EngineRequest> ToEngineRequest(const v1::GenerateRequest& request, const Tokenizer& tokenizer,
                                              const RequestLimits& limits, std::string_view fallback_id) {
  EngineRequest out;
  if (request.request_id().size() > kMaxRequestIdBytes) {
    return Invalid(absl::StrCat("request_id must be at most ", kMaxRequestIdBytes, " bytes, got ",
                                request.request_id().size()));
  }
  out.request_id = request.request_id().empty() ? std::string(fallback_id) : request.request_id();
  if (request.cache_salt().size() > kMaxCacheSaltBytes) {
    return Invalid(absl::StrCat("cache_salt must be at most ", kMaxCacheSaltBytes, " bytes, got ",
                                request.cache_salt().size()));
  }
  out.cache_salt = request.cache_salt();
  if (request.input_case() == v1::GenerateRequest::INPUT_NOT_SET) {
    return Invalid("input is required: set text, tokens or chat");
  }
  // Cheap checks before tokenizing.
  out.sampling = limits.sampling_defaults;
  if (absl::Status s = ConvertSampling(request, limits.vocab_size, &out.sampling); !s.ok()) return s;
  if (absl::Status s = ConvertStop(request, limits.vocab_size, &out.stop); !s.ok()) return s;
  absl::StatusOr<std::vector<int32_t>> prompt = ConvertInput(request, tokenizer, limits);
  if (!prompt.ok()) return prompt.status();
  out.prompt = *std::move(prompt);

  const int64_t n = static_cast<int64_t>(out.prompt.size());
  if (request.has_max_tokens()) {
    out.stop.max_tokens = request.max_tokens();
    if (n + request.max_tokens() > limits.max_context) {
      return Invalid(absl::StrCat("prompt (", n, " tokens) + max_tokens (", request.max_tokens(), ") = ",
                                  n + request.max_tokens(), " exceeds the context length (", limits.max_context,
                                  ")"));
    }
  } else {
    if (n >= limits.max_context) {
      return Invalid(absl::StrCat("prompt (", n, " tokens) leaves no room to generate in the context length (",
                                  limits.max_context, ")"));
    }
    out.stop.max_tokens = static_cast<int32_t>(std::min<int64_t>(kDefaultMaxTokens, limits.max_context - n));
  }
  // A backstop: the engine's own rules (same ranges as above).
  if (absl::Status s = out.stop.Validate(limits.vocab_size); !s.ok()) return s;
  return out;
}

int64_t DefaultMaxPromptBytes(int32_t max_context) {
  return std::max(kMinPromptBytes, kDefaultPromptBytesPerToken * std::max<int64_t>(max_context, 0));
}

absl::StatusOr<RenderedChat> RenderChat(const v1::ChatInput& input, const RequestLimits& limits) {
  const ChatPrompter* chat = limits.chat;
  if (chat == nullptr) {
    return absl::FailedPreconditionError(
        "the model has no chat template: give the server one with --chat-template FILE, or send text");
  }
  if (input.messages().empty()) return Invalid("chat.messages must be non-empty");
  if (input.messages_size() > kMaxChatMessages) {
    return Invalid(absl::StrCat("chat.messages must have at most ", kMaxChatMessages, " entries, got ",
                                input.messages_size()));
  }
  ChatConversation c;
  c.add_generation_prompt = !input.has_add_generation_prompt() || input.add_generation_prompt();
  c.tools_json = input.tools_json();
  if (!utf8::IsValid(c.tools_json)) return Invalid("chat.tools_json must be valid UTF-8");
  size_t text_bytes = c.tools_json.size();
  for (const v1::ChatMessage& m : input.messages()) text_bytes += m.role().size() + m.content().size();
  if (absl::Status s = CheckTextBytes("chat (roles, contents and tools_json)", text_bytes, limits.max_prompt_bytes);
      !s.ok()) {
    return s;
  }
  for (int i = 0; i < input.messages_size(); ++i) {
    const v1::ChatMessage& m = input.messages(i);
    if (m.role().empty()) return Invalid(absl::StrCat("chat.messages[", i, "].role must be non-empty"));
    if (!utf8::IsValid(m.role()) || !utf8::IsValid(m.content())) {
      return Invalid(absl::StrCat("chat.messages[", i, "] must be valid UTF-8"));
    }
    c.messages.push_back({m.role(), m.content()});
  }
  RenderedChat out;
  absl::StatusOr<std::string> text = chat->Render(c);
  if (!text.ok()) return text.status();
  out.text = *std::move(text);
  absl::StatusOr<std::vector<int32_t>> ids = chat->Encode(out.text);
  if (!ids.ok()) return Invalid(absl::StrCat("the rendered chat could not be tokenized: ", ids.status().message()));
  if (ids->empty()) return Invalid("the rendered chat encodes to no tokens");
  if (absl::Status s = CheckPromptIds(*ids, limits.vocab_size, "the rendered chat"); !s.ok()) return s;
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
  if (absl::Status s = CheckTextBytes("text", request.text().size(), max_text_bytes); !s.ok()) return s;
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
