#include "server/stream_pump.h"

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace llmserve {
namespace {

TEST(StreamPumpTest, RunsTasksInOrderOnItsOwnThread) {
  StreamPump pump;
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::thread::id> threads;
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(pump.Post([&, i] {
      std::lock_guard<std::mutex> l(mu);
      order.push_back(i);
      threads.push_back(std::this_thread::get_id());
    }));
  }
  pump.Stop();  // runs what is queued first
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
  for (const std::thread::id& t : threads) {
    EXPECT_NE(t, std::this_thread::get_id());
    EXPECT_EQ(t, threads[0]);
  }
  EXPECT_EQ(pump.tasks_run(), 100);
}

TEST(StreamPumpTest, ManyProducersLoseNothing) {
  StreamPump pump;
  std::atomic<int> ran{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < 4; ++p) {
    producers.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) ASSERT_TRUE(pump.Post([&] { ran.fetch_add(1); }));
    });
  }
  for (std::thread& t : producers) t.join();
  pump.Stop();
  EXPECT_EQ(ran.load(), 8000);
  EXPECT_EQ(pump.tasks_run(), 8000);
}

TEST(StreamPumpTest, TasksMayPostMoreWork) {
  StreamPump pump;
  std::atomic<int> ran{0};
  std::function<void()> chain = [&] {
    if (ran.fetch_add(1) < 9) pump.Post(chain);
  };
  ASSERT_TRUE(pump.Post(chain));
  for (int i = 0; i < 2000 && ran.load() < 10; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  pump.Stop();
  EXPECT_EQ(ran.load(), 10);
}

TEST(StreamPumpTest, WithoutGatherWindowRunsTasksToo) {
  StreamPump pump(std::chrono::microseconds(0));
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(pump.Post([&] { ran.fetch_add(1); }));
    if (i % 10 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // let it sleep in between
  }
  pump.Stop();
  EXPECT_EQ(ran.load(), 50);
}

TEST(StreamPumpTest, PostAfterStopIsRefusedAndStopIsIdempotent) {
  StreamPump pump;
  pump.Stop();
  bool ran = false;
  EXPECT_FALSE(pump.Post([&] { ran = true; }));
  pump.Stop();
  EXPECT_FALSE(ran);
  EXPECT_EQ(pump.tasks_run(), 0);
}

}  // namespace
}  // namespace llmserve
