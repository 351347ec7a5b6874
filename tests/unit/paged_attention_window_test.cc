// PagedAttention with a sliding window: against the naive masked reference (windows
// smaller and larger than a block, starting mid-block), and the invariances the engine
// relies on (batched == alone, chunked == whole, bit for bit).
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "model/ops/paged_attention.h"
#include "model/ops/paged_attention_internal.h"
#include "tests/util/paged_attention_problem.h"

namespace llmserve {
namespace {

using ::llmserve::testing::Geometry;
using ::llmserve::testing::Kernel;
using ::llmserve::testing::Kernels;
using ::llmserve::testing::Options;
using ::llmserve::testing::kLayer;
using ::llmserve::testing::MakeProblem;
using ::llmserve::testing::MaxAbs;
using ::llmserve::testing::MaxDiff;
using ::llmserve::testing::MixedShapes;
using ::llmserve::testing::Problem;
using ::llmserve::testing::Reference;
using ::llmserve::testing::RunAttention;
using ::llmserve::testing::Tolerance;

// (geometry, window)
class PagedAttentionWindowTest : public ::testing::TestWithParam<std::tuple<Geometry, int64_t>> {};

// Decode rows and chunks (up to 70 rows, longer than every window) after cached prefixes.
TEST_P(PagedAttentionWindowTest, MatchesMaskedReference) {
  const auto [g, window] = GetParam();
  Problem p = MakeProblem(g, MixedShapes(7 + static_cast<uint32_t>(window), 6, 6), 13);
  const std::vector<double> exact = Reference(p, g.dtype == DType::kBF16, window);
  const double mag = MaxAbs(exact);
  for (const Kernel& kernel : Kernels()) {
    EXPECT_LE(MaxDiff(p, RunAttention(p, kernel, window), exact), Tolerance(kernel, g.dtype) * mag) << kernel.name;
  }
  // The window really masks: full attention differs from it.
  EXPECT_GT(MaxDiff(p, RunAttention(p, Kernels()[0], 0), exact), 1e-3 * mag);
}

TEST_P(PagedAttentionWindowTest, BatchedEqualsAlone) {
  const auto [g, window] = GetParam();
  Problem p = MakeProblem(g, MixedShapes(5, 3, 3), 23);
  const int64_t width = g.heads * g.head_dim;
  for (const Kernel& kernel : Kernels()) {
    const std::vector<float> batched = RunAttention(p, kernel, window);
    for (const AttentionSeq& s : p.seqs) {
      AttentionSeq alone = s;
      alone.row_start = 0;
      std::vector<float> out(static_cast<size_t>(s.rows * width));
      PagedAttention(Options(kernel), *p.cache, kLayer, {&alone, 1}, p.q.data() + s.row_start * p.q_stride,
                                    p.q_stride, g.heads, 1.0f / std::sqrt(static_cast<float>(g.head_dim)), out.data(),
                                    width, window);
      for (int64_t r = 0; r < s.rows; ++r) {
        ASSERT_EQ(std::memcmp(out.data() + r * width, batched.data() + (s.row_start + r) * p.out_stride,
                              static_cast<size_t>(width) * sizeof(float)),
                  0)
            << kernel.name << " row " << r;
      }
    }
  }
}

TEST_P(PagedAttentionWindowTest, ChunkingDoesNotChangeBits) {
  const auto [g, window] = GetParam();
  constexpr int32_t kRows = 120;
  Problem p = MakeProblem(g, {{kRows, 0}}, 35);
  const int64_t width = g.heads * g.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(g.head_dim));
  for (const Kernel& kernel : Kernels()) {
    const std::vector<float> whole = RunAttention(p, kernel, window);
    for (int32_t chunk : {1, 7, 64}) {
      for (int32_t begin = 0; begin < kRows; begin += chunk) {
        AttentionSeq s = p.seqs[0];
        s.rows = std::min(chunk, kRows - begin);
        s.context = begin + s.rows;
        std::vector<float> out(static_cast<size_t>(s.rows * width));
        PagedAttention(Options(kernel), *p.cache, kLayer, {&s, 1}, p.q.data() + begin * p.q_stride,
                                      p.q_stride, g.heads, scale, out.data(), width, window);
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

INSTANTIATE_TEST_SUITE_P(
    Windows, PagedAttentionWindowTest,
    ::testing::Combine(::testing::Values(Geometry{8, 2, 64, 16, DType::kF32},  // blocks of one vector
                                         Geometry{8, 4, 8, 8, DType::kF32},    // blocks of half a vector
                                         Geometry{12, 4, 24, 5, DType::kF32},  // blocks not of 16
                                         Geometry{8, 1, 80, 32, DType::kF32},  // two vectors a block, MQA
                                         Geometry{8, 2, 64, 16, DType::kBF16},
                                         Geometry{8, 2, 80, 7, DType::kBF16}),
                       ::testing::Values(int64_t{1}, int64_t{12}, int64_t{16}, int64_t{45})),
    [](const ::testing::TestParamInfo<std::tuple<Geometry, int64_t>>& info) {
      const Geometry& g = std::get<0>(info.param);
      return absl::StrCat("h", g.heads, "_kv", g.kv_heads, "_d", g.head_dim, "_bs", g.block_size, "_",
                          g.dtype == DType::kF32 ? "f32" : "bf16", "_w", std::get<1>(info.param));
    });

// A window as long as the context (or longer) is full attention, bit for bit.
TEST(PagedAttentionWindowEdgeTest, WindowCoveringTheContextIsFullAttention) {
  const Geometry g{8, 2, 64, 16, DType::kF32};
  Problem p = MakeProblem(g, {{40, 0}, {1, 99}, {9, 30}}, 3);
  for (const Kernel& kernel : Kernels()) {
    const std::vector<float> full = RunAttention(p, kernel, 0);
    const std::vector<float> wide = RunAttention(p, kernel, 100);
    EXPECT_EQ(std::memcmp(full.data(), wide.data(), full.size() * sizeof(float)), 0) << kernel.name;
  }
}

// The first token a task reads starts the tile (4 vectors of up to 16 tokens, none
// crossing a block) holding its first row's first visible token.
TEST(PagedAttentionWindowEdgeTest, TaskFirstTokenIsOnTheTileGrid) {
  struct Case {
    int64_t block_size, window, row_begin, want;
  };
  // Rows at positions 150..153 (row_begin 0..3).
  for (const Case& c : {Case{8, 0, 0, 0},     // no window
                        Case{8, 10, 0, 128},  // first visible 141; tiles of 4 blocks of 8 = 32 tokens
                        Case{8, 3, 3, 128},   // 151
                        Case{8, 160, 0, 0},   // before token 0
                        Case{16, 10, 0, 128}, // tiles of 64
                        Case{32, 30, 0, 64},  // 121; 2 blocks a tile
                        Case{64, 10, 0, 128}, // one block a tile
                        Case{24, 10, 0, 96},  // 16 + 8 tokens a block: 2 blocks (48 tokens) a tile
                        Case{80, 10, 0, 0}}) {  // 5 vectors a block: 4 blocks (320 tokens) a tile
    SCOPED_TRACE(::testing::Message() << "block " << c.block_size << " window " << c.window << " row "
                                      << c.row_begin);
    Problem p = MakeProblem(Geometry{4, 2, 16, c.block_size, DType::kF32}, {{4, 150}}, 1);
    attention::Args a;
    a.cache = p.cache.get();
    a.seqs = p.seqs.data();
    a.window = c.window;
    attention::Task t;
    t.row_begin = static_cast<int32_t>(c.row_begin);
    t.row_end = 4;
    EXPECT_EQ(attention::TaskFirstToken(a, t), c.want);
  }
}

}  // namespace
}  // namespace llmserve
