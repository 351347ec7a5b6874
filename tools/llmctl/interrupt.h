// InterruptWatcher: Ctrl-C (SIGINT) or SIGTERM cancels the active gRPC call.
//
// Construct it first thing in main, before any other thread exists: it blocks SIGINT,
// SIGTERM and SIGUSR1 in the calling thread, so every later thread (gRPC's included)
// inherits the mask, and its own thread takes the signals with sigwait(). Nothing runs
// in a signal handler. A signal while a call is watched calls ClientContext::TryCancel
// (the call then ends with CANCELLED); a signal with no call watched, or a second one,
// exits at once with 128 + the signal number. SIGUSR1 only wakes the thread to stop.
#pragma once

#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/client_context.h"

namespace llmctl {

class InterruptWatcher {
 public:
  InterruptWatcher();
  // Stops and joins the watcher thread.
  ~InterruptWatcher();
  InterruptWatcher(const InterruptWatcher&) = delete;
  InterruptWatcher& operator=(const InterruptWatcher&) = delete;

  // Thread-safe. The next signal cancels `ctx` (which must outlive the matching Clear()).
  void Watch(grpc::ClientContext* ctx);
  // Thread-safe. Stops watching; returns the signal that cancelled the call (0: none).
  int Clear();

 private:
  void Run();

  absl::Mutex mu_;
  grpc::ClientContext* ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
  int cancelled_by_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace llmctl
