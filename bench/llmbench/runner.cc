#include "bench/llmbench/runner.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace llmbench {
namespace {

namespace v1 = llmserve::v1;

void Track(const v1::ServerInfo& info, ServerView* view) {
  view->peak_running = std::max(view->peak_running, info.running_requests());
  view->peak_waiting = std::max(view->peak_waiting, info.waiting_requests());
  view->peak_kv_blocks_used = std::max(view->peak_kv_blocks_used, info.kv_blocks_used());
}

// Dispatches the calls (on the caller's thread), collects their results (gRPC threads) and
// runs the monitor thread (progress, GetServerInfo polls).
class Runner : public CallSink {
 public:
  Runner(const BenchOptions& options, Backend& backend, const std::vector<v1::GenerateRequest>& requests,
         const std::vector<double>& arrivals)
      : o_(options), backend_(backend), requests_(requests), arrivals_(arrivals) {
    result_.results.resize(requests.size());
    progress_ = o_.progress < 0 ? (isatty(STDERR_FILENO) ? 2 : 1) : o_.progress;
  }

  RunResult Run() {
    if (backend_.PollServer(&result_.server.before)) {
      result_.server.have_before = true;
      Track(result_.server.before, &result_.server);
    }
    epoch_ = Clock::now();
    std::thread monitor([this] { Monitor(); });
    const size_t n = requests_.size();
    const int limit = o_.concurrency > 0 ? o_.concurrency : static_cast<int>(n);
    {
      std::unique_lock<std::mutex> lock(mu_);
      for (size_t i = 0; i < n; ++i) {
        if (!o_.closed_loop()) {
          const Clock::time_point at = epoch_ + std::chrono::duration_cast<Clock::duration>(
                                                    std::chrono::duration<double>(arrivals_[i]));
          while (Clock::now() < at) cv_.wait_until(lock, at);
        }
        cv_.wait(lock, [&] { return in_flight_ < limit; });
        ++in_flight_;
        lock.unlock();
        backend_.Start(static_cast<int>(i), requests_[i], epoch_, this);
        lock.lock();
      }
      cv_.wait(lock, [&] { return done_ == n; });
      finished_ = true;
    }
    monitor_cv_.notify_all();
    monitor.join();
    double first = 0, last = 0;
    for (size_t i = 0; i < n; ++i) {
      const RequestResult& r = result_.results[i];
      if (i == 0 || r.start < first) first = r.start;
      last = std::max(last, r.end);
    }
    result_.duration_seconds = last - first;
    if (backend_.PollServer(&result_.server.after)) {
      result_.server.have_after = true;
      Track(result_.server.after, &result_.server);
    }
    return std::move(result_);
  }

  void OnCallDone(int index, RequestResult result) override {
    // Notify under the lock: once the last call is counted, Run may return and destroy cv_.
    std::lock_guard<std::mutex> lock(mu_);
    if (result.code == grpc::StatusCode::OK) {
      ++ok_;
    } else {
      ++failed_;
    }
    result_.results[static_cast<size_t>(index)] = std::move(result);
    --in_flight_;
    ++done_;
    cv_.notify_all();
  }

 private:
  // Progress on stderr (a bar on a tty, plain lines otherwise) and server polls.
  void Monitor() {
    const auto tick = std::chrono::milliseconds(progress_ == 2 ? 250 : 1000);
    Clock::time_point next_poll = Clock::now(), next_line = Clock::now() + ToDuration(o_.progress_interval);
    std::unique_lock<std::mutex> lock(mu_);
    while (!finished_) {
      monitor_cv_.wait_for(lock, tick, [&] { return finished_; });
      if (finished_) break;
      const Clock::time_point now = Clock::now();
      const std::string line = ProgressLine(now);
      lock.unlock();
      if (progress_ == 2) {
        std::fprintf(stderr, "\r%s", line.c_str());
      } else if (progress_ == 1 && now >= next_line) {
        std::fprintf(stderr, "llmbench: %s\n", line.c_str());
        next_line = now + ToDuration(o_.progress_interval);
      }
      if (now >= next_poll) {
        v1::ServerInfo info;
        if (backend_.PollServer(&info)) {
          ++result_.server.samples;
          Track(info, &result_.server);
        }
        next_poll = Clock::now() + std::chrono::seconds(1);
      }
      lock.lock();
    }
    if (progress_ == 2) std::fprintf(stderr, "\r%s\n", ProgressLine(Clock::now()).c_str());
  }

  // "[=====>    ] 12/32 ok 12 failed 0 in flight 4 | 523.1 tok/s | 12.3 s" (mu_ held).
  std::string ProgressLine(Clock::time_point now) const {
    const double elapsed = std::chrono::duration<double>(now - epoch_).count();
    const size_t n = requests_.size();
    constexpr int kWidth = 30;
    const int filled = n == 0 ? kWidth : static_cast<int>(kWidth * done_ / n);
    std::string bar(static_cast<size_t>(filled), '=');
    if (filled < kWidth) bar += '>';
    bar.resize(kWidth, ' ');
    char buf[256];
    std::snprintf(buf, sizeof(buf), "[%s] %zu/%zu ok %zu failed %zu in flight %d | %.1f gen tok/s | %.1f s",
                  bar.c_str(), done_, n, ok_, failed_, in_flight_,
                  elapsed > 0 ? static_cast<double>(tokens_received.load(std::memory_order_relaxed)) / elapsed : 0.0,
                  elapsed);
    return buf;
  }

  static Clock::duration ToDuration(double seconds) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }

  const BenchOptions& o_;
  Backend& backend_;
  const std::vector<v1::GenerateRequest>& requests_;
  const std::vector<double>& arrivals_;
  int progress_ = 0;  // 0 off, 1 plain lines, 2 bar
  Clock::time_point epoch_;

  std::mutex mu_;
  std::condition_variable cv_;          // a call ended
  std::condition_variable monitor_cv_;  // the run finished
  int in_flight_ = 0;
  size_t done_ = 0, ok_ = 0, failed_ = 0;
  bool finished_ = false;
  RunResult result_;  // results[i] written under mu_; server view by the monitor, then Run
};

}  // namespace

RunResult RunRequests(const BenchOptions& options, Backend& backend, const std::vector<v1::GenerateRequest>& requests,
                      const std::vector<double>& arrivals) {
  Runner runner(options, backend, requests, arrivals);
  return runner.Run();
}

}  // namespace llmbench
