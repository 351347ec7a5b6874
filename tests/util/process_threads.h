// The threads of this process, for tests that check nothing leaves an OpenMP team behind
// (a team left on one thread makes libgomp throttle the engine thread's; measured in commit a03e26f).
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <iterator>
#include <thread>

namespace llmserve {

inline std::ptrdiff_t ProcessThreads() {
  return std::distance(std::filesystem::directory_iterator("/proc/self/task"), std::filesystem::directory_iterator());
}

// The thread count once it is at most `n`, or after `timeout` whatever it is then.
// libgomp's workers are detached: when the thread that owned their team exits they are
// told to go and leave /proc a moment later (on a loaded machine, not always before that
// thread's join returns). A team left alive on a running thread never goes.
inline std::ptrdiff_t ThreadsOnceAtMost(std::ptrdiff_t n, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::ptrdiff_t now = ProcessThreads();
  while (now > n && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    now = ProcessThreads();
  }
  return now;
}

}  // namespace llmserve
