#include "scheduler/mask_worker.h"

#include "absl/time/clock.h"

namespace llmserve {

MaskWorker::MaskWorker() : thread_([this] { Loop(); }) {}

MaskWorker::~MaskWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void MaskWorker::Start(std::vector<Job>* jobs) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_ = jobs;
    done_ = false;
  }
  cv_.notify_all();
}

void MaskWorker::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return done_; });
}

void MaskWorker::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || jobs_ != nullptr; });
    if (stop_) return;
    std::vector<Job>* jobs = jobs_;
    lock.unlock();
    for (Job& j : *jobs) {
      const absl::Time t0 = absl::Now();
      *j.status = j.matcher->ComputeMask(j.mask);
      *j.duration = absl::Now() - t0;
    }
    lock.lock();
    jobs_ = nullptr;
    done_ = true;
    cv_.notify_all();
  }
}

}  // namespace llmserve
