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
#include "model/runtime_config.h"
#include "tests/util/paged_attention_problem.h"

namespace llmserve {
namespace {

using ::llmserve::testing::Geometry;
using ::llmserve::testing::Kernel;
using ::llmserve::testing::Kernels;
using ::llmserve::testing::Options;
using ::llmserve::testing::kLayer;
using ::llmserve::testing::kScalarKernel;
using ::llmserve::testing::kSentinel;
using ::llmserve::testing::MakeProblem;
using ::llmserve::testing::MaxAbs;
using ::llmserve::testing::MaxDiff;
using ::llmserve::testing::MixedShapes;
using ::llmserve::testing::Problem;
using ::llmserve::testing::Reference;
using ::llmserve::testing::RunAttention;
using ::llmserve::testing::Tolerance;

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
  const Kernel avx512{CpuFeatures::Detect().isa(), "avx512"};
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
    const int64_t width = g.heads * g.head_dim;
    for (const AttentionSeq& s : p.seqs) {
      AttentionSeq alone = s;
      alone.row_start = 0;
      std::vector<float> out(static_cast<size_t>(s.rows * width));
      PagedAttention(Options(kernel), *p.cache, kLayer, {&alone, 1}, p.q.data() + s.row_start * p.q_stride,
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
    for (int32_t chunk : {1, 7, 64}) {
      for (int32_t begin = 0; begin < 150; begin += chunk) {
        AttentionSeq s = p.seqs[0];
        s.rows = std::min(chunk, 150 - begin);
        s.context = begin + s.rows;
        std::vector<float> out(static_cast<size_t>(s.rows * width));
        PagedAttention(Options(kernel), *p.cache, kLayer, {&s, 1}, p.q.data() + begin * p.q_stride, p.q_stride,
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
  PagedAttention(Options(Kernels().back()), *p.cache, kLayer, {}, p.q.data(), p.q_stride, g.heads, 0.25f, out.data(),
                 p.out_stride);
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float x) { return x == kSentinel; }));
}

// The K/V prefetch stream (AttentionOptions::kv_prefetch) only moves data earlier: a
// decode-heavy batch gives the same bits with it and without it, on every kernel.
TEST(PagedAttentionEdgeTest, KvPrefetchDoesNotChangeBits) {
  const Geometry g{16, 4, 64, 16, DType::kBF16};
  Problem p = MakeProblem(g, MixedShapes(8, 12, 2), 2);
  for (const Kernel& kernel : Kernels()) {
    const std::vector<float> on = RunAttention(p, kernel, 0, true);
    const std::vector<float> off = RunAttention(p, kernel, 0, false);
    EXPECT_EQ(std::memcmp(on.data(), off.data(), on.size() * sizeof(float)), 0) << kernel.name;
  }
}

}  // namespace
}  // namespace llmserve
