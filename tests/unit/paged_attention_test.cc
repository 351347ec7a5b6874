#include "model/ops/paged_attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "model/kv_cache.h"
#include "model/ops/paged_attention_internal.h"
#include "model/ops/simd_math.h"
#include "model/runtime_config.h"

namespace llmserve {
namespace {

using attention::Impl;

struct Geometry {
  int64_t heads, kv_heads, head_dim, block_size;
  DType dtype;
};

// Sequence shape: rows this step after `cached` tokens already in the cache.
struct Shape {
  int32_t rows, cached;
};

// A random problem: a cache holding every sequence's K/V (layer 1 of 2), queries, and
// the original f32 K/V for the reference.
struct Problem {
  Geometry g;
  std::unique_ptr<KvCache> cache;
  std::vector<std::vector<int32_t>> tables;
  std::vector<AttentionSeq> seqs;
  std::vector<std::vector<float>> k, v;  // per sequence: [context][kv_heads][head_dim]
  std::vector<float> q;                  // [rows][q_stride]
  int64_t q_stride = 0, out_stride = 0, total_rows = 0;
};

constexpr int64_t kLayer = 1;

Problem MakeProblem(const Geometry& g, const std::vector<Shape>& shapes, uint32_t seed, float q_scale = 1.0f) {
  Problem p;
  p.g = g;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t hd = g.head_dim, bs = g.block_size, kv_dim = g.kv_heads * hd;
  int64_t blocks = 0;
  for (const Shape& s : shapes) blocks += (s.cached + s.rows + bs - 1) / bs;
  KvCacheConfig c;
  c.num_layers = 2;
  c.num_kv_heads = g.kv_heads;
  c.head_dim = hd;
  c.block_size = bs;
  c.dtype = g.dtype;
  c.num_blocks = blocks + 5;
  auto cache = KvCache::Create(c);
  EXPECT_TRUE(cache.ok()) << cache.status();
  p.cache = std::move(*cache);
  // Shuffled block ids: tables are non-contiguous and interleaved between sequences.
  std::vector<int32_t> ids(static_cast<size_t>(c.num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  size_t next = 0;
  p.q_stride = g.heads * hd + 2 * kv_dim;  // as in a fused QKV buffer
  p.out_stride = g.heads * hd + 3;
  for (const Shape& s : shapes) {
    const int32_t context = s.cached + s.rows;
    std::vector<int32_t> table(static_cast<size_t>((context + bs - 1) / bs));
    for (int32_t& id : table) id = ids[next++];
    p.tables.push_back(std::move(table));
    std::vector<float> k(static_cast<size_t>(context * kv_dim)), v(k.size());
    for (float& x : k) x = normal(rng);
    for (float& x : v) x = normal(rng);
    std::vector<int32_t> positions(static_cast<size_t>(context));
    std::iota(positions.begin(), positions.end(), 0);
    // The cached prefix and the chunk in separate writes, as an engine does; the other
    // layer gets unrelated values.
    for (auto [from, n] : {std::pair<int32_t, int32_t>{0, s.cached}, {s.cached, s.rows}}) {
      if (n == 0) continue;
      p.cache->Write(kLayer, k.data() + from * kv_dim, v.data() + from * kv_dim, kv_dim, n, positions.data() + from,
                     p.tables.back().data(), static_cast<int64_t>(p.tables.back().size()));
      p.cache->Write(0, v.data() + from * kv_dim, k.data() + from * kv_dim, kv_dim, n, positions.data() + from,
                     p.tables.back().data(), static_cast<int64_t>(p.tables.back().size()));
    }
    p.k.push_back(std::move(k));
    p.v.push_back(std::move(v));
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    AttentionSeq a;
    a.row_start = static_cast<int32_t>(p.total_rows);
    a.rows = shapes[i].rows;
    a.context = shapes[i].cached + shapes[i].rows;
    a.block_table = p.tables[i];
    p.seqs.push_back(a);
    p.total_rows += a.rows;
  }
  p.q.resize(static_cast<size_t>(p.total_rows * p.q_stride));
  for (float& x : p.q) x = normal(rng) * q_scale;
  return p;
}

float RoundBF16(float x) { return BF16ToF32(F32ToBF16(x)); }

// Naive reference in double: the full score matrix of each (sequence, head), softmax,
// weighted sum of V. `round_kv` rounds K/V to bf16 first.
std::vector<double> Reference(const Problem& p, bool round_kv) {
  const int64_t hd = p.g.head_dim, kv_dim = p.g.kv_heads * hd, group = p.g.heads / p.g.kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  std::vector<double> out(static_cast<size_t>(p.total_rows * p.g.heads * hd));
  auto kv = [&](float x) { return static_cast<double>(round_kv ? RoundBF16(x) : x); };
  for (size_t si = 0; si < p.seqs.size(); ++si) {
    const AttentionSeq& s = p.seqs[si];
    for (int64_t h = 0; h < p.g.heads; ++h) {
      const int64_t kvh = h / group;
      std::vector<double> scores(static_cast<size_t>(s.rows) * s.context, -INFINITY);
      for (int64_t r = 0; r < s.rows; ++r) {
        const int64_t pos = s.context - s.rows + r;
        const float* q = p.q.data() + (s.row_start + r) * p.q_stride + h * hd;
        for (int64_t t = 0; t <= pos; ++t) {
          double dot = 0;
          for (int64_t d = 0; d < hd; ++d) dot += double{q[d]} * kv(p.k[si][t * kv_dim + kvh * hd + d]);
          scores[r * s.context + t] = dot * scale;
        }
      }
      for (int64_t r = 0; r < s.rows; ++r) {
        double* row = scores.data() + r * s.context;
        const double mx = *std::max_element(row, row + s.context);
        double sum = 0;
        for (int64_t t = 0; t < s.context; ++t) sum += (row[t] = std::exp(row[t] - mx));
        double* o = out.data() + ((s.row_start + r) * p.g.heads + h) * hd;
        for (int64_t t = 0; t < s.context; ++t) {
          for (int64_t d = 0; d < hd; ++d) o[d] += row[t] / sum * kv(p.v[si][t * kv_dim + kvh * hd + d]);
        }
      }
    }
  }
  return out;
}

constexpr float kSentinel = 12345.0f;

// A kernel under test: scalar, or AVX-512 with the instruction sets capped to `cap`
// (so that one CPU with AVX512_BF16 covers both ways of computing a bf16 cache).
struct Kernel {
  Impl impl;
  simd::IsaCap cap;
  const char* name;
};

// Caps the instruction sets for its lifetime.
struct IsaScope {
  explicit IsaScope(simd::IsaCap cap) { simd::SetIsaCapForTesting(cap); }
  ~IsaScope() { simd::SetIsaCapForTesting(simd::IsaCap::kNative); }
};

const Kernel kScalarKernel{Impl::kScalar, simd::IsaCap::kNative, "scalar"};

std::vector<Kernel> Kernels() {
  std::vector<Kernel> kernels = {kScalarKernel};
  if (CpuHasAvx512()) kernels.push_back({Impl::kAvx512, simd::IsaCap::kNative, "avx512"});
  if (CpuHasAvx512Bf16()) kernels.push_back({Impl::kAvx512, simd::IsaCap::kNoAvx512Bf16, "avx512 without bf16 math"});
  return kernels;
}

// The AVX-512 kernel computes a bf16 cache with vdpbf16ps where the CPU (and the cap)
// allow: queries and probabilities are rounded to bf16 too.
bool RoundsToBf16(const Kernel& k, DType cache) {
  return cache == DType::kBF16 && k.impl == Impl::kAvx512 && k.cap == simd::IsaCap::kNative && CpuHasAvx512Bf16();
}

// Max error relative to the outputs' magnitude against the reference over the cached
// K/V: f32 arithmetic keeps ~1e-5; rounding queries and probabilities to bf16 (8 bits)
// ~1e-3, bounded by 4e-3 (about one bf16 ulp of the largest output).
double Tolerance(const Kernel& k, DType cache) { return RoundsToBf16(k, cache) ? 4e-3 : 1e-5; }

std::vector<float> RunAttention(const Problem& p, const Kernel& k) {
  const IsaScope isa(k.cap);
  std::vector<float> out(static_cast<size_t>(p.total_rows * p.out_stride), kSentinel);
  attention::PagedAttentionWith(k.impl, *p.cache, kLayer, p.seqs, p.q.data(), p.q_stride, p.g.heads,
                                1.0f / std::sqrt(static_cast<float>(p.g.head_dim)), out.data(), p.out_stride);
  return out;
}

// Max |out - ref| over all outputs; the padding between rows must be untouched.
double MaxDiff(const Problem& p, const std::vector<float>& out, const std::vector<double>& ref) {
  const int64_t width = p.g.heads * p.g.head_dim;
  double worst = 0;
  for (int64_t r = 0; r < p.total_rows; ++r) {
    for (int64_t i = 0; i < width; ++i) {
      const double d = std::fabs(out[r * p.out_stride + i] - ref[r * width + i]);
      worst = std::isnan(d) ? INFINITY : std::max(worst, d);
    }
    for (int64_t i = width; i < p.out_stride; ++i) EXPECT_EQ(out[r * p.out_stride + i], kSentinel);
  }
  return worst;
}

double MaxAbs(const std::vector<double>& x) {
  double m = 0;
  for (double y : x) m = std::max(m, std::fabs(y));
  return m;
}

// A mixed batch: decode rows of contexts up to ~300 and prefill chunks of 1..70 rows
// after cached prefixes of 0..200 (including the first chunk of a prompt).
std::vector<Shape> MixedShapes(uint32_t seed, int decodes, int prefills) {
  std::mt19937 rng(seed);
  std::vector<Shape> shapes;
  for (int i = 0; i < std::max(decodes, prefills); ++i) {
    if (i < decodes) shapes.push_back({1, static_cast<int32_t>(rng() % 300)});
    if (i < prefills) {
      shapes.push_back({static_cast<int32_t>(1 + rng() % 70), i == 0 ? 0 : static_cast<int32_t>(rng() % 201)});
    }
  }
  shapes.push_back({70, 0});
  shapes.push_back({1, 0});  // decode of a one-token context
  return shapes;
}


class PagedAttentionTest : public ::testing::TestWithParam<Geometry> {};

TEST_P(PagedAttentionTest, MatchesDoubleReference) {
  const Geometry g = GetParam();
  Problem p = MakeProblem(g, MixedShapes(11 + static_cast<uint32_t>(g.head_dim), 8, 8), 5);
  const std::vector<double> exact = Reference(p, g.dtype == DType::kBF16);
  const double mag = MaxAbs(exact);
  for (const Kernel& kernel : Kernels()) {
    const std::vector<float> out = RunAttention(p, kernel);
    EXPECT_LE(MaxDiff(p, out, exact), Tolerance(kernel, g.dtype) * mag) << kernel.name;
    if (g.dtype == DType::kBF16) {
      // Against the unrounded K/V only bf16's precision (8 bits) holds.
      EXPECT_LE(MaxDiff(p, out, Reference(p, false)), 2e-2 * mag) << kernel.name;
    }
  }
}

TEST_P(PagedAttentionTest, ThreadCountDoesNotChangeBits) {
  if (!CpuHasAvx512()) GTEST_SKIP() << "no AVX-512";
  const Geometry g = GetParam();
  Problem p = MakeProblem(g, MixedShapes(3, 6, 6), 9);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const Kernel avx512{Impl::kAvx512, simd::IsaCap::kNative, "avx512"};
  const std::vector<float> one = RunAttention(p, avx512);
  omp_set_num_threads(2);
  const std::vector<float> two = RunAttention(p, avx512);
  omp_set_num_threads(saved);
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0);
}

// A sequence's output does not depend on the rest of the batch (bit for bit).
TEST_P(PagedAttentionTest, BatchedEqualsAlone) {
  const Geometry g = GetParam();
  Problem p = MakeProblem(g, MixedShapes(4, 3, 3), 21);
  for (const Kernel& kernel : Kernels()) {
    const std::vector<float> batched = RunAttention(p, kernel);
    const IsaScope isa(kernel.cap);
    const int64_t width = g.heads * g.head_dim;
    for (const AttentionSeq& s : p.seqs) {
      AttentionSeq alone = s;
      alone.row_start = 0;
      std::vector<float> out(static_cast<size_t>(s.rows * width));
      attention::PagedAttentionWith(kernel.impl, *p.cache, kLayer, {&alone, 1}, p.q.data() + s.row_start * p.q_stride,
                                    p.q_stride, g.heads, 1.0f / std::sqrt(static_cast<float>(g.head_dim)), out.data(),
                                    width);
      for (int64_t r = 0; r < s.rows; ++r) {
        ASSERT_EQ(std::memcmp(out.data() + r * width, batched.data() + (s.row_start + r) * p.out_stride,
                              static_cast<size_t>(width) * sizeof(float)),
                  0)
            << kernel.name << " row " << r;
      }
    }
  }
}

// A prompt computed in chunks of 1, 7 or 64 rows gives each row the bits it gets from one
// whole-prompt chunk (what makes chunked prefill reproduce unchunked outputs exactly).
TEST_P(PagedAttentionTest, ChunkingDoesNotChangeBits) {
  const Geometry g = GetParam();
  Problem p = MakeProblem(g, {{150, 0}}, 33);
  const int64_t width = g.heads * g.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(g.head_dim));
  for (const Kernel& kernel : Kernels()) {
    const std::vector<float> whole = RunAttention(p, kernel);
    const IsaScope isa(kernel.cap);
    for (int32_t chunk : {1, 7, 64}) {
      for (int32_t begin = 0; begin < 150; begin += chunk) {
        AttentionSeq s = p.seqs[0];
        s.rows = std::min(chunk, 150 - begin);
        s.context = begin + s.rows;
        std::vector<float> out(static_cast<size_t>(s.rows * width));
        attention::PagedAttentionWith(kernel.impl, *p.cache, kLayer, {&s, 1}, p.q.data() + begin * p.q_stride, p.q_stride,
                                      g.heads, scale, out.data(), width);
        for (int32_t r = 0; r < s.rows; ++r) {
          ASSERT_EQ(std::memcmp(out.data() + r * width, whole.data() + (begin + r) * p.out_stride,
                                static_cast<size_t>(width) * sizeof(float)),
                    0)
              << kernel.name << " chunk " << chunk << " row " << begin + r;
        }
      }
    }
  }
}

// name: heads/kv heads (GQA group), head_dim, block_size, dtype.
INSTANTIATE_TEST_SUITE_P(Geometries, PagedAttentionTest,
                         ::testing::Values(Geometry{8, 8, 64, 16, DType::kF32},    // MHA
                                           Geometry{8, 4, 8, 16, DType::kF32},     // group 2, tiny heads
                                           Geometry{8, 2, 80, 16, DType::kF32},    // group 4, tail of a vector
                                           Geometry{32, 4, 64, 16, DType::kF32},   // group 8 (the "1b" shape)
                                           Geometry{32, 4, 128, 32, DType::kF32},  // blocks of two vectors
                                           Geometry{12, 4, 24, 5, DType::kF32},    // group 3, blocks not of 16
                                           Geometry{4, 2, 16, 1, DType::kF32},     // one-token blocks
                                           Geometry{8, 1, 40, 64, DType::kF32},    // group 8 on one KV head
                                           Geometry{8, 8, 64, 16, DType::kBF16},   // the same in bf16
                                           Geometry{8, 4, 8, 16, DType::kBF16},    // ...
                                           Geometry{32, 4, 64, 16, DType::kBF16},  // ...
                                           Geometry{8, 2, 80, 7, DType::kBF16},    // blocks not of 16
                                           Geometry{32, 4, 128, 16, DType::kBF16}),
                         [](const ::testing::TestParamInfo<Geometry>& info) {
                           const Geometry& g = info.param;
                           return absl::StrCat("h", g.heads, "_kv", g.kv_heads, "_d", g.head_dim, "_bs", g.block_size,
                                               "_", g.dtype == DType::kF32 ? "f32" : "bf16");
                         });

// Large logits (peaked softmax, running max moving between tiles) stay exact.
TEST(PagedAttentionStabilityTest, LargeScores) {
  const Geometry g{8, 2, 64, 16, DType::kF32};
  Problem p = MakeProblem(g, {{1, 400}, {33, 100}, {5, 0}}, 17, /*q_scale=*/30.0f);
  const std::vector<double> exact = Reference(p, false);
  for (const Kernel& kernel : Kernels()) {
    EXPECT_LE(MaxDiff(p, RunAttention(p, kernel), exact), 1e-5 * MaxAbs(exact)) << kernel.name;
  }
}

TEST(PagedAttentionEdgeTest, EmptyBatchAndZeroRowSequencesWriteNothing) {
  const Geometry g{4, 2, 16, 16, DType::kF32};
  Problem p = MakeProblem(g, {{0, 20}, {2, 3}}, 1);
  const std::vector<double> exact = Reference(p, false);
  for (const Kernel& kernel : Kernels()) {
    EXPECT_LE(MaxDiff(p, RunAttention(p, kernel), exact), 1e-5 * MaxAbs(exact)) << kernel.name;
  }
  std::vector<float> out(8, kSentinel);
  PagedAttention(*p.cache, kLayer, {}, p.q.data(), p.q_stride, g.heads, 0.25f, out.data(), p.out_stride);
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float x) { return x == kSentinel; }));
}

// The public entry point runs the kernel the CPU supports and agrees with the scalar one.
TEST(PagedAttentionEdgeTest, PublicEntryPointAgreesWithScalar) {
  const Geometry g{16, 4, 64, 16, DType::kBF16};
  Problem p = MakeProblem(g, MixedShapes(8, 4, 4), 2);
  std::vector<float> out(static_cast<size_t>(p.total_rows * p.out_stride), kSentinel);
  PagedAttention(*p.cache, kLayer, p.seqs, p.q.data(), p.q_stride, g.heads, 0.125f, out.data(), p.out_stride);
  const std::vector<float> scalar = RunAttention(p, kScalarKernel);
  std::vector<double> scalar_d(static_cast<size_t>(p.total_rows * g.heads * g.head_dim));
  for (int64_t r = 0; r < p.total_rows; ++r) {
    for (int64_t i = 0; i < g.heads * g.head_dim; ++i) {
      scalar_d[r * g.heads * g.head_dim + i] = scalar[r * p.out_stride + i];
    }
  }
  const Kernel native{CpuHasAvx512() ? Impl::kAvx512 : Impl::kScalar, simd::IsaCap::kNative, "public"};
  EXPECT_LE(MaxDiff(p, out, scalar_d), Tolerance(native, g.dtype) * MaxAbs(scalar_d));
}

}  // namespace
}  // namespace llmserve
