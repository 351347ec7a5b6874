// OpenAiService: the OpenAI-compatible endpoints over one Engine, as LlmService is the gRPC
// one (server/openai_server.h routes to it, checks keys and content first, and answers
// while the model loads).
//
//   POST /v1/completions, /v1/chat/completions (an HTTP I/O thread, never blocking):
//     ParseOpenAiRequest → ToEngineRequest (the same validation, tokenizing and chat
//     rendering as gRPC's Generate) → OpenAiGeneration::Submit (Engine::Submit: admission
//     control, 429 / 503 at the door) → the generation, which the connection pulls
//     (server/openai_generation.h: streamed or whole; a client that goes away aborts it).
//   GET /v1/models, /v1/models/{id}: the served model.
// Errors are absl::Status until ToHttpError (server/http_status.h) writes them.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "model/tokenizer/tokenizer.h"
#include "scheduler/engine.h"
#include "server/http/http_message.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/request_convert.h"

namespace llmserve {

// Thread-safe (HTTP I/O threads). The engine, tokenizer and metrics (may be null) must
// outlive the service.
class OpenAiService {
 public:
  OpenAiService(Engine& engine, const Tokenizer& tokenizer, RequestLimits limits, std::string model_name,
                int64_t created, Metrics* metrics = nullptr);

  // A completion or chat completion (the generation, or the refusal); the body's size and
  // content type are checked already.
  http::HttpAnswer Generate(OpenAiEndpoint endpoint, const http::HttpRequest& req);
  // The model list (`id` empty) or one model (404 for another id).
  http::HttpResponse Models(const std::string& id) const;

  // Generations in flight (for draining: wait until 0).
  int64_t open_requests() const { return open_.load(); }

 private:
  // The engine request for `parsed`, or the error to answer with.
  absl::StatusOr<EngineRequest> ToEngine(const OpenAiRequest& parsed, const http::HttpRequest& req);
  // `status` as the answer, counted as a refusal at the door.
  http::HttpResponse Refused(const absl::Status& status, const http::HttpRequest& req) const;

  Engine& engine_;
  const Tokenizer& tokenizer_;
  const RequestLimits limits_;
  const std::string model_name_;
  const int64_t created_;  // Unix seconds the model was loaded ("created" of /v1/models)
  Metrics* const metrics_;
  std::atomic<int64_t> open_{0};
  std::atomic<int64_t> next_request_number_{1};
};

// `status` as the OpenAI error object with its HTTP status.
http::HttpResponse ErrorResponse(const absl::Status& status);
// A JSON body with status 200.
http::HttpResponse JsonResponse(std::string body);

}  // namespace llmserve
