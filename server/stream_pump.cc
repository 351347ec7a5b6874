#include "server/stream_pump.h"

#include <utility>

namespace llmserve {

StreamPump::StreamPump(std::chrono::microseconds gather) : gather_(gather), thread_([this] { Run(); }) {}

StreamPump::~StreamPump() { Stop(); }

bool StreamPump::Post(std::function<void()> task) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    queue_.push_back(std::move(task));
    wake = waiting_;
    waiting_ = false;  // one wake-up per sleep, however many posts arrive meanwhile
  }
  if (wake) cv_.notify_one();
  return true;
}

void StreamPump::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

int64_t StreamPump::tasks_run() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tasks_run_;
}

void StreamPump::Run() {
  std::vector<std::function<void()>> batch;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (queue_.empty()) {
      if (stopping_) return;
      waiting_ = true;
      cv_.wait(lock, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !queue_.empty() || stopping_; });
      waiting_ = false;
      if (gather_ > std::chrono::microseconds::zero() && !stopping_) {
        // Woken by the first post of an engine step: let the engine finish posting the
        // step's other streams (no further wake-ups while waiting_ is false), then write
        // them in one batch — one switch to this thread per step, not one per stream.
        lock.unlock();
        std::this_thread::sleep_for(gather_);
        lock.lock();
      }
      continue;
    }
    batch.swap(queue_);
    lock.unlock();
    for (std::function<void()>& task : batch) task();
    const int64_t ran = static_cast<int64_t>(batch.size());
    batch.clear();  // destroys the tasks (and what they captured) outside the lock
    lock.lock();
    tasks_run_ += ran;
  }
}

}  // namespace llmserve
