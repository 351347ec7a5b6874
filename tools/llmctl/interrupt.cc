// InterruptWatcher: sigwait() thread that cancels the watched call (see interrupt.h).
#include "tools/llmctl/interrupt.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

namespace llmctl {
namespace {

sigset_t WatchedSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  return set;
}

}  // namespace

InterruptWatcher::InterruptWatcher() {
  const sigset_t set = WatchedSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  thread_ = std::thread([this] { Run(); });
}

InterruptWatcher::~InterruptWatcher() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  pthread_kill(thread_.native_handle(), SIGUSR1);
  thread_.join();
}

void InterruptWatcher::Watch(grpc::ClientContext* ctx) {
  absl::MutexLock lock(&mu_);
  ctx_ = ctx;
  cancelled_by_ = 0;
}

int InterruptWatcher::Clear() {
  absl::MutexLock lock(&mu_);
  ctx_ = nullptr;
  return cancelled_by_;
}

void InterruptWatcher::Run() {
  const sigset_t set = WatchedSignals();
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    absl::MutexLock lock(&mu_);
    if (sig == SIGUSR1) {
      if (stopping_) return;
      continue;
    }
    if (ctx_ == nullptr || cancelled_by_ != 0) _exit(128 + sig);
    cancelled_by_ = sig;
    ctx_->TryCancel();
  }
}

}  // namespace llmctl
