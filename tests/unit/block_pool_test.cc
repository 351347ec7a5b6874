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

TEST(BlockPoolTest, PartialBlocksMatchTheLongestCommonPrefixAfterTheirParent) {
  BlockPool pool(8, 4);
  std::vector<int32_t> t;
  ASSERT_TRUE(pool.Allocate(4, t));  // 0 1 2 3
  const std::vector<int32_t> head = {1, 2, 3, 4};
  ASSERT_EQ(pool.Register(t[0], 100, -1, head, ""), t[0]);
  const std::vector<int32_t> seq = {1, 2, 3, 4, 7, 8, 9, 5};  // the sequence looking up
  auto token = [&](int32_t p) { return seq[static_cast<size_t>(p)]; };
  ASSERT_TRUE(pool.RegisterPartial(t[1], 100, t[0], std::vector<int32_t>{7, 8}, ""));
  ASSERT_TRUE(pool.RegisterPartial(t[2], 100, t[0], std::vector<int32_t>{7, 8, 9}, ""));
  // Holding 7 8 already: kept by t[2].
  EXPECT_FALSE(pool.RegisterPartial(t[3], 100, t[0], std::vector<int32_t>{7}, ""));
  for (int32_t id : {t[3], t[2], t[1], t[0]}) pool.Release(id);
  EXPECT_EQ(pool.num_cached(), 3);
  EXPECT_TRUE(pool.CheckInvariants().ok()) << pool.CheckInvariants();

  BlockPool::PartialHit hit = pool.MatchPartial(100, t[0], "", token, 4, 3);
  EXPECT_EQ(hit.id, t[2]);
  EXPECT_EQ(hit.rows, 3);
  hit = pool.MatchPartial(100, t[0], "", token, 4, 2);  // at most 2 rows wanted
  EXPECT_EQ(hit.rows, 2);
  EXPECT_EQ(pool.MatchPartial(100, t[3], "", token, 4, 3).id, -1);  // another parent
  EXPECT_EQ(pool.MatchPartial(101, t[0], "", token, 4, 3).id, -1);  // another key
  EXPECT_EQ(pool.MatchPartial(100, t[0], "", token, 0, 3).id, -1);  // other tokens

  // Evicting the parent (it is reallocated) invalidates its partial children.
  std::vector<int32_t> u;
  ASSERT_TRUE(pool.Allocate(5, u));  // the free ones: 3 4 5 6 7
  ASSERT_TRUE(pool.Allocate(3, u));  // the LRU: 2 and 1 (partial), then 0 (the parent)
  EXPECT_EQ(pool.num_cached(), 0);
  EXPECT_EQ(pool.num_evictions(), 3);
  EXPECT_EQ(pool.MatchPartial(100, t[0], "", token, 4, 3).id, -1);
  EXPECT_TRUE(pool.CheckInvariants().ok()) << pool.CheckInvariants();
}

TEST(BlockPoolTest, FirstPartialBlocksAreSalted) {
  BlockPool pool(2, 4);
  std::vector<int32_t> t;
  ASSERT_TRUE(pool.Allocate(1, t));
  ASSERT_TRUE(pool.RegisterPartial(t[0], 7, -1, std::vector<int32_t>{5, 6}, "x"));
  pool.Release(t[0]);
  const std::vector<int32_t> seq = {5, 6, 1};
  auto token = [&](int32_t p) { return seq[static_cast<size_t>(p)]; };
  EXPECT_EQ(pool.MatchPartial(7, -1, "y", token, 0, 2).id, -1);
  EXPECT_EQ(pool.MatchPartial(7, -1, "x", token, 0, 2).rows, 2);
}

TEST(BlockPoolTest, RegisteringAHeldKeySharesTheSameBlockOrReplacesAnOrphan) {
  BlockPool pool(6, 2);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(pool.Allocate(2, a));  // 0 1
  ASSERT_TRUE(pool.Allocate(2, b));  // 2 3
  const std::vector<int32_t> x = {1, 2}, y = {3, 4};
  ASSERT_EQ(pool.Register(a[0], 10, -1, x, ""), a[0]);
  ASSERT_EQ(pool.Register(a[1], 11, a[0], y, ""), a[1]);
  // b computed the same first block: the registered one holds the same KV.
  EXPECT_EQ(pool.Register(b[0], 10, -1, x, ""), a[0]);
  EXPECT_FALSE(pool.registered(b[0]));
  // Same key, other tokens or another salt: a collision, refused.
  EXPECT_EQ(pool.Register(b[0], 10, -1, y, ""), -1);
  EXPECT_EQ(pool.Register(b[0], 10, -1, x, "s"), -1);
  // Key 11 after b's own first block: a[1] follows a[0], not b[0], and is in use: refused.
  EXPECT_EQ(pool.Register(b[1], 11, b[0], y, ""), -1);
  pool.ReleaseAll(b);
  EXPECT_TRUE(pool.CheckInvariants().ok()) << pool.CheckInvariants();
}

TEST(BlockPoolTest, AnOrphanedCachedBlockGivesItsKeyUp) {
  BlockPool pool(4, 2);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.Allocate(2, a));  // 0 1
  const std::vector<int32_t> x = {1, 2}, y = {3, 4};
  ASSERT_EQ(pool.Register(a[0], 20, -1, x, ""), a[0]);
  ASSERT_EQ(pool.Register(a[1], 21, a[0], y, ""), a[1]);
  pool.Release(a[0]);
  pool.Release(a[1]);  // LRU: 0, then 1
  std::vector<int32_t> c;
  ASSERT_TRUE(pool.Allocate(3, c));  // 3 2 (free), then 0 evicted: 1 is an orphan
  EXPECT_EQ(c[2], a[0]);
  EXPECT_TRUE(pool.registered(a[1]));
  // Key 21 again, computed after c's first block: the orphan, unreachable, gives it up.
  EXPECT_EQ(pool.Register(c[1], 21, c[0], y, ""), c[1]);
  EXPECT_FALSE(pool.registered(a[1]));
  EXPECT_EQ(pool.num_free(), 1);
  EXPECT_EQ(pool.num_cached(), 0);
  EXPECT_TRUE(pool.CheckInvariants().ok()) << pool.CheckInvariants();
}

TEST(BlockPoolDeathTest, PartialBlocksAreNeverShared) {
  BlockPool pool(2, 4);
  std::vector<int32_t> t;
  ASSERT_TRUE(pool.Allocate(1, t));
  ASSERT_TRUE(pool.RegisterPartial(t[0], 7, -1, std::vector<int32_t>{5}, ""));
  pool.Release(t[0]);
  EXPECT_DEATH(pool.Ref(t[0]), "partial block");
}

}  // namespace
}  // namespace llmserve
