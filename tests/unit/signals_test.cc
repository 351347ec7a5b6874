// SignalWatcher: the first SIGINT/SIGTERM sent to the process wakes WaitForShutdown (the
// signal is blocked, so it does not kill the test); the destructor joins the watcher. The
// second-signal exit is covered by the integration tests (it ends the process).
#include "server/signals.h"

#include <signal.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace llmserve {
namespace {

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
