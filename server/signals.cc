#include "server/signals.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace llmserve {
namespace {

sigset_t WatchedSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGUSR1);
  return set;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SignalWatcher>> SignalWatcher::Start() {
  const sigset_t set = WatchedSignals();
  if (int err = pthread_sigmask(SIG_BLOCK, &set, nullptr); err != 0) {
    return absl::InternalError(absl::StrCat("pthread_sigmask: ", std::strerror(err)));
  }
  std::unique_ptr<SignalWatcher> w(new SignalWatcher());
  w->thread_ = std::thread([p = w.get()] { p->Run(); });
  return w;
}

SignalWatcher::~SignalWatcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) {
    pthread_kill(thread_.native_handle(), SIGUSR1);
    thread_.join();
  }
}

void SignalWatcher::Run() {
  const sigset_t set = WatchedSignals();
  while (true) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    std::unique_lock<std::mutex> lock(mu_);
    if (stopping_) return;
    if (sig == SIGUSR1) continue;  // only the destructor's wake-up means anything
    if (sig == SIGHUP) {
      lock.unlock();
      std::lock_guard<std::mutex> running(hangup_mu_);
      if (hangup_) hangup_();
      continue;
    }
    if (first_signal_ != 0) {
      lock.unlock();
      // Second signal: no more waiting. write(2) straight to stderr (logger may be busy).
      const std::string msg = absl::StrCat("llmserve: second signal (", sig == SIGTERM ? "SIGTERM" : "SIGINT", "): exiting now\n");
      [[maybe_unused]] ssize_t n = write(STDERR_FILENO, msg.data(), msg.size());
      std::_Exit(128 + sig);
    }
    first_signal_ = sig;
    lock.unlock();
    cv_.notify_all();
  }
}

int SignalWatcher::WaitForShutdown() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return first_signal_ != 0; });
  return first_signal_;
}

void SignalWatcher::OnHangup(std::function<void()> handler) {
  std::lock_guard<std::mutex> lock(hangup_mu_);
  hangup_ = std::move(handler);
}

int SignalWatcher::received() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_signal_;
}

}  // namespace llmserve
