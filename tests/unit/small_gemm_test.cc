// The small-batch kernel (model/ops/small_gemm.h) against a double-precision loop: f32
// and bf16 weights, M = 1..32 (5..32 is what Linear dispatches), odd shapes (out not a
// multiple of 64, in not a multiple of the k block, odd in, several k blocks), with and
// without bias, one and two threads; bit-for-bit against the GEMV's rows (the FMA kernel
// for bf16: against its scalar model); and Linear with the kernel against Linear on
// oneDNN's matmul over the same packed weight. bf16 runs both kernels (Bf16Kernel).
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

// A weight dtype and, for bf16, the kernel (Bf16Kernel): every test runs both bf16
// kernels whichever this CPU would pick.
struct Variant {
  DType dtype;
  Bf16Kernel kernel;
};

class SmallGemmTest : public ::testing::TestWithParam<Variant> {
 protected:
  void SetUp() override {
    if (!SmallGemmSupported(dtype(), CpuFeatures::Detect().isa())) GTEST_SKIP() << "no AVX-512 (BF16) on this CPU";
    threads_ = omp_get_max_threads();
  }
  void TearDown() override { omp_set_num_threads(threads_); }
  DType dtype() const { return GetParam().dtype; }
  // The kernel's options: this variant's bf16 tile, k blocks of `block_steps` steps.
  SmallGemmOptions options(int64_t block_steps = kSmallGemmBlockSteps) const {
    return SmallGemmOptions{GetParam().kernel, block_steps};
  }
  bool fma() const { return dtype() == DType::kBF16 && GetParam().kernel == Bf16Kernel::kFma; }
  int threads_ = 1;
};

INSTANTIATE_TEST_SUITE_P(Kernels, SmallGemmTest,
                         ::testing::Values(Variant{DType::kF32, Bf16Kernel::kDot},
                                           Variant{DType::kBF16, Bf16Kernel::kDot},
                                           Variant{DType::kBF16, Bf16Kernel::kFma}),
                         [](const auto& info) {
                           if (info.param.dtype == DType::kF32) return std::string("F32");
                           return std::string("Bf16") + (info.param.kernel == Bf16Kernel::kFma ? "Fma" : "Dot");
                         });

// The FMA kernel's result for one output, modelled in scalar code: the k pairs in order,
// each two fused multiply-adds in f32 (odd k first) of bf16 weights and x rounded to bf16,
// then the bias. What vdpbf16ps computes, by Intel's definition of it.
float FmaModel(const Packed& p, const float* x_row, int64_t in, int64_t n) {
  float acc = 0.0f;
  for (int64_t k = 0; k < in; k += 2) {
    if (k + 1 < in) acc = std::fma(p.values[n * in + k + 1], RoundToBf16(x_row[k + 1]), acc);
    acc = std::fma(p.values[n * in + k], RoundToBf16(x_row[k]), acc);
  }
  return p.bias.empty() ? acc : acc + p.bias[static_cast<size_t>(n)];
}

TEST_P(SmallGemmTest, MatchesDoubleReference) {
  const DType dtype = this->dtype();
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
          SmallGemm(p.w, x.data(), m, y.data(), scratch.data(), options());
          const std::string what = std::string(DTypeName(dtype)) + " " + std::to_string(out) + "x" +
                                   std::to_string(in) + (with_bias ? " bias" : "") + " M=" + std::to_string(m) +
                                   " threads=" + std::to_string(threads);
          ASSERT_NO_FATAL_FAILURE(CheckAgainstReference(dtype, y, ref, m, out, in, sentinel, what));
        }
      }
    }
  }
}

TEST_P(SmallGemmTest, ManyRowsMatchDoubleReference) {
  // Prefill-sized M (Linear sends every M here with the FMA kernel): many row tiles per
  // k block, several k blocks, uneven panel shares.
  const DType dtype = this->dtype();
  const int64_t rows = 300;
  for (auto [out, in] : std::vector<std::pair<int64_t, int64_t>>{{130, 17}, {200, 2049}}) {
    Packed p = MakePacked(dtype, out, in, true, static_cast<uint32_t>(out + in));
    const std::vector<float> x = RandomFloats(static_cast<size_t>(rows * in), static_cast<uint32_t>(in));
    const test_util::Reference ref = ComputeReference(dtype, p, x, rows);
    for (int threads : {1, 2, 3}) {
      omp_set_num_threads(threads);
      for (int64_t m : {33, 100, 300}) {
        std::vector<float> y(static_cast<size_t>(m * out + 16));
        const float sentinel = 12345.0f;
        for (size_t i = static_cast<size_t>(m * out); i < y.size(); ++i) y[i] = sentinel;
        std::vector<uint16_t> scratch(SmallGemmScratchElements(p.w, m));
        SmallGemm(p.w, x.data(), m, y.data(), scratch.data(), options());
        const std::string what = std::string(DTypeName(dtype)) + " " + std::to_string(out) + "x" +
                                 std::to_string(in) + " M=" + std::to_string(m) + " threads=" + std::to_string(threads);
        ASSERT_NO_FATAL_FAILURE(CheckAgainstReference(dtype, y, ref, m, out, in, sentinel, what));
      }
    }
  }
}

TEST_P(SmallGemmTest, RowsMatchTheGemvBitForBit) {
  // Each output accumulates in k order in f32 (partial sums parked in y between k blocks
  // are exact), so every row of an M-row call equals the GEMV's one-row result exactly:
  // tiling, M, threads and the k block size do not change any result. The FMA kernel is
  // held to its scalar model instead (the GEMV uses vdpbf16ps, which matches that model
  // on the CPUs measured, but is another instruction).
  const DType dtype = this->dtype();
  const int64_t out = 300, in = 1001;
  Packed p = MakePacked(dtype, out, in, true, 3);
  const std::vector<float> x = RandomFloats(static_cast<size_t>(kSmallGemmMaxRows * in), 4);
  std::vector<float> y1(static_cast<size_t>(out));
  std::vector<float> model;  // the FMA kernel's expected rows
  if (fma()) {
    for (int64_t r = 0; r < kSmallGemmMaxRows; ++r) {
      for (int64_t n = 0; n < out; ++n) model.push_back(FmaModel(p, x.data() + r * in, in, n));
    }
  }
  std::vector<uint16_t> scratch(SmallGemmScratchElements(p.w, kSmallGemmMaxRows) + GemvScratchElements(p.w, 1));
  // Block sizes: the default, one that leaves a short last block, one above the panel.
  for (int64_t block_steps : {kSmallGemmBlockSteps, int64_t{7}, int64_t{2048}}) {
    for (int threads : {1, 2, 3}) {
      omp_set_num_threads(threads);
      for (int64_t m : {5, 8, 13, 16, 32}) {
        std::vector<float> y(static_cast<size_t>(m * out));
        SmallGemm(p.w, x.data(), m, y.data(), scratch.data(), options(block_steps));
        for (int64_t r = 0; r < m; ++r) {
          if (fma()) {
            std::copy_n(model.begin() + r * out, out, y1.begin());
          } else {
            Gemv(p.w, x.data() + r * in, 1, y1.data(), scratch.data());
          }
          for (int64_t n = 0; n < out; ++n) {
            ASSERT_EQ(y[r * out + n], y1[n]) << "M=" << m << " row " << r << " col " << n << " threads " << threads
                                             << " block steps " << block_steps;
          }
        }
      }
    }
  }
}

TEST_P(SmallGemmTest, LinearMatchesOneDnnMatmul) {
  // Linear over oneDNN's own packed copy: built with this variant's default dispatch (the
  // kernel for the M DenseDispatchFor gives it) against the same weight built to run every
  // M on oneDNN's matmul (no GEMV, no small-batch kernel), for M = 1..32, 64 and 200, with
  // bias, odd out (a partial last panel). With the FMA kernel, Linear sends every M to it.
  const DType dtype = this->dtype();
  auto ctx = DnnContext::Create();
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  const int64_t out = 200, in = 333;
  const std::vector<float> w = RandomFloats(static_cast<size_t>(out * in), 21);
  const std::vector<float> b = RandomFloats(static_cast<size_t>(out), 22);
  TensorView wv{"w", DType::kF32, {out, in}, reinterpret_cast<const uint8_t*>(w.data()), w.size() * 4};
  TensorView bv{"b", DType::kF32, {out}, reinterpret_cast<const uint8_t*>(b.data()), b.size() * 4};
  LinearOptions fast = DefaultLinearOptions(dtype);
  fast.dense = DenseDispatchFor(dtype, GetParam().kernel);
  LinearOptions onednn = fast;
  onednn.dense.gemv = false;
  onednn.dense.small_gemm_max_rows = 0;
  auto lin = Linear::Create(**ctx, wv, &bv, fast);
  ASSERT_TRUE(lin.ok()) << lin.status();
  auto dnn = Linear::Create(**ctx, wv, &bv, onednn);
  ASSERT_TRUE(dnn.ok()) << dnn.status();
  const int64_t max_m = 200;
  const std::vector<float> x = RandomFloats(static_cast<size_t>(max_m * in), 23);
  std::vector<int64_t> ms;
  for (int64_t m = 1; m <= kSmallGemmMaxRows; ++m) ms.push_back(m);
  ms.push_back(64);
  ms.push_back(max_m);
  int64_t used = 0, dispatched = 0;
  for (int64_t m : ms) {
    dispatched += m >= fast.dense.small_gemm_min_rows && m <= fast.dense.small_gemm_max_rows ? 1 : 0;
    std::vector<float> ours(static_cast<size_t>(m * out)), theirs(ours.size());
    used += (*lin)->uses_small_gemm(m) ? 1 : 0;
    (*lin)->Forward(x.data(), m, ours.data());
    EXPECT_FALSE((*dnn)->uses_small_gemm(m));
    (*dnn)->Forward(x.data(), m, theirs.data());
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
  EXPECT_FALSE((*dnn)->uses_gemv());
  EXPECT_EQ((*dnn)->kernel(), "onednn");
  // The dispatch is what the options say: 5..32 rows, or with the FMA kernel every M (1
  // row and prefill too).
  EXPECT_EQ(used, dispatched);
  EXPECT_EQ(used, fma() ? static_cast<int64_t>(ms.size()) : kSmallGemmMaxRows - kSmallGemmMinRows + 1);
}

// The bf16 tile by CPU: f32 FMAs on Intel (vdpbf16ps at half their rate there), vdpbf16ps
// elsewhere (AMD Zen 4 runs both at one a cycle), whatever else the CPU has.
TEST(Bf16KernelForTest, FmaOnIntelDotElsewhere) {
  CpuFeatures cpu;
  cpu.avx512 = cpu.avx512_bf16 = cpu.avx512_vnni = true;
  cpu.intel = true;
  EXPECT_EQ(Bf16KernelFor(cpu), Bf16Kernel::kFma);
  cpu.intel = false;
  EXPECT_EQ(Bf16KernelFor(cpu), Bf16Kernel::kDot);
  EXPECT_STREQ(Bf16KernelName(Bf16Kernel::kFma), "fma");
  EXPECT_STREQ(Bf16KernelName(Bf16Kernel::kDot), "dot");
}

}  // namespace
}  // namespace llmserve
