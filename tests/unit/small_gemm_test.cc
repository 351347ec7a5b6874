// The small-batch kernel (model/ops/small_gemm.h) against a double-precision loop: f32
// and bf16 weights, M = 1..32 (5..32 is what Linear dispatches), odd shapes (out not a
// multiple of 64, in not a multiple of the k block, odd in, several k blocks), with and
// without bias, one and two threads; bit-for-bit against the GEMV's rows; and Linear with
// the kernel against Linear on oneDNN's matmul over the same packed weight.
#include "model/ops/small_gemm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/ops/dnn_context.h"
#include "model/ops/linear.h"
#include "tests/util/gemv_packed.h"

namespace llmserve {
namespace {

using test_util::Bf16Bits;
using test_util::CheckAgainstReference;
using test_util::ComputeReference;
using test_util::kU;
using test_util::MakePacked;
using test_util::Packed;
using test_util::RandomFloats;
using test_util::RoundToBf16;

class SmallGemmTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (!SmallGemmSupported(GetParam())) GTEST_SKIP() << "no AVX-512 (BF16) on this CPU";
    threads_ = omp_get_max_threads();
  }
  void TearDown() override {
    omp_set_num_threads(threads_);
    SetSmallGemmEnabled(true);
  }
  int threads_ = 1;
};

INSTANTIATE_TEST_SUITE_P(DTypes, SmallGemmTest, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return info.param == DType::kF32 ? "F32" : "Bf16"; });

TEST_P(SmallGemmTest, MatchesDoubleReference) {
  const DType dtype = GetParam();
  // (out, in): tiny, odd in, out not a multiple of 64, exact panels, several k blocks
  // (256 steps; a step is 1 k for f32, 2 k for bf16), and > 64 KiB
  // of weights (parallel path, uneven panel counts per thread; 3 threads round uneven
  // shares of x).
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 1},    {3, 5},    {50, 33},    {172, 64},
                                                           {130, 17}, {70, 600}, {1000, 300}, {200, 2049},
                                                           {2000, 1030}};
  for (auto [out, in] : shapes) {
    for (bool with_bias : {false, true}) {
      Packed p = MakePacked(dtype, out, in, with_bias, static_cast<uint32_t>(out * 31 + in));
      // Reference for all kSmallGemmMaxRows rows once; an M-row call uses the first M.
      const int64_t rows = kSmallGemmMaxRows;
      const std::vector<float> x = RandomFloats(static_cast<size_t>(rows * in), static_cast<uint32_t>(in + 7));
      const test_util::Reference ref = ComputeReference(dtype, p, x, rows);
      for (int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        for (int64_t m = 1; m <= kSmallGemmMaxRows; ++m) {
          std::vector<float> y(static_cast<size_t>(m * out + 16), std::nanf(""));
          const float sentinel = 12345.0f;
          for (size_t i = static_cast<size_t>(m * out); i < y.size(); ++i) y[i] = sentinel;
          std::vector<uint16_t> scratch(SmallGemmScratchElements(p.w, m) + 1);
          SmallGemm(p.w, x.data(), m, y.data(), scratch.data());
          const std::string what = std::string(DTypeName(dtype)) + " " + std::to_string(out) + "x" +
                                   std::to_string(in) + (with_bias ? " bias" : "") + " M=" + std::to_string(m) +
                                   " threads=" + std::to_string(threads);
          ASSERT_NO_FATAL_FAILURE(CheckAgainstReference(dtype, y, ref, m, out, in, sentinel, what));
        }
      }
    }
  }
}

TEST_P(SmallGemmTest, RowsMatchTheGemvBitForBit) {
  // Each output accumulates in k order in f32 (partial sums parked in y between k blocks
  // are exact), so every row of an M-row call equals the GEMV's one-row result exactly:
  // tiling, M, threads and the k block size do not change any result.
  const DType dtype = GetParam();
  const int64_t out = 300, in = 1001;
  Packed p = MakePacked(dtype, out, in, true, 3);
  const std::vector<float> x = RandomFloats(static_cast<size_t>(kSmallGemmMaxRows * in), 4);
  std::vector<float> y1(static_cast<size_t>(out));
  std::vector<uint16_t> scratch(SmallGemmScratchElements(p.w, kSmallGemmMaxRows) + GemvScratchElements(p.w, 1));
  // Block sizes: the default (0), one that leaves a short last block, one above the panel.
  for (int64_t block_steps : {0, 7, 2048}) {
    SetSmallGemmBlockStepsOverride(block_steps);
    for (int threads : {1, 2, 3}) {
      omp_set_num_threads(threads);
      for (int64_t m : {5, 8, 13, 16, 32}) {
        std::vector<float> y(static_cast<size_t>(m * out));
        SmallGemm(p.w, x.data(), m, y.data(), scratch.data());
        for (int64_t r = 0; r < m; ++r) {
          Gemv(p.w, x.data() + r * in, 1, y1.data(), scratch.data());
          for (int64_t n = 0; n < out; ++n) {
            ASSERT_EQ(y[r * out + n], y1[n]) << "M=" << m << " row " << r << " col " << n << " threads " << threads
                                             << " block steps " << block_steps;
          }
        }
      }
    }
  }
  SetSmallGemmBlockStepsOverride(0);
}

TEST_P(SmallGemmTest, LinearMatchesOneDnnMatmul) {
  // Linear over oneDNN's own packed copy: the kernel (switch on) against oneDNN's matmul
  // (switch off) for M = 5..32, with bias, odd out (a partial last panel).
  const DType dtype = GetParam();
  auto ctx = DnnContext::Create();
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  const int64_t out = 200, in = 333;
  const std::vector<float> w = RandomFloats(static_cast<size_t>(out * in), 21);
  const std::vector<float> b = RandomFloats(static_cast<size_t>(out), 22);
  TensorView wv{"w", DType::kF32, {out, in}, reinterpret_cast<const uint8_t*>(w.data()), w.size() * 4};
  TensorView bv{"b", DType::kF32, {out}, reinterpret_cast<const uint8_t*>(b.data()), b.size() * 4};
  auto lin = Linear::Create(**ctx, wv, &bv, dtype);
  ASSERT_TRUE(lin.ok()) << lin.status();
  const std::vector<float> x = RandomFloats(static_cast<size_t>(kSmallGemmMaxRows * in), 23);
  int64_t used = 0;
  for (int64_t m = kSmallGemmMinRows; m <= kSmallGemmMaxRows; ++m) {
    std::vector<float> ours(static_cast<size_t>(m * out)), theirs(ours.size());
    SetSmallGemmEnabled(true);
    used += (*lin)->uses_small_gemm(m) ? 1 : 0;
    (*lin)->Forward(x.data(), m, ours.data());
    SetSmallGemmEnabled(false);
    EXPECT_FALSE((*lin)->uses_small_gemm(m));
    (*lin)->Forward(x.data(), m, theirs.data());
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t n = 0; n < out; ++n) {
        double mag = std::fabs(b[n]);
        for (int64_t k = 0; k < in; ++k) mag += std::fabs(double(x[r * in + k]) * w[n * in + k]);
        // Both use the same operands (bf16: the same rounded x and weights); only the
        // f32 summation order differs.
        const double tol = 2 * (in + 2) * kU;
        ASSERT_NEAR(ours[r * out + n], theirs[r * out + n], tol * mag) << "M=" << m << " row " << r << " col " << n;
      }
    }
  }
  // Whether Linear dispatches here depends on SmallGemmDispatchMaxRows; the comparison
  // above runs either way, so say which path "ours" took.
  RecordProperty("small_gemm_rows_dispatched", static_cast<int>(used));
  const int64_t dispatched = std::max<int64_t>(0, SmallGemmDispatchMaxRows(dtype) - kSmallGemmMinRows + 1);
  EXPECT_EQ(used, dispatched);
}

TEST(SmallGemmSwitchTest, DefaultsOnAndToggles) {
  EXPECT_TRUE(SmallGemmEnabled());
  SetSmallGemmEnabled(false);
  EXPECT_FALSE(SmallGemmEnabled());
  SetSmallGemmEnabled(true);
  EXPECT_TRUE(SmallGemmEnabled());
}

}  // namespace
}  // namespace llmserve
