// Where llmbench sends its requests: llmserve over gRPC, any OpenAI-compatible server over
// HTTP (llmserve's HTTP API, llama.cpp's llama-server, vLLM: /v1/completions), or llama.cpp's
// own /completion endpoint. All take the same GenerateRequests and report the same
// RequestResults, so the statistics and the report are the same code for every server.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "bench/llmbench/options.h"
#include "bench/llmbench/stream_client.h"
#include "llmserve/v1/llmserve.grpc.pb.h"

namespace llmbench {

class Backend {
 public:
  virtual ~Backend() = default;
  // Starts request `index`; the sink gets its result when it ends (from any thread).
  // `request` outlives the call.
  virtual void Start(int index, const llmserve::v1::GenerateRequest& request, Clock::time_point epoch,
                     CallSink* sink) = 0;
  // The server's own figures, when it has them (llmserve's GetServerInfo); false if not.
  virtual bool PollServer(llmserve::v1::ServerInfo* info) = 0;
  // The model, when the server describes it (llmserve's GetModelInfo); nullopt and *error
  // otherwise.
  virtual std::optional<llmserve::v1::ModelInfo> ModelInfo(std::string* error) = 0;
};

// llmserve.v1.LlmService/Generate over `options.channels` gRPC channels.
std::unique_ptr<Backend> MakeGrpcBackend(const BenchOptions& options, llmserve::client::Connection connection);

// An OpenAI-compatible server: POST /v1/completions with "stream": true,
// stream_options.include_usage, "return_token_ids": true (the ids each chunk carries; else
// llama-server's "__verbose".tokens, asked with "verbose": true when --turns > 1; else one
// token per chunk), the prompt as token ids, max_tokens, ignore_eos, the sampling
// fields, cache_salt, "cache_prompt": options.llamacpp_cache_prompt (llama.cpp's; others
// ignore it), logit_bias -100 for options.ban_ids, "Authorization: Bearer <api_key>" when
// given, TLS with options.connect's files; one thread and connection per stream. "model" is
// the first id of GET /v1/models. A request is OK when the HTTP status is 200 and the usage
// arrives; --turns > 1 also needs the ids.
std::unique_ptr<Backend> MakeOpenAiBackend(const BenchOptions& options, std::string api_key);

}  // namespace llmbench
