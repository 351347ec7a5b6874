// request_convert: the one validation of a generation request (both protocols', through
// generation_input.h) and the service edge's translation of the engine's output into
// llmserve.v1 messages. Pure functions, no gRPC calls; every refusal of a field is
// INVALID_ARGUMENT whose message leads with the caller's name for the field and says what
// it must be ("top_p must be in (0, 1], got 1.5", "prompt must be non-empty"), carrying the
// field as its "param" (request_fields.h).
//
//   GenerationInput ──ToEngineRequest──▶ EngineRequest   (check fields, tokenize or render
//                                                          the chat template, defaults,
//                                                          compile the output constraint)
//   GenerationDelta ──ToChunk──────────▶ Chunk
//   GenerationFinal ──ToFinal──────────▶ Final            (+ FinalCallStatus: how the call ends)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "constraint/constraint_spec.h"
#include "llmserve/v1/llmserve.pb.h"
#include "model/chat/chat_prompt.h"
#include "model/tokenizer/tokenizer.h"
#include "server/generation_input.h"
#include "server/request_fields.h"
#include "scheduler/engine.h"
#include "scheduler/request_channel.h"
#include "scheduler/sequence.h"

namespace llmserve {

inline constexpr size_t kMaxRequestIdBytes = 128;   // GenerateRequest.request_id
inline constexpr size_t kMaxCacheSaltBytes = 256;   // GenerateRequest.cache_salt
inline constexpr float kMaxTemperature = 100.0f;    // GenerateRequest.temperature
inline constexpr int32_t kDefaultMaxTokens = 256;   // GenerateRequest.max_tokens when unset
inline constexpr size_t kMaxStopStrings = 16;       // GenerateRequest.stop entries
inline constexpr size_t kMaxStopStringBytes = 256;  // bytes per GenerateRequest.stop entry
inline constexpr int kMaxChatMessages = 1024;       // ChatInput.messages entries
// --max-prompt-bytes when unset: this many bytes of prompt text per token of context (the
// longest tokens of common vocabularies are runs of whitespace or code of up to ~32 bytes),
// and never less than kMinPromptBytes. A longer text could not fit the context anyway.
inline constexpr int64_t kDefaultPromptBytesPerToken = 32;
inline constexpr int64_t kMinPromptBytes = 4096;

// The prompt-text bound for a context of `max_context` tokens when --max-prompt-bytes is unset.
int64_t DefaultMaxPromptBytes(int32_t max_context);

// What a request is checked against (the engine's model and scheduler).
struct RequestLimits {
  int32_t vocab_size = 0;   // prompt and stop ids must be in [0, vocab_size)
  int32_t max_context = 0;  // prompt + max_tokens must be <= max_context
  SamplingParams sampling_defaults;  // what unset sampling fields take (the model's own defaults)
  const ChatPrompter* chat = nullptr;  // renders chat inputs; null: the model has no chat template
  // Bytes of text a request may carry before it is tokenized or rendered: GenerateRequest.text,
  // a chat input's roles, contents and tools_json together, TokenizeRequest.text (0 = no bound).
  int64_t max_prompt_bytes = 0;
  // Compiles request constraints (the engine's cache, Engine::constraints()); null: a
  // request with a constraint is refused (FAILED_PRECONDITION).
  constraint::ConstraintCache* constraints = nullptr;
};

// What compiling a request's constraint took (for metrics).
struct ConstraintCompileReport {
  bool attempted = false;  // the request had a constraint and it reached the cache
  constraint::ConstraintKind kind = constraint::ConstraintKind::kJson;
  bool cache_hit = false;
  absl::Duration time;     // the cache's Get: a lookup, or on a miss the compile (failed or not)
};

// A chat input's prompt: the rendered text and its ids.
struct RenderedChat {
  std::string text;
  std::vector<int32_t> ids;
};

// Checks a chat (messages non-empty, at most kMaxChatMessages, roles non-empty, roles,
// contents and tools valid UTF-8, at most limits.max_prompt_bytes of text), renders it with
// limits.chat and tokenizes the result; errors use `names`. FAILED_PRECONDITION when
// limits.chat is null; INVALID_ARGUMENT for bad fields, a template that raises or exceeds
// the renderer's caps, or a prompt with no tokens.
absl::StatusOr<RenderedChat> RenderChat(const ChatConversation& chat, const FieldNames& names,
                                        const RequestLimits& limits);

// Validates `input` (errors in input.names' words), tokenizes its text or renders its chat,
// applies the defaults. An unset max_tokens is 256 or, if less, what the context leaves
// after the prompt. An empty request_id becomes `fallback_id`. The deadline is left
// infinite (the caller sets it). Last, compiles input.constraint with limits.constraints
// (on the caller's thread): its errors lead with input.constraint_field; INVALID_ARGUMENT
// for what cannot be compiled, RESOURCE_EXHAUSTED (answered 400 over HTTP: the request's
// fault, not the server's load) for a compile bound, FAILED_PRECONDITION without a cache.
// `report` (may be null) says what the compile took.
absl::StatusOr<EngineRequest> ToEngineRequest(const GenerationInput& input, const Tokenizer& tokenizer,
                                              const RequestLimits& limits, std::string_view fallback_id,
                                              ConstraintCompileReport* report = nullptr);

// The code a refusal counts under in request_failure_total: what HTTP answers with 400
// (a constraint's compile bound, RESOURCE_EXHAUSTED over gRPC) is INVALID_ARGUMENT, so that
// resource_exhausted keeps meaning a full waiting queue.
absl::StatusCode RefusalCode(const absl::Status& status);

// The proto enum for a finished state (UNSPECIFIED for a state that is not finished).
llmserve::v1::FinishReason ToFinishReason(SequenceState state);

// Fills `out` with the delta's ids, text and logprobs (moved out of `delta`).
void ToChunk(GenerationDelta&& delta, llmserve::v1::Chunk* out);

// Fills `out` with the final event; `request_id` is the request's (given or generated).
void ToFinal(const GenerationFinal& final_event, const std::string& request_id, llmserve::v1::Final* out);

// How the call ends after the final message: OK when generation ended normally (EOS, stop,
// length, constraint completed); ERROR: the engine's status (INTERNAL with the reason); DEADLINE:
// DEADLINE_EXCEEDED; CANCELLED (the server shutting down): UNAVAILABLE.
absl::Status FinalCallStatus(const GenerationFinal& final_event);

// Tokenize's answer: ids and pieces (each id's bytes, invalid UTF-8 as U+FFFD). INVALID_ARGUMENT
// for text that is not valid UTF-8 or longer than max_text_bytes (0 = no bound), checked
// before tokenizing: the answer is several times the text's size.
absl::Status FillTokenize(const llmserve::v1::TokenizeRequest& request, const Tokenizer& tokenizer,
                          int64_t max_text_bytes, llmserve::v1::TokenizeResponse* out);

// Detokenize's answer. INVALID_ARGUMENT naming the first id outside [0, vocab).
absl::Status FillDetokenize(const llmserve::v1::DetokenizeRequest& request, const Tokenizer& tokenizer,
                        llmserve::v1::DetokenizeResponse* out);

}  // namespace llmserve
