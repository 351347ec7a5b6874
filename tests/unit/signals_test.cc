// SignalWatcher: SIGHUP runs the OnHangup handler; the first SIGINT/SIGTERM sent to the
// process wakes WaitForShutdown (the signals are blocked, so they do not kill the test);
// the destructor joins the watcher. The second-signal exit is covered by the integration
// tests (it ends the process).
#include "server/signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace llmserve {
namespace {

TEST(SignalWatcherTest, SighupRunsTheHandlerAndIsNeitherFatalNorAShutdown) {
  auto watcher = SignalWatcher::Start();
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  ASSERT_EQ(kill(getpid(), SIGHUP), 0);  // no handler yet: ignored
  std::atomic<int> calls{0};
  (*watcher)->OnHangup([&calls] { ++calls; });
  for (int i = 1; i <= 2; ++i) {
    ASSERT_EQ(kill(getpid(), SIGHUP), 0);
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (calls.load() < i && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
    EXPECT_EQ(calls.load(), i);
  }
  (*watcher)->OnHangup(nullptr);
  ASSERT_EQ(kill(getpid(), SIGHUP), 0);
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ((*watcher)->received(), 0);
  watcher->reset();
}

TEST(SignalWatcherTest, FirstSignalWakesTheWaiterAndIsRemembered) {
  auto watcher = SignalWatcher::Start();
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  EXPECT_EQ((*watcher)->received(), 0);
  ASSERT_EQ(kill(getpid(), SIGINT), 0);
  EXPECT_EQ((*watcher)->WaitForShutdown(), SIGINT);
  EXPECT_EQ((*watcher)->received(), SIGINT);
  EXPECT_EQ((*watcher)->WaitForShutdown(), SIGINT);  // returns at once from now on
  watcher->reset();                                   // wakes and joins the watcher thread
}

}  // namespace
}  // namespace llmserve
