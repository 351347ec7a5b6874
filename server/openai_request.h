// openai_request: an OpenAI Completions or Chat Completions request body (JSON) as a
// GenerationInput (generation_input.h, what a gRPC GenerateRequest also becomes) with
// OpenAI's field names, plus what only the HTTP response needs (streaming, usage chunk,
// logprobs format). Pure functions: the fields' JSON types and OpenAI-only rules are
// checked here (INVALID_ARGUMENT naming the JSON field); the values' ranges, tokenizing and
// chat rendering are request_convert.h's ToEngineRequest, shared with gRPC, which names
// the OpenAI fields through input.names.
//
//   body ──ParseOpenAiRequest──▶ OpenAiRequest{input, stream, ...} ──ToEngineRequest──▶ engine
//
// Fields (null is the same as absent; unknown fields are ignored, as OpenAI does):
//   both:        model, stream, stream_options.include_usage, max_tokens, temperature, top_p,
//                top_k (-1 = off, as vLLM), min_p, presence_penalty, frequency_penalty,
//                repetition_penalty, seed, stop (string or list), logit_bias, n (1 only), user,
//                cache_salt, ignore_eos, stop_token_ids, return_token_ids (vLLM's: the ids
//                generated, in each choice or chunk); structured outputs: response_format,
//                structured_outputs, guided_json/_regex/_choice/_grammar, json_schema,
//                grammar (server/openai_constraint.h)
//   completions: prompt (a string, token ids, or a list of one of those), logprobs (0..20),
//                echo (false only), best_of (1 only), suffix (empty only)
//   chat:        messages (role + content: a string, text parts, or null), max_completion_tokens
//                (over max_tokens), logprobs (bool), top_logprobs (0..20, needs logprobs),
//                tools (to the template), add_generation_prompt
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "server/generation_input.h"

namespace llmserve {

enum class OpenAiEndpoint {
  kCompletions,      // POST /v1/completions
  kChatCompletions,  // POST /v1/chat/completions
};

struct OpenAiRequest {
  OpenAiEndpoint endpoint = OpenAiEndpoint::kCompletions;
  GenerationInput input;                   // what the engine is asked (request_id left empty)
  std::string model;                       // as given; "" when absent
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with the usage
  bool logprobs = false;       // return logprobs (input.logprobs holds the top-n count)
  bool return_token_ids = false;  // vLLM's extension: each choice also carries "token_ids"
};

// INVALID_ARGUMENT naming the field for a body that is not a JSON object, a field of the
// wrong type, or a feature llmserve does not offer (n > 1, echo, best_of > 1, suffix,
// several prompts, an unknown response_format type, two constraints).
absl::StatusOr<OpenAiRequest> ParseOpenAiRequest(OpenAiEndpoint endpoint, std::string_view body);

}  // namespace llmserve
