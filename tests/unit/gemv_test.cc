// The small-M GEMV (model/ops/gemv.h) against a double-precision loop: f32 and bf16
// weights, M = 1..4, odd shapes (out not a multiple of 64, in not a multiple of the k
// block, odd in), with and without bias, one and two threads; and GemvPack's layout
// against oneDNN's own reorder into BA16a64b2a / BA16a64b, padding included.
#include "model/ops/gemv.h"

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/ops/dnn_context.h"
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

class GemvTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (!GemvSupported(GetParam(), CpuFeatures::Detect().isa())) GTEST_SKIP() << "no AVX-512 (BF16) on this CPU";
    threads_ = omp_get_max_threads();
  }
  void TearDown() override { omp_set_num_threads(threads_); }
  int threads_ = 1;
};

INSTANTIATE_TEST_SUITE_P(DTypes, GemvTest, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return info.param == DType::kF32 ? "F32" : "Bf16"; });

TEST_P(GemvTest, MatchesDoubleReference) {
  const DType dtype = GetParam();
  // (out, in): tiny, odd in, out not a multiple of 64, exact panels, and large enough
  // (> 64 KiB of weights) for the parallel path with uneven panel counts per thread, and
  // 2000 x 1030 with 3 threads (one takes a smaller share of rounding x than the others).
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 1},   {3, 5},    {50, 33},   {172, 64},
                                                           {64, 32}, {130, 17}, {1000, 300}, {200, 2049},
                                                           {2000, 1030}};
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    for (auto [out, in] : shapes) {
      for (bool with_bias : {false, true}) {
        Packed p = MakePacked(dtype, out, in, with_bias, static_cast<uint32_t>(out * 31 + in));
        for (int64_t m = 1; m <= kGemvMaxRows; ++m) {
          const std::vector<float> x = RandomFloats(static_cast<size_t>(m * in), static_cast<uint32_t>(m + in));
          std::vector<float> y(static_cast<size_t>(m * out + 16), std::nanf(""));
          const float sentinel = 12345.0f;
          for (size_t i = static_cast<size_t>(m * out); i < y.size(); ++i) y[i] = sentinel;
          std::vector<uint16_t> scratch(GemvScratchElements(p.w, m) + 1);
          Gemv(p.w, x.data(), m, y.data(), scratch.data());
          const std::string what = std::string(DTypeName(dtype)) + " " + std::to_string(out) + "x" +
                                   std::to_string(in) + (with_bias ? " bias" : "") + " M=" + std::to_string(m) +
                                   " threads=" + std::to_string(threads);
          ASSERT_NO_FATAL_FAILURE(
              CheckAgainstReference(dtype, y, ComputeReference(dtype, p, x, m), m, out, in, sentinel, what));
        }
      }
    }
  }
}

TEST_P(GemvTest, RowsAreIndependentAndMatchOneRowCalls) {
  // Row r of an M-row call equals the same row computed alone, bit for bit (each output's
  // accumulation order does not depend on M).
  const DType dtype = GetParam();
  const int64_t out = 300, in = 257;
  Packed p = MakePacked(dtype, out, in, true, 3);
  const std::vector<float> x = RandomFloats(static_cast<size_t>(kGemvMaxRows * in), 4);
  std::vector<float> y(static_cast<size_t>(kGemvMaxRows * out)), y1(static_cast<size_t>(out));
  std::vector<uint16_t> scratch(GemvScratchElements(p.w, kGemvMaxRows));
  Gemv(p.w, x.data(), kGemvMaxRows, y.data(), scratch.data());
  for (int64_t r = 0; r < kGemvMaxRows; ++r) {
    Gemv(p.w, x.data() + r * in, 1, y1.data(), scratch.data());
    for (int64_t n = 0; n < out; ++n) ASSERT_EQ(y[r * out + n], y1[n]) << "row " << r << " col " << n;
  }
}

TEST_P(GemvTest, PackMatchesOneDnnBlockedLayout) {
  // GemvPack writes oneDNN's BA16a64b2a (bf16) / BA16a64b (f32) for B[K=in, N=out]: the
  // layout Linear reads directly from oneDNN's packed copy. oneDNN's reorder goes into a
  // buffer pre-filled with 0xff, so its padding must come out zero like ours.
  const DType dtype = GetParam();
  auto ctx = DnnContext::Create();
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const dt ddt = dtype == DType::kBF16 ? dt::bf16 : dt::f32;
  for (auto [out, in] : std::vector<std::pair<int64_t, int64_t>>{{50, 33}, {172, 64}, {64, 32}, {1, 1}, {130, 17}}) {
    Packed p = MakePacked(dtype, out, in, false, 11);
    std::vector<uint16_t> bits(p.values.size());
    for (size_t i = 0; i < bits.size(); ++i) bits[i] = Bf16Bits(p.values[i]);
    const void* plain = dtype == DType::kBF16 ? static_cast<const void*>(bits.data()) : p.values.data();
    const dnnl::memory::desc plain_md({in, out}, ddt, tag::ba);
    const dnnl::memory::desc blocked_md({in, out}, ddt, ddt == dt::bf16 ? tag::BA16a64b2a : tag::BA16a64b);
    ASSERT_EQ(blocked_md.get_size(), p.panels.size()) << out << "x" << in;
    std::vector<uint8_t> theirs(blocked_md.get_size(), 0xff);
    dnnl::memory src(plain_md, (*ctx)->engine(), const_cast<void*>(plain));
    dnnl::memory dst(blocked_md, (*ctx)->engine(), theirs.data());
    dnnl::reorder(src, dst).execute((*ctx)->stream(), src, dst);
    (*ctx)->stream().wait();
    ASSERT_EQ(theirs, p.panels) << DTypeName(dtype) << " " << out << "x" << in;
    EXPECT_EQ(p.w.in_padded, blocked_md.data.padded_dims[0]);
  }
}

}  // namespace
}  // namespace llmserve
