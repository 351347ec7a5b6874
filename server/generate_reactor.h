// GenerateReactor: one Generate call, from the request's bytes to the last message.
//
//   Start (gRPC thread): parse → FromGenerateRequest → ToEngineRequest → Engine::Submit
//        │                                             ──error──▶ Finish(status)
//        │ ok: channel notifier = post Pump via Link (below) to the StreamPump; Pump()
//        ▼
//   Pump (no write in flight; any thread): TryPop ── none: the channel arms the notifier
//        │ delta / final
//        ▼
//   StartWrite(chunk | final) ─▶ OnWriteDone ─▶ Pump again ... final written ─▶ Finish
//   OnCancel (client cancelled or gone, or the deadline passed) ─▶ Engine::Abort(id,
//        cancelled | deadline) and Finish once no write is in flight.
//   OnDone ─▶ unlink, drop the call's reference; the last reference deletes the reactor.
//
// Lifetime: the engine thread calls the notifier, possibly after gRPC has called OnDone.
// The notifier only posts a task to the StreamPump thread (server/stream_pump.h), so no
// serialization or gRPC write runs on the engine thread. The task holds a shared Link;
// under its mutex it takes a reference on the reactor (or finds it gone), then pumps
// without the link's lock held, so a reaction that gRPC runs inline inside StartWrite or
// Finish cannot deadlock against it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "grpcpp/grpcpp.h"
#include "model/tokenizer/tokenizer.h"
#include "scheduler/engine.h"
#include "server/metrics.h"
#include "server/request_convert.h"
#include "server/stream_pump.h"

namespace llmserve {

class GenerateReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  // What a call needs from the service; all must outlive the reactor.
  struct Deps {
    Engine* engine;
    const Tokenizer* tokenizer;
    const RequestLimits* limits;         // vocabulary, context and sampling defaults
    std::atomic<int64_t>* open_streams;  // incremented for the reactor's lifetime
    Metrics* metrics = nullptr;          // counts refusals at the door; may be null
    // Runs the notifier's pumps off the engine thread; null: pump on the notifying thread.
    std::shared_ptr<StreamPump> pump;
  };

  // Starts the call (see the diagram); `request_number` names a request without an id.
  // gRPC owns the result until OnDone.
  static GenerateReactor* Start(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer& request, Deps deps,
                                int64_t request_number);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  // The notifier's way to the reactor; reactor is null once gRPC is done with it.
  struct Link {
    std::mutex mu;
    GenerateReactor* reactor ABSL_GUARDED_BY(mu) = nullptr;
  };

  GenerateReactor(grpc::CallbackServerContext* ctx, Deps deps);
  ~GenerateReactor() override;

  // Writes the next queued event if no write is in flight and the call is not finishing.
  void Pump();
  // Drops a reference; the last one deletes the reactor.
  void Unref();

  grpc::CallbackServerContext* const ctx_;
  const Deps deps_;
  std::atomic<int32_t> refs_{1};  // gRPC's (dropped in OnDone) + notifier calls in progress
  std::shared_ptr<Link> link_;
  RequestHandle handle_;          // channel null: never submitted
  std::string request_id_;

  std::mutex mu_;
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool final_popped_ ABSL_GUARDED_BY(mu_) = false;   // the final is written or being written
  bool finish_called_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool aborted_ ABSL_GUARDED_BY(mu_) = false;        // Engine::Abort was called
  absl::Status final_status_ ABSL_GUARDED_BY(mu_);   // the call's status after the final
  absl::Status cancel_status_ ABSL_GUARDED_BY(mu_);  // CANCELLED or DEADLINE_EXCEEDED
  grpc::ByteBuffer out_;  // the message in flight; touched only by the write_in_flight_ owner
};

}  // namespace llmserve
