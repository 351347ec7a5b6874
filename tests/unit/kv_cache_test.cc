#include "model/kv_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace llmserve {
namespace {

KvCacheConfig Geometry(int64_t layers, int64_t heads, int64_t hd, int64_t bs, DType dtype, int64_t blocks) {
  KvCacheConfig c;
  c.num_layers = layers;
  c.num_kv_heads = heads;
  c.head_dim = hd;
  c.block_size = bs;
  c.dtype = dtype;
  c.num_blocks = blocks;
  return c;
}

TEST(KvCacheConfigTest, ForModelTakesGeometry) {
  ModelConfig m;
  m.num_layers = 22;
  m.num_heads = 32;
  m.num_kv_heads = 4;
  m.head_dim = 64;
  KvCacheConfig c = KvCacheConfig::ForModel(m, 32, DType::kBF16);
  EXPECT_EQ(c.num_layers, 22);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.block_size, 32);
  EXPECT_EQ(c.dtype, DType::kBF16);
  EXPECT_EQ(c.num_blocks, 0);
}

TEST(KvCacheConfigTest, BytesPerBlockAndBudget) {
  KvCacheConfig c = Geometry(22, 4, 64, 16, DType::kF32, 0);
  // K and V, 22 layers, 4 heads, 16 tokens of 64 floats.
  const size_t per = size_t{2} * 22 * 4 * 16 * 64 * 4;
  EXPECT_EQ(c.BytesPerBlock(), per);
  c.SetBlocksFromBytes(per * 100 + per - 1);
  EXPECT_EQ(c.num_blocks, 100);
  c.SetBlocksFromBytes(per - 1);
  EXPECT_EQ(c.num_blocks, 0);
  c.dtype = DType::kBF16;
  EXPECT_EQ(c.BytesPerBlock(), per / 2);
  c.SetBlocksFromBytes(size_t{10} << 30);  // 10 GiB
  EXPECT_EQ(c.num_blocks, static_cast<int64_t>((size_t{10} << 30) / (per / 2)));
  // An invalid geometry has no block size and fits no block.
  c.head_dim = 0;
  EXPECT_EQ(c.BytesPerBlock(), 0u);
  c.SetBlocksFromBytes(size_t{1} << 30);
  EXPECT_EQ(c.num_blocks, 0);
}

TEST(KvCacheConfigTest, ValidateRejectsBadGeometry) {
  EXPECT_TRUE(Geometry(2, 2, 8, 16, DType::kF32, 4).Validate().ok());
  EXPECT_TRUE(Geometry(1, 1, 7, 1, DType::kF32, 1).Validate().ok());  // odd head_dim is fine in f32
  EXPECT_TRUE(Geometry(1, 1, 8, 1024, DType::kBF16, 1).Validate().ok());
  struct Bad {
    KvCacheConfig c;
    const char* needle;
  };
  const Bad bad[] = {
      {Geometry(2, 2, 8, 16, DType::kF16, 4), "dtype"},
      {Geometry(0, 2, 8, 16, DType::kF32, 4), "num_layers"},
      {Geometry(2, -1, 8, 16, DType::kF32, 4), "num_kv_heads"},
      {Geometry(2, 2, 0, 16, DType::kF32, 4), "head_dim"},
      {Geometry(2, 2, 7, 16, DType::kBF16, 4), "even head_dim"},
      {Geometry(2, 2, 8, 0, DType::kF32, 4), "block_size"},
      {Geometry(2, 2, 8, 1025, DType::kF32, 4), "block_size"},
      {Geometry(2, 2, 8, 16, DType::kF32, 0), "num_blocks"},
      {Geometry(2, 2, 8, 16, DType::kF32, int64_t{1} << 31), "32-bit"},
  };
  for (const Bad& b : bad) {
    absl::Status s = b.c.Validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find(b.needle), absl::string_view::npos) << s;
  }
}

TEST(KvCacheConfigTest, ValidateRefusesAbsurdTotals) {
  // 1M layers x 1M heads x 1M dims x 1024 tokens overflows 64 bits per block.
  KvCacheConfig c = Geometry(int64_t{1} << 20, int64_t{1} << 20, int64_t{1} << 20, 1024, DType::kF32, 1);
  EXPECT_EQ(c.Validate().code(), absl::StatusCode::kInvalidArgument);
  // Fits 64 bits but is far beyond any machine: 2^30 blocks of 2^19 bytes = 2^49 bytes.
  c = Geometry(8, 8, 1024, 1, DType::kF32, int64_t{1} << 30);  // 2*8*8*1024*4 = 2^19 bytes/block
  absl::Status s = c.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("562949953421312 bytes"), absl::string_view::npos) << s;  // 2^49
}

TEST(KvCacheTest, CreateRejectsInvalidAndOversizedConfigs) {
  EXPECT_EQ(KvCache::Create(Geometry(2, 2, 8, 16, DType::kF32, 0)).status().code(), absl::StatusCode::kInvalidArgument);
  const uint64_t phys = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (phys == 0 || phys > (uint64_t{1} << 38)) GTEST_SKIP() << "physical memory unknown or above 256 GiB";
  // Twice the machine's memory, well under the absolute limit.
  KvCacheConfig c = Geometry(4, 8, 128, 16, DType::kF32, 0);
  c.SetBlocksFromBytes(static_cast<size_t>(2 * phys));
  absl::StatusOr<std::unique_ptr<KvCache>> cache = KvCache::Create(c);
  EXPECT_EQ(cache.status().code(), absl::StatusCode::kResourceExhausted) << cache.status();
  EXPECT_NE(cache.status().message().find("physical memory"), absl::string_view::npos);
}

// Resident set size of this process in bytes (Linux /proc/self/statm).
size_t ResidentBytes() {
  std::ifstream f("/proc/self/statm");
  size_t total = 0, resident = 0;
  f >> total >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

TEST(KvCacheTest, LargeCacheIsZeroAndNotResidentUntilTouched) {
  KvCacheConfig c = Geometry(4, 4, 64, 16, DType::kF32, 0);
  c.SetBlocksFromBytes(size_t{1} << 30);  // 1 GiB
  const size_t before = ResidentBytes();
  absl::StatusOr<std::unique_ptr<KvCache>> cache = KvCache::Create(c);
  ASSERT_TRUE(cache.ok()) << cache.status();
  EXPECT_EQ((*cache)->total_bytes(), c.BytesPerBlock() * static_cast<size_t>(c.num_blocks));
  EXPECT_GT((*cache)->total_bytes(), size_t{1000} << 20);
  EXPECT_LT(ResidentBytes(), before + (size_t{64} << 20));  // lazily zero-filled pages
  // A few scattered runs read as zero.
  for (int64_t b : {int64_t{0}, c.num_blocks / 2, c.num_blocks - 1}) {
    const uint8_t* k = (*cache)->K(3, b, 3);
    const uint8_t* v = (*cache)->V(0, b, 0);
    EXPECT_TRUE(std::all_of(k, k + 16 * 64 * 4, [](uint8_t x) { return x == 0; }));
    EXPECT_TRUE(std::all_of(v, v + 16 * 64 * 4, [](uint8_t x) { return x == 0; }));
  }
}

TEST(KvCacheTest, RunsAreAlignedAndDisjoint) {
  KvCacheConfig c = Geometry(3, 2, 8, 16, DType::kBF16, 5);
  auto cache = KvCache::Create(c);
  ASSERT_TRUE(cache.ok()) << cache.status();
  KvCache& kv = **cache;
  const size_t run = 16 * 8 * 2;
  EXPECT_EQ(kv.total_bytes(), 2 * 3 * 5 * 2 * run);
  for (int64_t l = 0; l < 3; ++l) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(kv.K(l, 0, 0)) % 64, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(kv.V(l, 0, 0)) % 64, 0u);
    for (int64_t b = 0; b < 5; ++b) {
      EXPECT_EQ(kv.K(l, b, 1), kv.K(l, b, 0) + run);
      EXPECT_EQ(kv.V(l, b, 0), kv.V(l, 0, 0) + b * 2 * run);
    }
  }
  EXPECT_NE(kv.K(0, 0, 0), kv.K(1, 0, 0));
  EXPECT_NE(kv.K(0, 0, 0), kv.V(0, 0, 0));
}

// A bf16 run holds an even number of slots (V in token pairs): block size 7 takes 8.
TEST(KvCacheTest, Bf16RunsOfOddBlocksHoldWholePairs) {
  auto cache = KvCache::Create(Geometry(1, 2, 8, 7, DType::kBF16, 3));
  ASSERT_TRUE(cache.ok()) << cache.status();
  const size_t run = 8 * 8 * 2;
  EXPECT_EQ((*cache)->V(0, 0, 1), (*cache)->V(0, 0, 0) + run);
  EXPECT_EQ((*cache)->V(0, 1, 0), (*cache)->V(0, 0, 0) + 2 * run);
  EXPECT_EQ((*cache)->total_bytes(), 2 * 3 * 2 * run);
  EXPECT_EQ(Geometry(1, 2, 8, 7, DType::kF32, 3).BytesPerBlock(), 2 * 2 * 7 * 8 * 4u);
}

struct RoundTripCase {
  DType dtype;
  int64_t head_dim;
  int64_t block_size;
};

class KvCacheRoundTripTest : public ::testing::TestWithParam<RoundTripCase> {};

// Writes every position of two sequences with shuffled, interleaved block tables and
// reads each token back, through ReadK/ReadV and through the raw layout of the header.
TEST_P(KvCacheRoundTripTest, WriteThenRead) {
  const RoundTripCase p = GetParam();
  const int64_t layers = 2, heads = 3, hd = p.head_dim, bs = p.block_size, kv_dim = heads * hd;
  const int64_t len[2] = {37, 53};
  const int64_t blocks_per_seq[2] = {(len[0] + bs - 1) / bs, (len[1] + bs - 1) / bs};
  const int64_t num_blocks = blocks_per_seq[0] + blocks_per_seq[1] + 3;
  auto cache = KvCache::Create(Geometry(layers, heads, hd, bs, p.dtype, num_blocks));
  ASSERT_TRUE(cache.ok()) << cache.status();
  KvCache& kv = **cache;

  std::mt19937 rng(7);
  std::vector<int32_t> ids(static_cast<size_t>(num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<int32_t> table[2];
  table[0].assign(ids.begin(), ids.begin() + blocks_per_seq[0]);
  table[1].assign(ids.begin() + blocks_per_seq[0], ids.begin() + blocks_per_seq[0] + blocks_per_seq[1]);

  std::normal_distribution<float> normal(0.0f, 3.0f);
  const int64_t stride = 3 * kv_dim + 5;  // rows as in a fused QKV buffer, plus padding
  std::vector<float> data[2];
  for (int s = 0; s < 2; ++s) {
    data[s].resize(static_cast<size_t>(len[s] * stride));
    for (float& x : data[s]) x = normal(rng);
    // Values bf16 must round: exact ties, and one subnormal.
    data[s][0] = 1.0f + std::ldexp(1.0f, -8);
    data[s][1] = 1.0f + 3 * std::ldexp(1.0f, -8);
    data[s][2] = std::ldexp(1.5f, -130);
    // Positions written in a scrambled order, a few rows per call, into layer 1.
    std::vector<int32_t> order(static_cast<size_t>(len[s]));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i = 0; i < order.size();) {
      const size_t n = std::min<size_t>(1 + rng() % 4, order.size() - i);
      // Gather those rows contiguously (Write takes consecutive rows with any positions).
      std::vector<float> rows(n * static_cast<size_t>(stride));
      for (size_t j = 0; j < n; ++j) {
        std::copy_n(data[s].begin() + order[i + j] * stride, stride, rows.begin() + static_cast<int64_t>(j) * stride);
      }
      kv.Write(CpuFeatures::Detect().isa(), 1, rows.data(), rows.data() + 2 * kv_dim, stride, static_cast<int64_t>(n),
               order.data() + i, table[s].data(), static_cast<int64_t>(table[s].size()));
      i += n;
    }
  }

  auto expect = [&](float x) { return p.dtype == DType::kF32 ? x : BF16ToF32(F32ToBF16(x)); };
  std::vector<float> got(static_cast<size_t>(hd));
  for (int s = 0; s < 2; ++s) {
    for (int64_t pos = 0; pos < len[s]; ++pos) {
      const int64_t block = table[s][static_cast<size_t>(pos / bs)], slot = pos % bs;
      for (int64_t h = 0; h < heads; ++h) {
        const float* k = data[s].data() + pos * stride + h * hd;
        const float* v = k + 2 * kv_dim;
        kv.ReadK(1, block, h, slot, got.data());
        for (int64_t d = 0; d < hd; ++d) ASSERT_EQ(got[d], expect(k[d])) << "K pos " << pos << " d " << d;
        kv.ReadV(1, block, h, slot, got.data());
        for (int64_t d = 0; d < hd; ++d) ASSERT_EQ(got[d], expect(v[d])) << "V pos " << pos << " d " << d;
        // The layout of the header, read raw.
        const uint8_t* kr = kv.K(1, block, h);
        const uint8_t* vr = kv.V(1, block, h);
        for (int64_t d = 0; d < hd; ++d) {
          if (p.dtype == DType::kF32) {
            float x, y;
            std::memcpy(&x, kr + (d * bs + slot) * 4, 4);
            std::memcpy(&y, vr + (slot * hd + d) * 4, 4);
            ASSERT_EQ(x, k[d]);
            ASSERT_EQ(y, v[d]);
          } else {
            uint16_t x, y;
            std::memcpy(&x, kr + (((d / 2) * bs + slot) * 2 + d % 2) * 2, 2);
            std::memcpy(&y, vr + (((slot / 2) * hd + d) * 2 + slot % 2) * 2, 2);
            ASSERT_EQ(x, F32ToBF16(k[d]));
            ASSERT_EQ(y, F32ToBF16(v[d]));
          }
        }
      }
    }
  }
  // Layer 0 and the unused blocks were never written.
  const int64_t block_bytes = heads * bs * hd * static_cast<int64_t>(DTypeSize(p.dtype));
  for (int64_t b = 0; b < num_blocks; ++b) {
    const uint8_t* k0 = kv.K(0, b, 0);
    EXPECT_TRUE(std::all_of(k0, k0 + block_bytes, [](uint8_t x) { return x == 0; }));
  }
  for (int64_t i = blocks_per_seq[0] + blocks_per_seq[1]; i < num_blocks; ++i) {
    const uint8_t* v1 = kv.V(1, ids[static_cast<size_t>(i)], 0);
    EXPECT_TRUE(std::all_of(v1, v1 + block_bytes, [](uint8_t x) { return x == 0; }));
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, KvCacheRoundTripTest,
                         ::testing::Values(RoundTripCase{DType::kF32, 8, 16}, RoundTripCase{DType::kF32, 80, 5},
                                           RoundTripCase{DType::kF32, 7, 1}, RoundTripCase{DType::kBF16, 8, 16},
                                           RoundTripCase{DType::kBF16, 80, 7}, RoundTripCase{DType::kBF16, 1030, 32}));

TEST(KvCacheTest, Bf16WriteMatchesScalarConversionBitForBit) {
  // Special values: ties to even, NaN, infinities, the largest float, subnormals, -0.
  const std::vector<float> special = {0.0f,
                                      -0.0f,
                                      1.0f + std::ldexp(1.0f, -8),
                                      -1.0f - 3 * std::ldexp(1.0f, -8),
                                      std::numeric_limits<float>::infinity(),
                                      -std::numeric_limits<float>::infinity(),
                                      std::numeric_limits<float>::quiet_NaN(),
                                      std::numeric_limits<float>::max(),
                                      std::numeric_limits<float>::denorm_min(),
                                      std::ldexp(1.5f, -130)};
  const int64_t hd = 40;
  auto cache = KvCache::Create(Geometry(1, 1, hd, 4, DType::kBF16, 1));
  ASSERT_TRUE(cache.ok());
  std::vector<float> row(2 * hd);
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> bits;
  for (int64_t i = 0; i < 2 * hd; ++i) {
    if (i < static_cast<int64_t>(special.size())) {
      row[i] = special[i];
    } else {
      const uint32_t u = bits(rng);
      std::memcpy(&row[i], &u, 4);
    }
  }
  const int32_t pos = 2, table = 0;
  // The AVX-512 conversion where this CPU has it, and the scalar one.
  for (Isa isa : {CpuFeatures::Detect().isa(), Isa::kScalar}) {
    (*cache)->Write(isa, 0, row.data(), row.data() + hd, 2 * hd, 1, &pos, &table, 1);
    for (int64_t d = 0; d < hd; ++d) {
      uint16_t k, v;
      std::memcpy(&k, (*cache)->K(0, 0, 0) + (((d / 2) * 4 + pos) * 2 + d % 2) * 2, 2);
      std::memcpy(&v, (*cache)->V(0, 0, 0) + (((pos / 2) * hd + d) * 2 + pos % 2) * 2, 2);
      EXPECT_EQ(k, F32ToBF16(row[d])) << IsaName(isa) << " " << d;
      EXPECT_EQ(v, F32ToBF16(row[hd + d])) << IsaName(isa) << " " << d;
    }
  }
}

}  // namespace
}  // namespace llmserve
