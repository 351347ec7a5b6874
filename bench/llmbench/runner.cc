#include "bench/llmbench/runner.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "bench/llmbench/workload.h"

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
  Runner(const BenchOptions& options, Backend& backend, std::vector<v1::GenerateRequest> requests,
         const std::vector<double>& arrivals)
      : o_(options), backend_(backend), turns_(std::max(options.turns, 1)), requests_(std::move(requests)),
        arrivals_(arrivals) {
    result_.results.resize(requests_.size());
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
    const size_t conversations = n / static_cast<size_t>(turns_);
    const int limit = o_.concurrency > 0 ? o_.concurrency : static_cast<int>(conversations);
    {
      std::unique_lock<std::mutex> lock(mu_);
      for (size_t c = 0; c < conversations; ++c) {
        if (!o_.closed_loop()) {
          const Clock::time_point at = epoch_ + std::chrono::duration_cast<Clock::duration>(
                                                    std::chrono::duration<double>(arrivals_[c]));
          while (Clock::now() < at) cv_.wait_until(lock, at);
        }
        cv_.wait(lock, [&] { return in_flight_ < limit; });
        ++in_flight_;
        lock.unlock();
        const size_t first_turn = c * static_cast<size_t>(turns_);
        backend_.Start(static_cast<int>(first_turn), requests_[first_turn], epoch_, this);
        lock.lock();
      }
      cv_.wait(lock, [&] { return done_ == n; });
      finished_ = true;
    }
    monitor_cv_.notify_all();
    monitor.join();
    double first = 0, last = 0;
    bool any = false;
    for (const RequestResult& r : result_.results) {
      if (!r.started) continue;  // a turn never sent
      first = any ? std::min(first, r.start) : r.start;
      last = std::max(last, r.end);
      any = true;
    }
    result_.duration_seconds = last - first;
    if (backend_.PollServer(&result_.server.after)) {
      result_.server.have_after = true;
      Track(result_.server.after, &result_.server);
    }
    return std::move(result_);
  }

  void OnCallDone(int index, RequestResult result) override {
    const size_t i = static_cast<size_t>(index);
    const bool ok = result.code == grpc::StatusCode::OK;
    bool next_turn = false;
    {
      // Notify under the lock: once the last call is counted, Run may return and destroy cv_.
      std::lock_guard<std::mutex> lock(mu_);
      ++(ok ? ok_ : failed_);
      ++done_;
      result_.results[i] = std::move(result);
      const int turn = index % turns_;
      if (turn + 1 < turns_ && ok) {
        // The conversation goes on: its next turn is still ours to change (not sent yet).
        ChainTurn(requests_[i], result_.results[i].ids, &requests_[i + 1]);
        next_turn = true;
      } else {
        SkipLaterTurns(i, turn);
        --in_flight_;
      }
      cv_.notify_all();
    }
    // Outside the lock: a backend may report a call from the thread that starts it. Run
    // is still waiting (the next turn is not counted yet), so everything here lives on.
    if (next_turn) backend_.Start(index + 1, requests_[i + 1], epoch_, this);
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

  // Turn `turn` (request i) of a conversation failed: its later turns are never sent and
  // count as failed (mu_ held).
  void SkipLaterTurns(size_t i, int turn) {
    for (int t = turn + 1; t < turns_; ++t) {
      RequestResult& skipped = result_.results[i + static_cast<size_t>(t - turn)];
      skipped.code = grpc::StatusCode::ABORTED;
      skipped.error = "not sent: an earlier turn of its conversation failed";
      ++failed_;
      ++done_;
    }
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
  const int turns_;                           // requests per conversation
  std::vector<v1::GenerateRequest> requests_;  // a later turn's prompt is chained when it starts
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

RunResult RunRequests(const BenchOptions& options, Backend& backend, std::vector<v1::GenerateRequest> requests,
                      const std::vector<double>& arrivals) {
  Runner runner(options, backend, std::move(requests), arrivals);
  return runner.Run();
}

}  // namespace llmbench
