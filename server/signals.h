// SignalWatcher: SIGTERM / SIGINT (and SIGHUP) handling without async-signal-safety worries.
//
//   main() first thing:  SignalWatcher::Start()  blocks SIGTERM, SIGINT, SIGHUP (and SIGUSR1, the
//                        watcher's wake-up) in the calling thread; every thread started
//                        later inherits the mask, so only the watcher's sigwait sees them.
//   watcher thread:      sigwait → 1st SIGTERM/SIGINT: records it, wakes WaitForShutdown()
//                                → 2nd one: logs and _exit(128 + signal) at once
//                        SIGHUP → the OnHangup handler (the server re-reads its API keys);
//                                 never fatal
//   ~SignalWatcher:      wakes the watcher with SIGUSR1 and joins it.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"

namespace llmserve {

class SignalWatcher {
 public:
  // Blocks the signals in the calling thread and starts the watcher. Call before any
  // other thread exists.
  static absl::StatusOr<std::unique_ptr<SignalWatcher>> Start();
  ~SignalWatcher();

  // Thread-safe. Blocks until the first SIGTERM/SIGINT (returns at once if it already
  // came); returns the signal number.
  int WaitForShutdown();
  // Thread-safe. The first signal's number, or 0.
  int received() const;
  // Thread-safe. `handler` runs on the watcher thread at each SIGHUP from now on (none:
  // SIGHUP is ignored). Waits for a handler already running, so that once
  // OnHangup(nullptr) returns the old handler's captures may go.
  void OnHangup(std::function<void()> handler);

 private:
  SignalWatcher() = default;
  void Run();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int first_signal_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::mutex hangup_mu_;  // held while the handler runs
  std::function<void()> hangup_ ABSL_GUARDED_BY(hangup_mu_);
  std::thread thread_;
};

}  // namespace llmserve
