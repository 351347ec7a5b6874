// KvPrefetchStream: what a plan covers, and that the kernel's steps issue all of it.
#include "model/ops/paged_attention_prefetch.h"

#include <omp.h>

#include <numeric>
#include <vector>

#include "gtest/gtest.h"
#include "model/kv_cache.h"
#include "model/ops/paged_attention.h"
#include "model/ops/paged_attention_internal.h"
#include "model/ops/isa.h"

namespace llmserve::attention {
namespace {

constexpr int64_t kHeads = 8, kKvHeads = 2, kHeadDim = 64, kBlock = 16, kLayer = 1;
constexpr int64_t kAhead = KvPrefetchStream::kAheadRuns;

// A zeroed bf16 cache and sequences whose block tables are disjoint ranges of ids in
// reverse order (so that run order is not id order).
struct Fixture {
  std::unique_ptr<KvCache> cache;
  std::vector<std::vector<int32_t>> tables;
  std::vector<AttentionSeq> seqs;
  Args args;

  // contexts[i] tokens in sequence i, of which rows[i] are this step's.
  Fixture(const std::vector<int32_t>& contexts, const std::vector<int32_t>& rows) {
    KvCacheConfig c;
    c.num_layers = 2;
    c.num_kv_heads = kKvHeads;
    c.head_dim = kHeadDim;
    c.block_size = kBlock;
    c.dtype = DType::kBF16;
    for (int32_t n : contexts) c.num_blocks += (n + kBlock - 1) / kBlock;
    auto created = KvCache::Create(c);
    EXPECT_TRUE(created.ok()) << created.status();
    cache = std::move(*created);
    int32_t next = static_cast<int32_t>(c.num_blocks);
    int32_t row = 0;
    for (size_t i = 0; i < contexts.size(); ++i) {
      std::vector<int32_t> table(static_cast<size_t>((contexts[i] + kBlock - 1) / kBlock));
      for (int32_t& id : table) id = --next;
      tables.push_back(std::move(table));
    }
    for (size_t i = 0; i < contexts.size(); ++i) {
      seqs.push_back(AttentionSeq{row, rows[i], contexts[i], tables[i]});
      row += rows[i];
    }
    args.cache = cache.get();
    args.layer = kLayer;
    args.seqs = seqs.data();
    args.num_heads = kHeads;
    args.group = kHeads / kKvHeads;
    args.kv_prefetch = true;
  }

  // Run r of (sequence, KV head) in the kernel's reading order.
  const uint8_t* Run(int32_t seq, int32_t head, int64_t r) const {
    const int32_t block = tables[static_cast<size_t>(seq)][static_cast<size_t>(r / 2)];
    return r % 2 == 0 ? cache->K(kLayer, block, head) : cache->V(kLayer, block, head);
  }
};

int64_t LinesPerRun(const KvCache& cache) { return (static_cast<int64_t>(cache.run_bytes()) + 63) / 64; }

TEST(KvPrefetchStreamTest, PlansTheTaskPastTheDistanceThenTheSuccessorsHead) {
  Fixture f({400, 100}, {1, 1});  // 25 blocks = 50 runs; 7 blocks = 14 runs
  const Task task{0, 1, 0, 1}, successor{1, 0, 0, 1};
  KvPrefetchStream stream;
  stream.Plan(f.args, task, &successor, 1000);
  std::vector<const uint8_t*> want;
  for (int64_t r = kAhead; r < 50; ++r) want.push_back(f.Run(0, 1, r));
  for (int64_t r = 0; r < std::min<int64_t>(kAhead, 14); ++r) want.push_back(f.Run(1, 0, r));
  ASSERT_EQ(stream.plan().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(stream.plan()[i], want[i]) << "run " << i;
  EXPECT_EQ(stream.pending_lines(), static_cast<int64_t>(want.size()) * LinesPerRun(*f.cache));
}

TEST(KvPrefetchStreamTest, IssuesTheWholePlanInTheGivenSteps) {
  Fixture f({300, 300}, {1, 1});
  const Task task{0, 0, 0, 1}, successor{1, 1, 0, 1};
  KvPrefetchStream stream;
  const int64_t steps = 333;  // lines do not divide evenly
  stream.Plan(f.args, task, &successor, steps);
  const int64_t lines = stream.pending_lines();
  ASSERT_GT(lines, steps);
  for (int64_t i = 0; i < steps / 2; ++i) stream.Step();
  EXPECT_GT(stream.pending_lines(), 0);
  EXPECT_LT(stream.pending_lines(), lines);
  for (int64_t i = steps / 2; i < steps; ++i) stream.Step();
  EXPECT_EQ(stream.pending_lines(), 0);
  stream.Step();  // past the end: nothing
  EXPECT_EQ(stream.pending_lines(), 0);
}

TEST(KvPrefetchStreamTest, ShortTaskPlansOnlyTheSuccessor) {
  Fixture f({64, 48}, {1, 1});  // 4 blocks (8 runs, all within the distance), 3 blocks
  const Task task{0, 0, 0, 1}, successor{1, 0, 0, 1};
  KvPrefetchStream stream;
  stream.Plan(f.args, task, &successor, 10);
  ASSERT_EQ(stream.plan().size(), 6u);
  for (int64_t r = 0; r < 6; ++r) EXPECT_EQ(stream.plan()[static_cast<size_t>(r)], f.Run(1, 0, r));
  stream.Plan(f.args, task, nullptr, 10);  // the thread's last task
  EXPECT_TRUE(stream.plan().empty());
  EXPECT_EQ(stream.pending_lines(), 0);
}

TEST(KvPrefetchStreamTest, PrefillChunkGetsNoPlan) {
  Fixture f({400, 400}, {64, 1});
  const Task chunk{0, 0, 0, 64}, decode{1, 0, 0, 1};
  KvPrefetchStream stream;
  stream.Plan(f.args, decode, &chunk, 100);
  EXPECT_FALSE(stream.plan().empty());
  stream.Plan(f.args, chunk, &decode, 100);
  EXPECT_TRUE(stream.plan().empty());
  EXPECT_EQ(stream.pending_lines(), 0);
}

// The kernel's pacing: its inner loops call Step() as often as RunTask planned, so each
// decode task has issued its whole stream (the successor's head included) when it ends.
// A plan paced over too many steps would leave lines pending here.
TEST(KvPrefetchStreamTest, DecodeKernelIssuesItsWholeStream) {
  const Isa isa = CpuFeatures::Detect().isa();
  if (!HasAvx512(isa)) GTEST_SKIP() << "the stream belongs to the AVX-512 kernel; this CPU has none";
  for (int32_t context : {17, 200, 1000}) {
    // One sequence, one row, on one thread: the tasks are its KV heads in order, so the
    // last task plans no successor and its own runs past the distance.
    Fixture f({context}, {1});
    std::vector<float> q(static_cast<size_t>(kHeads * kHeadDim), 0.5f), out(q.size());
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    PagedAttention(AttentionOptions{isa, true}, *f.cache, kLayer, f.seqs, q.data(), kHeads * kHeadDim, kHeads, 0.125f,
                   out.data(), kHeads * kHeadDim);
    omp_set_num_threads(saved);
    const KvPrefetchStream& stream = ThreadPrefetchStream();
    const int64_t runs = 2 * ((context + kBlock - 1) / kBlock);
    EXPECT_EQ(static_cast<int64_t>(stream.plan().size()), std::max<int64_t>(0, runs - kAhead)) << context;
    EXPECT_EQ(stream.pending_lines(), 0) << "context " << context;
  }
}

// With AttentionOptions::kv_prefetch off, neither a plan nor the kernel issues a stream.
TEST(KvPrefetchStreamTest, OffPlansNothing) {
  Fixture f({300, 300}, {1, 1});
  f.args.kv_prefetch = false;
  const Task decode{0, 0, 0, 1}, next{1, 0, 0, 1};
  KvPrefetchStream stream;
  stream.Plan(f.args, decode, &next, 100);
  EXPECT_TRUE(stream.plan().empty());
  EXPECT_EQ(stream.pending_lines(), 0);
  const Isa isa = CpuFeatures::Detect().isa();
  if (!HasAvx512(isa)) return;  // the scalar kernel has no stream
  std::vector<float> q(static_cast<size_t>(2 * kHeads * kHeadDim), 0.5f), out(q.size());
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  PagedAttention(AttentionOptions{isa, false}, *f.cache, kLayer, f.seqs, q.data(), kHeads * kHeadDim, kHeads, 0.125f,
                 out.data(), kHeads * kHeadDim);
  omp_set_num_threads(saved);
  EXPECT_TRUE(ThreadPrefetchStream().plan().empty());
}

}  // namespace
}  // namespace llmserve::attention
