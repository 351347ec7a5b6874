// openai_response: the JSON bodies of the OpenAI-compatible API, built from the engine's
// events (server/request_convert.h does the same for gRPC's messages). Pure functions.
//
//   non-streaming:  CompletionBody(all deltas merged, final)
//                   {"id", "object": "text_completion" | "chat.completion", "created", "model",
//                    "choices": [{"index": 0, "text" | "message", "logprobs", "finish_reason"}],
//                    "usage": {prompt_tokens, completion_tokens, total_tokens,
//                              prompt_tokens_details: {cached_tokens}}}
//   streaming:      ChunkBody(delta) per delta (chat: a first one with the role), then
//                   FinishChunkBody(final), then UsageChunkBody(final) with include_usage;
//                   the server sends each as "data: <json>\n\n", then "data: [DONE]\n\n".
//
// finish_reason: "stop" (EOS, a stop string or stop token; "stop_reason" names the string),
// "length". Logprobs: completions in the legacy form (tokens, token_logprobs, top_logprobs,
// text_offset), chat in the current one (content: [{token, logprob, bytes, top_logprobs}]).
#pragma once

#include <cstdint>
#include <string>

#include "model/tokenizer/tokenizer.h"
#include "nlohmann/json.hpp"
#include "scheduler/request_channel.h"
#include "server/openai_request.h"

namespace llmserve {

// What every body of one request repeats.
struct OpenAiResponseContext {
  OpenAiEndpoint endpoint = OpenAiEndpoint::kCompletions;
  std::string id;       // "cmpl-<request id>" / "chatcmpl-<request id>"
  int64_t created = 0;  // Unix seconds at arrival
  std::string model;    // the served model's name
  bool logprobs = false;
  bool include_usage = false;  // streaming: every chunk carries "usage": null, the last one the usage
  bool token_ids = false;      // each choice carries "token_ids" (return_token_ids)
  const Tokenizer* tokenizer = nullptr;  // token strings and bytes for logprobs
};

// JSON text, with any invalid UTF-8 replaced (nlohmann would throw on it).
std::string DumpJson(const nlohmann::json& j);

// The non-streaming body: `all` is every delta merged.
nlohmann::json CompletionBody(const OpenAiResponseContext& ctx, const GenerationDelta& all,
                              const GenerationFinal& final_event);

// One streamed chunk for `delta`; `first` (chat) adds the assistant role. `text_offset`:
// the bytes of text streamed before (completions' logprobs), advanced past the delta.
nlohmann::json ChunkBody(const OpenAiResponseContext& ctx, const GenerationDelta& delta, bool first,
                         size_t* text_offset);
// The streamed chunk that carries the finish reason.
nlohmann::json FinishChunkBody(const OpenAiResponseContext& ctx, const GenerationFinal& final_event);
// The last streamed chunk with include_usage: no choices, the usage.
nlohmann::json UsageChunkBody(const OpenAiResponseContext& ctx, const GenerationFinal& final_event);

// "stop", "length", or null for a final that is not a normal end.
nlohmann::json FinishReasonJson(SequenceState reason);
// The usage object.
nlohmann::json UsageJson(const GenerationFinal& final_event);

}  // namespace llmserve
