// OpenAiGeneration: one submitted completion as its HTTP connection pulls it
// (an http::HttpProducer, server/http/http_message.h).
//
//   Submit ──▶ Engine::Submit ──▶ RequestHandle
//   Start(wake): the channel's notifier is `wake` (engine thread: one post to the
//                connection's strand, no HTTP work between two steps)
//   Next():  stream:      the 200 text/event-stream head at once; then "data: <chunk>\n\n" per
//                         delta, the finish chunk, the usage chunk (include_usage), and
//                         "data: [DONE]\n\n"; an error after the start is one
//                         "data: {"error": ...}" event
//            not stream:  the deltas merged until the final, then one JSON body (or the error
//                         the final gives, in its HTTP status)
//   ClientGone / destroyed before the final was read ─▶ Engine::Abort(id, cancelled): the
//                         engine frees the sequence's KV blocks at its next step.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "scheduler/engine.h"
#include "scheduler/request_channel.h"
#include "server/http/http_message.h"
#include "server/openai_response.h"

namespace llmserve {

class OpenAiGeneration final : public http::HttpProducer {
 public:
  // Submits `request`; Submit's refusal (INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNAVAILABLE).
  // `open` counts the live generations (for draining); it and the engine must outlive the
  // result. `stream`: SSE; `ctx`: what every body repeats.
  static absl::StatusOr<std::unique_ptr<OpenAiGeneration>> Submit(Engine& engine, EngineRequest request,
                                                                  OpenAiResponseContext ctx, bool stream,
                                                                  std::atomic<int64_t>* open);
  ~OpenAiGeneration() override;  // aborts the request unless its final was read

  void Start(std::function<void()> wake) override;
  std::optional<http::HttpPiece> Next() override;
  void ClientGone() override;

 private:
  OpenAiGeneration(Engine& engine, RequestHandle handle, std::string request_id, OpenAiResponseContext ctx,
                   bool stream, std::atomic<int64_t>* open);
  // The head every answer carries (X-Request-Id).
  http::HttpResponse Head(int status, std::string content_type) const;
  std::optional<http::HttpPiece> NextStreamed();
  std::optional<http::HttpPiece> NextWhole();
  void Abort();

  Engine& engine_;
  RequestHandle handle_;
  const std::string request_id_;
  const OpenAiResponseContext ctx_;
  const bool stream_;
  std::atomic<int64_t>* const open_;
  bool head_sent_ = false;
  bool first_chunk_ = true;
  size_t text_offset_ = 0;
  GenerationDelta merged_;  // not streaming: everything so far
  bool final_read_ = false;
  bool aborted_ = false;
};

}  // namespace llmserve
