// OpenAiService: the OpenAI-compatible endpoints over one Engine, as LlmService is the gRPC
// one (server/openai_server.h routes to it, checks keys and content first, and answers
// while the model loads).
//
//   POST /v1/completions, /v1/chat/completions (HTTP worker thread, blocking):
//     ParseOpenAiRequest → ToEngineRequest (the same validation, tokenizing and chat
//     rendering as gRPC's Generate) → HttpGeneration::Start (Engine::Submit: admission
//     control, 429 / 503 at the door) → read the request's channel:
//       stream false: merge every delta, then one JSON body (or the error the final gives)
//       stream true:  200 text/event-stream at once; "data: <chunk>\n\n" per delta, the
//                     finish chunk, the usage chunk (include_usage), "data: [DONE]\n\n";
//                     an error after the start is one "data: {"error": ...}" event.
//     A client that goes away (socket closed, a write fails) aborts the request; its KV
//     blocks are freed at the engine's next step.
//   GET /v1/models, /v1/models/{id}: the served model.
// Errors are absl::Status until ToHttpError (server/http_status.h) writes them.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "model/tokenizer/tokenizer.h"
#include "scheduler/engine.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/request_convert.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace llmserve {

// Thread-safe (HTTP worker threads). The engine, tokenizer and metrics (may be null) must
// outlive the service.
class OpenAiService {
 public:
  OpenAiService(Engine& engine, const Tokenizer& tokenizer, RequestLimits limits, std::string model_name,
                int64_t created, Metrics* metrics = nullptr);

  // A completion or chat completion; the body's size and content type are checked already.
  void Generate(OpenAiEndpoint endpoint, const httplib::Request& req, httplib::Response& res);
  // The model list (`id` empty) or one model (404 for another id).
  void Models(const std::string& id, httplib::Response& res) const;

  // Generations in flight (for draining: wait until 0).
  int64_t open_requests() const { return open_.load(); }

 private:
  // The engine request for `parsed`, or the error to answer with.
  absl::StatusOr<EngineRequest> ToEngine(const OpenAiRequest& parsed, const httplib::Request& req);

  Engine& engine_;
  const Tokenizer& tokenizer_;
  const RequestLimits limits_;
  const std::string model_name_;
  const int64_t created_;  // Unix seconds the model was loaded ("created" of /v1/models)
  Metrics* const metrics_;
  std::atomic<int64_t> open_{0};
  std::atomic<int64_t> next_request_number_{1};
};

// Writes `status` as the OpenAI error object with its HTTP status.
void WriteError(const absl::Status& status, httplib::Response& res);

}  // namespace llmserve
