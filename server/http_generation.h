// HttpGeneration: one submitted engine request as an HTTP worker thread reads it.
//
//   Submit ──▶ RequestHandle ──▶ Next(): TryPop; none queued → sleep in poll() on an eventfd
//                                        (written by the channel's notifier, engine thread)
//                                        and the client's socket (POLLRDHUP)
//              client gone (or destroyed before the final was read) → Engine::Abort(id,
//              cancelled): the engine frees the sequence's KV blocks at its next step.
//
// The engine thread only writes the eventfd (no HTTP work between two steps); the worker
// formats and writes. Thread-compatible: one worker thread uses it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "scheduler/engine.h"
#include "scheduler/request_channel.h"

namespace llmserve {

class HttpGeneration {
 public:
  // Submits `request`; Submit's refusal (INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNAVAILABLE),
  // or UNAVAILABLE when no eventfd can be made. `open` counts the live generations (for
  // draining); it must outlive the result, as must the engine.
  static absl::StatusOr<std::unique_ptr<HttpGeneration>> Start(Engine& engine, EngineRequest request,
                                                               std::atomic<int64_t>* open);
  ~HttpGeneration();  // aborts the request unless its final was read
  HttpGeneration(const HttpGeneration&) = delete;
  HttpGeneration& operator=(const HttpGeneration&) = delete;

  // The next event, sleeping while none is queued; nullopt when the client closed
  // `socket_fd` (-1: not watched) first, in which case the request is aborted.
  std::optional<ChannelEvent> Next(int socket_fd);
  // Aborts the request (the client is gone); idempotent, no-op once the final was read.
  void Abort();

 private:
  struct Wakeup;  // the eventfd, shared with the notifier the engine thread may still run

  HttpGeneration(Engine& engine, RequestHandle handle, std::shared_ptr<Wakeup> wakeup, std::atomic<int64_t>* open);

  Engine& engine_;
  RequestHandle handle_;
  std::shared_ptr<Wakeup> wakeup_;
  std::atomic<int64_t>* const open_;
  bool final_read_ = false;
  bool aborted_ = false;
};

}  // namespace llmserve
