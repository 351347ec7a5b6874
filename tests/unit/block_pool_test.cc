#include "scheduler/block_pool.h"

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace llmserve {
namespace {

TEST(BlockPoolTest, FreshPoolHandsOutAscendingIds) {
  BlockPool pool(4);
  EXPECT_EQ(pool.num_total(), 4);
  EXPECT_EQ(pool.num_free(), 4);
  EXPECT_EQ(pool.num_used(), 0);
  std::vector<int32_t> table;
  ASSERT_TRUE(pool.Allocate(3, table));
  EXPECT_EQ(table, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(pool.num_free(), 1);
  EXPECT_EQ(pool.num_used(), 3);
  for (int32_t id : table) EXPECT_EQ(pool.ref_count(id), 1);
  EXPECT_EQ(pool.ref_count(3), 0);
}

TEST(BlockPoolTest, AllocateAppendsOrChangesNothing) {
  BlockPool pool(3);
  std::vector<int32_t> table = {};
  ASSERT_TRUE(pool.Allocate(2, table));
  EXPECT_FALSE(pool.Allocate(2, table));  // only one free
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(pool.num_free(), 1);
  EXPECT_FALSE(pool.Allocate(-1, table));
  ASSERT_TRUE(pool.Allocate(0, table));
  EXPECT_EQ(table.size(), 2u);
  ASSERT_TRUE(pool.Allocate(1, table));
  EXPECT_EQ(table, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(pool.num_free(), 0);
}

TEST(BlockPoolTest, ReleaseIsLifo) {
  BlockPool pool(4);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(pool.Allocate(2, a));  // 0 1
  ASSERT_TRUE(pool.Allocate(2, b));  // 2 3
  pool.Release(a[0]);
  pool.Release(b[1]);
  std::vector<int32_t> c;
  ASSERT_TRUE(pool.Allocate(2, c));
  EXPECT_EQ(c, (std::vector<int32_t>{3, 0}));  // most recently freed first
}

TEST(BlockPoolTest, RefCountsKeepSharedBlocks) {
  BlockPool pool(2);
  std::vector<int32_t> t;
  ASSERT_TRUE(pool.Allocate(1, t));
  pool.Ref(t[0]);
  EXPECT_EQ(pool.ref_count(t[0]), 2);
  pool.Release(t[0]);
  EXPECT_EQ(pool.ref_count(t[0]), 1);
  EXPECT_EQ(pool.num_free(), 1);
  pool.Release(t[0]);
  EXPECT_EQ(pool.ref_count(t[0]), 0);
  EXPECT_EQ(pool.num_free(), 2);
}

TEST(BlockPoolTest, ReleaseAllClearsTable) {
  BlockPool pool(5);
  std::vector<int32_t> t;
  ASSERT_TRUE(pool.Allocate(5, t));
  pool.ReleaseAll(t);
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(pool.num_free(), 5);
}

TEST(BlockPoolTest, EmptyAndNegativePools) {
  for (int32_t n : {0, -3}) {
    BlockPool pool(n);
    EXPECT_EQ(pool.num_total(), 0);
    std::vector<int32_t> t;
    EXPECT_TRUE(pool.Allocate(0, t));
    EXPECT_FALSE(pool.Allocate(1, t));
    EXPECT_EQ(pool.ref_count(0), 0);
  }
}

TEST(BlockPoolTest, RefCountOutOfRangeIsZero) {
  BlockPool pool(2);
  EXPECT_EQ(pool.ref_count(-1), 0);
  EXPECT_EQ(pool.ref_count(2), 0);
}

TEST(BlockPoolDeathTest, DoubleReleaseAborts) {
  BlockPool pool(2);
  std::vector<int32_t> t;
  ASSERT_TRUE(pool.Allocate(1, t));
  pool.Release(t[0]);
  EXPECT_DEATH(pool.Release(t[0]), "");
  EXPECT_DEATH(pool.Release(7), "");
}

// Random allocate/release: counts always add up and no id is handed out twice.
TEST(BlockPoolTest, RandomizedOwnershipStaysExclusive) {
  std::mt19937 rng(7);
  BlockPool pool(37);
  std::vector<std::vector<int32_t>> tables(6);
  for (int iter = 0; iter < 5000; ++iter) {
    auto& t = tables[rng() % tables.size()];
    if (rng() % 3 == 0) {
      pool.ReleaseAll(t);
    } else {
      const auto n = static_cast<int32_t>(rng() % 5);
      const bool ok = n <= pool.num_free();
      const size_t before = t.size();
      EXPECT_EQ(pool.Allocate(n, t), ok);
      EXPECT_EQ(t.size(), before + (ok ? static_cast<size_t>(n) : 0));
    }
    std::set<int32_t> seen;
    size_t held = 0;
    for (const auto& tab : tables) {
      for (int32_t id : tab) {
        EXPECT_TRUE(seen.insert(id).second) << "block " << id << " owned twice";
        EXPECT_EQ(pool.ref_count(id), 1);
      }
      held += tab.size();
    }
    ASSERT_EQ(static_cast<size_t>(pool.num_used()), held);
    ASSERT_EQ(pool.num_used() + pool.num_free(), pool.num_total());
  }
}

}  // namespace
}  // namespace llmserve
