// Where llmbench sends its requests: llmserve over gRPC, or llama.cpp's server over HTTP
// (its /completion streaming endpoint, for side-by-side benchmarks). Both take the same
// GenerateRequests and report the same RequestResults, so the statistics and the report
// are the same code for every server.
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

// llama.cpp's llama-server: POST /completion with "stream": true, the prompt as token ids,
// n_predict = max_tokens, ignore_eos, the sampling fields, "return_tokens": true (the ids
// of each event are the result's ids), "cache_prompt": options.llamacpp_cache_prompt, and
// logit_bias false for options.ban_ids; one thread and connection per stream. cache_salt
// is not sent (llama.cpp has none). A request is OK when the HTTP status is 200 and the
// stream ends with its "stop" event; the event's tokens_predicted / tokens_evaluated /
// timings.cache_n are the usage's completion / prompt / cached tokens.
std::unique_ptr<Backend> MakeLlamaCppBackend(const BenchOptions& options);

}  // namespace llmbench
