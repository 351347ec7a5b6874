// Scheduler: prefix caching. Sharing cached blocks between sequences, leaving the last
// token to compute, LRU eviction, refcounts after cancel and preemption, salt isolation,
// a forced hash collision, and copying a cached partial last block into the next turn.
// The harness checks the pool and the block tables after every step and fails any
// sequence that reads KV of another prefix.
#include <span>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/scheduler.h"
#include "tests/util/scheduler_harness.h"

namespace llmserve {
namespace {

using ::llmserve::testing::RunReference;
using ::llmserve::testing::SchedulerHarness;

SchedulerConfig Cfg(int32_t blocks, int32_t block_size = 4) {
  SchedulerConfig c;
  c.block_size = block_size;
  c.num_blocks = blocks;
  c.max_running = 4;
  c.max_batched_tokens = 64;
  c.max_prefill_chunk = 64;
  c.max_context = 256;
  c.eos_ids = {2};
  c.prefill_spread_steps = 0;
  c.prefix_caching = true;
  return c;
}

StopConditions MaxTokens(int32_t n) {
  StopConditions s;
  s.max_tokens = n;
  s.ignore_eos = true;
  return s;
}

// `shared` ids common to every caller, then `own` ids particular to `tag`.
std::vector<int32_t> Prompt(int32_t shared, int32_t own, int32_t tag) {
  std::vector<int32_t> p;
  for (int32_t i = 0; i < shared; ++i) p.push_back(100 + i);
  for (int32_t i = 0; i < own; ++i) p.push_back(500 + tag * 50 + i);
  return p;
}

// Runs `h` to completion and checks each listed sequence against the unbatched reference.
void RunAndCheck(SchedulerHarness& h, const std::vector<std::pair<int64_t, std::vector<int32_t>>>& seqs,
                 const StopConditions& stop) {
  ASSERT_TRUE(h.RunToCompletion());
  for (const auto& [id, prompt] : seqs) {
    const Sequence* f = h.Finished(id);
    ASSERT_NE(f, nullptr) << id;
    const auto ref = RunReference(prompt, stop, h.config().eos_ids, h.config().max_context, h.pick());
    EXPECT_EQ(f->generated, ref.generated) << id;
  }
  EXPECT_EQ(h.sched().blocks().num_used(), 0);
}

TEST(SchedulerPrefixTest, FinishedPromptIsSharedByTheNextRequest) {
  SchedulerHarness h(Cfg(32));
  const auto a = Prompt(16, 4, 1), b = Prompt(16, 4, 2);
  ASSERT_TRUE(h.Add(1, a, MaxTokens(3)).ok());
  RunAndCheck(h, {{1, a}}, MaxTokens(3));
  EXPECT_EQ(h.Finished(1)->num_cached_tokens, 0);
  EXPECT_EQ(h.sched().blocks().num_cached(), 6);  // 22 tokens computed: 5 full blocks and a partial kept
  ASSERT_TRUE(h.Add(2, b, MaxTokens(3)).ok());
  EXPECT_EQ(h.Step(), "P2@16+4s");  // the 4 shared blocks are taken, not computed
  RunAndCheck(h, {{2, b}}, MaxTokens(3));
  EXPECT_EQ(h.Finished(2)->num_cached_tokens, 16);
  EXPECT_EQ(h.sched().prefix_query_tokens(), 40);
  EXPECT_EQ(h.sched().prefix_hit_tokens(), 16);
}

TEST(SchedulerPrefixTest, RunningSequencesShareBlocks) {
  SchedulerHarness h(Cfg(32));
  const auto a = Prompt(8, 2, 1), b = Prompt(8, 3, 2);
  ASSERT_TRUE(h.Add(1, a, MaxTokens(6)).ok());
  EXPECT_EQ(h.Step(), "P1@0+10s");
  ASSERT_TRUE(h.Add(2, b, MaxTokens(6)).ok());
  EXPECT_EQ(h.Step(), "D1@10 P2@8+3s");
  const std::vector<const Sequence*> held = h.sched().Sequences();
  ASSERT_EQ(held.size(), 2u);
  for (int j = 0; j < 2; ++j) {
    EXPECT_EQ(held[0]->block_table[j], held[1]->block_table[j]);
    EXPECT_EQ(h.sched().blocks().ref_count(held[0]->block_table[j]), 2);
  }
  EXPECT_NE(held[0]->block_table[2], held[1]->block_table[2]);  // the block being written is its own
  RunAndCheck(h, {{1, a}, {2, b}}, MaxTokens(6));
}

TEST(SchedulerPrefixTest, BlocksComputedSideBySideAreDeduplicated) {
  // 1 and 2 compute the same 2 blocks in one step; once computed, 2 shares 1's (its own
  // copies go free), so its later blocks chain to registered ones and are found again.
  SchedulerHarness h(Cfg(32));
  const auto a = Prompt(8, 5, 1);
  ASSERT_TRUE(h.Add(1, a, MaxTokens(4)).ok());
  ASSERT_TRUE(h.Add(2, a, MaxTokens(4)).ok());
  EXPECT_EQ(h.Step(), "P1@0+13s P2@0+13s");
  const std::vector<const Sequence*> held = h.sched().Sequences();
  ASSERT_EQ(held.size(), 2u);
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(held[0]->block_table[j], held[1]->block_table[j]) << j;
    EXPECT_EQ(h.sched().blocks().ref_count(held[0]->block_table[j]), 2) << j;
  }
  EXPECT_EQ(h.sched().blocks().num_free(), 32 - 5);
  RunAndCheck(h, {{1, a}, {2, a}}, MaxTokens(4));
  ASSERT_TRUE(h.Add(3, a, MaxTokens(1)).ok());
  EXPECT_EQ(h.Step(), "P3@12+1s");
  RunAndCheck(h, {{3, a}}, MaxTokens(1));
}

TEST(SchedulerPrefixTest, LeavesTheLastTokenToCompute) {
  SchedulerHarness h(Cfg(32));
  const auto a = Prompt(12, 0, 0);  // a whole number of blocks
  ASSERT_TRUE(h.Add(1, a, MaxTokens(1)).ok());
  RunAndCheck(h, {{1, a}}, MaxTokens(1));
  ASSERT_TRUE(h.Add(2, a, MaxTokens(1)).ok());
  EXPECT_EQ(h.Step(), "P2@8+4s");  // block 3 holds the last token: computed again for logits
  RunAndCheck(h, {{2, a}}, MaxTokens(1));
}

TEST(SchedulerPrefixTest, EvictsLeastRecentlyUsedTailsFirst) {
  // 6 blocks of 4. A and B each leave 2 cached blocks; C needs 3 and gets 2 free ones and
  // A's tail (A finished first; a sequence's tail goes before its head).
  SchedulerHarness h(Cfg(6));
  const auto a = Prompt(0, 8, 1), b = Prompt(0, 8, 2), c = Prompt(0, 12, 3);
  ASSERT_TRUE(h.Add(1, a, MaxTokens(1)).ok());
  RunAndCheck(h, {{1, a}}, MaxTokens(1));
  ASSERT_TRUE(h.Add(2, b, MaxTokens(1)).ok());
  RunAndCheck(h, {{2, b}}, MaxTokens(1));
  EXPECT_EQ(h.sched().blocks().num_cached(), 4);
  ASSERT_TRUE(h.Add(3, c, MaxTokens(1)).ok());
  RunAndCheck(h, {{3, c}}, MaxTokens(1));
  EXPECT_EQ(h.sched().blocks().num_evictions(), 1);
  // A's head is still cached, its tail is not. Taking it, A2 evicts the next oldest: B's.
  auto a2 = a;
  a2.push_back(7);
  a2.push_back(8);
  ASSERT_TRUE(h.Add(4, a2, MaxTokens(1)).ok());
  EXPECT_EQ(h.Step(), "P4@4+6s");
  RunAndCheck(h, {{4, a2}}, MaxTokens(1));
  auto b2 = b;
  b2.push_back(9);
  ASSERT_TRUE(h.Add(5, b2, MaxTokens(1)).ok());
  EXPECT_EQ(h.Step(), "P5@0+9s");  // B's blocks were the oldest after A's head was taken
  RunAndCheck(h, {{5, b2}}, MaxTokens(1));
}

TEST(SchedulerPrefixTest, CancelGivesSharedBlocksBack) {
  SchedulerHarness h(Cfg(32));
  const auto a = Prompt(8, 2, 1), b = Prompt(8, 2, 2);
  ASSERT_TRUE(h.Add(1, a, MaxTokens(8)).ok());
  h.Step();
  ASSERT_TRUE(h.Add(2, b, MaxTokens(8)).ok());
  h.Step();
  const int32_t shared = h.sched().Sequences()[0]->block_table[0];
  EXPECT_EQ(h.sched().blocks().ref_count(shared), 2);
  ASSERT_TRUE(h.Abort(2));
  EXPECT_EQ(h.sched().blocks().ref_count(shared), 1);
  ASSERT_TRUE(h.Abort(1));
  EXPECT_EQ(h.sched().blocks().ref_count(shared), 0);
  EXPECT_TRUE(h.sched().blocks().registered(shared));
  EXPECT_EQ(h.sched().blocks().num_used(), 0);
}

TEST(SchedulerPrefixTest, PreemptedSequencesRecomputeOnlyWhatWasEvicted) {
  // A pool too small for three 20-token sequences that share 8 prompt tokens: decodes
  // preempt; re-admission takes back the cached blocks. Outputs equal the reference.
  SchedulerConfig cfg = Cfg(11);
  cfg.max_running = 3;
  SchedulerHarness h(cfg);
  std::vector<std::pair<int64_t, std::vector<int32_t>>> seqs;
  for (int64_t id = 1; id <= 3; ++id) {
    seqs.emplace_back(id, Prompt(8, 4, static_cast<int32_t>(id)));
    ASSERT_TRUE(h.Add(id, seqs.back().second, MaxTokens(10)).ok());
  }
  RunAndCheck(h, seqs, MaxTokens(10));
  EXPECT_GT(h.sched().num_preemptions(), 0);
  EXPECT_GT(h.sched().prefix_hit_tokens(), 0);
}

TEST(SchedulerPrefixTest, SaltedRequestsNeverShareAcrossSalts) {
  SchedulerHarness h(Cfg(32));
  const auto a = Prompt(12, 2, 1);
  ASSERT_TRUE(h.Add(1, a, MaxTokens(1), "tenant-x").ok());
  RunAndCheck(h, {{1, a}}, MaxTokens(1));
  ASSERT_TRUE(h.Add(2, a, MaxTokens(1), "tenant-y").ok());
  EXPECT_EQ(h.Step(), "P2@0+14s");
  ASSERT_TRUE(h.Add(3, a, MaxTokens(1)).ok());  // no salt is a salt of its own
  EXPECT_EQ(h.Step(), "P3@0+14s");
  ASSERT_TRUE(h.Add(4, a, MaxTokens(1), "tenant-x").ok());
  EXPECT_EQ(h.Step(), "P4@13+1s C3>12");  // 3 blocks, and a row of 1's partial last block
  RunAndCheck(h, {{2, a}, {3, a}, {4, a}}, MaxTokens(1));
  // A prompt shorter than a block leaves only a partial first block, salted too.
  const auto b = Prompt(0, 3, 2);
  ASSERT_TRUE(h.Add(5, b, MaxTokens(1), "tenant-x").ok());
  RunAndCheck(h, {{5, b}}, MaxTokens(1));
  ASSERT_TRUE(h.Add(6, b, MaxTokens(1), "tenant-y").ok());
  EXPECT_EQ(h.Step(), "P6@0+3s");
  ASSERT_TRUE(h.Add(7, b, MaxTokens(1), "tenant-x").ok());
  EXPECT_EQ(h.Step(), "P7@2+1s C12>14");
  RunAndCheck(h, {{6, b}, {7, b}}, MaxTokens(1));
}

// A chat: each turn resends the conversation so far (prompt ++ generated) plus new tokens.
std::vector<int32_t> NextTurn(const Sequence& last, const std::vector<int32_t>& prompt, int32_t own, int32_t tag) {
  std::vector<int32_t> p = prompt;
  p.insert(p.end(), last.generated.begin(), last.generated.end());
  const std::vector<int32_t> more = Prompt(0, own, tag);
  p.insert(p.end(), more.begin(), more.end());
  return p;
}

TEST(SchedulerPrefixTest, NextTurnCopiesThePartialLastBlock) {
  SchedulerHarness h(Cfg(32));
  const auto a = Prompt(6, 3, 1);  // 9 tokens; 3 generated: 11 computed, 2 blocks and 3 rows
  ASSERT_TRUE(h.Add(1, a, MaxTokens(3)).ok());
  RunAndCheck(h, {{1, a}}, MaxTokens(3));
  EXPECT_EQ(h.sched().blocks().num_cached(), 3);
  const auto b = NextTurn(*h.Finished(1), a, 3, 2);  // 15 tokens
  ASSERT_TRUE(h.Add(2, b, MaxTokens(3)).ok());
  // Blocks 0 and 1 are shared; block 2's 3 rows are copied into a block of 2's own, which
  // computes on from position 11 (the last generated token was never fed).
  EXPECT_EQ(h.Step(), "P2@11+4s C2>3");
  EXPECT_EQ(h.sched().prefix_hit_tokens(), 11);
  RunAndCheck(h, {{2, b}}, MaxTokens(3));
  EXPECT_EQ(h.Finished(2)->num_cached_tokens, 11);
  // A third turn whose own tokens differ from the second's after one row of its partial
  // block: only that row is copied.
  auto c = b;
  c.insert(c.end(), h.Finished(2)->generated.begin(), h.Finished(2)->generated.end());
  c[17] += 1;
  ASSERT_TRUE(h.Add(3, c, MaxTokens(2)).ok());
  EXPECT_EQ(h.Step(), "P3@17+1s C5>6");
  RunAndCheck(h, {{3, c}}, MaxTokens(2));
}

TEST(SchedulerPrefixTest, PartialSourceEvictedInTheSameStepIsCopiedFirst) {
  // 4 blocks. 1 leaves blocks 0, 1 and a partial block 2 cached (LRU: 2, 1, 0); block 3
  // is free. 2 takes 0 and 1, copies 2's rows, and allocates 3 (free) and then 2 itself
  // (evicted): the copy reads 2 before the pass writes position 12 into it.
  SchedulerHarness h(Cfg(4));
  const auto a = Prompt(0, 9, 1);
  ASSERT_TRUE(h.Add(1, a, MaxTokens(3)).ok());
  RunAndCheck(h, {{1, a}}, MaxTokens(3));
  const auto b = NextTurn(*h.Finished(1), a, 2, 2);  // 14 tokens
  ASSERT_TRUE(h.Add(2, b, MaxTokens(1)).ok());
  EXPECT_EQ(h.Step(), "P2@11+3s C2>3");
  EXPECT_EQ(h.sched().blocks().num_evictions(), 1);
  RunAndCheck(h, {{2, b}}, MaxTokens(1));
}

TEST(SchedulerPrefixTest, PartialSourceCanBecomeItsOwnCopy) {
  // 5 blocks, none free once 1 (blocks 0..3, 3 partial) and 9 (block 4) have ended; the
  // LRU holds 3, 2, 1, 0, 4. 2 shares 0..2, and the one block it allocates is the partial
  // block 3 itself (evicted). The copy 3 > 3 is nothing to do; its rows stay.
  SchedulerHarness h(Cfg(5));
  const auto a = Prompt(0, 13, 1), x = Prompt(0, 3, 9);
  ASSERT_TRUE(h.Add(1, a, MaxTokens(3)).ok());
  RunAndCheck(h, {{1, a}}, MaxTokens(3));
  ASSERT_TRUE(h.Add(9, x, MaxTokens(1)).ok());
  RunAndCheck(h, {{9, x}}, MaxTokens(1));
  EXPECT_EQ(h.sched().blocks().num_free(), 0);
  const auto b = NextTurn(*h.Finished(1), a, 0, 2);  // 16 tokens: 15 computed + 1
  ASSERT_TRUE(h.Add(2, b, MaxTokens(1)).ok());
  EXPECT_EQ(h.Step(), "P2@15+1s C3>3");
  RunAndCheck(h, {{2, b}}, MaxTokens(1));
}

TEST(SchedulerPrefixTest, PreemptedAndCancelledSequencesLeaveTheirPartialBlockButFailedOnesDoNot) {
  SchedulerHarness h(Cfg(32));
  const auto a = Prompt(0, 6, 1), b = Prompt(0, 6, 2);
  ASSERT_TRUE(h.Add(1, a, MaxTokens(8)).ok());
  ASSERT_TRUE(h.Add(2, b, MaxTokens(8)).ok());
  EXPECT_EQ(h.Step(), "P1@0+6s P2@0+6s");
  ASSERT_TRUE(h.Abort(1));  // 6 computed: one full block, a partial of 2 rows
  EXPECT_EQ(h.sched().blocks().num_cached(), 2);
  ASSERT_TRUE(h.Abort(2, SequenceState::kFinishedError));  // its full block only
  EXPECT_EQ(h.sched().blocks().num_cached(), 3);
  ASSERT_TRUE(h.Add(3, a, MaxTokens(1)).ok());
  EXPECT_EQ(h.Step(), "P3@5+1s C1>3");
  ASSERT_TRUE(h.Add(4, b, MaxTokens(1)).ok());
  EXPECT_EQ(h.Step(), "P4@4+2s");
  RunAndCheck(h, {{3, a}, {4, b}}, MaxTokens(1));
}

uint64_t ConstantHash(uint64_t, std::span<const int32_t>) { return 42; }

TEST(SchedulerPrefixTest, ForcedHashCollisionIsCaughtAndComputedFresh) {
  SchedulerConfig cfg = Cfg(32);
  cfg.block_hash = ConstantHash;  // every block has the same key
  SchedulerHarness h(cfg);
  const auto a = Prompt(0, 10, 1), b = Prompt(0, 10, 2);
  ASSERT_TRUE(h.Add(1, a, MaxTokens(2)).ok());
  RunAndCheck(h, {{1, a}}, MaxTokens(2));
  ASSERT_TRUE(h.Add(2, b, MaxTokens(2)).ok());
  EXPECT_EQ(h.Step(), "P2@0+10s");  // the key hits A's first block; its tokens differ
  EXPECT_EQ(h.sched().prefix_rejected_hits(), 1);
  RunAndCheck(h, {{2, b}}, MaxTokens(2));
  // Same first block, other second block: the first is shared, the second key's block
  // (A's first, again) fails the parent check.
  auto c = a;
  c[5] = 999;
  ASSERT_TRUE(h.Add(3, c, MaxTokens(2)).ok());
  EXPECT_EQ(h.Step(), "P3@4+6s");
  EXPECT_EQ(h.sched().prefix_rejected_hits(), 2);
  RunAndCheck(h, {{3, c}}, MaxTokens(2));
  // A's partial last block (positions 8, 9) is filed under its parent's key, 42, like
  // every block; after A's first block it would match D's positions 8 and 9, but its parent
  // is A's second block, which D does not have: D computes them.
  auto d = a;
  d[5] = 998;
  ASSERT_TRUE(h.Add(4, d, MaxTokens(2)).ok());
  EXPECT_EQ(h.Step(), "P4@4+6s");
  RunAndCheck(h, {{4, d}}, MaxTokens(2));
}

TEST(SchedulerPrefixTest, OffKeepsNothing) {
  SchedulerConfig cfg = Cfg(32);
  cfg.prefix_caching = false;
  SchedulerHarness h(cfg);
  const auto a = Prompt(12, 2, 1);
  ASSERT_TRUE(h.Add(1, a, MaxTokens(2)).ok());
  RunAndCheck(h, {{1, a}}, MaxTokens(2));
  ASSERT_TRUE(h.Add(2, a, MaxTokens(2)).ok());
  EXPECT_EQ(h.Step(), "P2@0+14s");
  RunAndCheck(h, {{2, a}}, MaxTokens(2));
  EXPECT_EQ(h.sched().blocks().num_cached(), 0);
  EXPECT_EQ(h.sched().prefix_query_tokens(), 0);
}

}  // namespace
}  // namespace llmserve
