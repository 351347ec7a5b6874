// The quantized kernels (model/quant/): the packed layout holds exactly the codes ggml's
// blocks decode to; the scalar reference kernel agrees with a double-precision product of
// the dequantized weights and activations; the AVX-512 VNNI kernel (and its activation
// quantizer) equal the scalar reference bit for bit for every type, M and row tail; and
// the quantized Linear gives every row the same bits whatever the batch it is in.
#include <omp.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/ops/dnn_context.h"
#include "model/ops/linear.h"
#include "model/quant/ggml_blocks.h"
#include "model/quant/packed_layout.h"
#include "model/quant/quant_gemm.h"
#include "tests/util/quant_blocks.h"

namespace llmserve {
namespace {

using test_util::QuantView;
using test_util::RandomQuantRows;

std::vector<float> RandomActs(int64_t m, int64_t in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m * in));
  for (float& v : x) v = d(rng);
  return x;
}

// Packed weights plus their dequantized values.
struct Weights {
  std::vector<uint8_t> file, packed;
  std::vector<float> dequant;  // [rows, cols]
  PackedQuantMatrix w;
};

Weights MakeWeights(QuantType t, int64_t rows, int64_t cols, uint32_t seed) {
  Weights out;
  out.file = RandomQuantRows(t, rows, cols, seed);
  out.packed.resize(PackedQuantBytes(t, rows, cols));
  PackGgmlRows(t, out.file.data(), rows, cols, out.packed.data());
  out.w = MakePackedQuantMatrix(t, rows, cols, out.packed.data());
  out.dequant.resize(static_cast<size_t>(rows * cols));
  const size_t row_bytes = out.file.size() / static_cast<size_t>(rows);
  for (int64_t r = 0; r < rows; ++r) {
    DequantizeRow(t, out.file.data() + r * row_bytes, cols, out.dequant.data() + r * cols);
  }
  return out;
}

struct Acts {
  std::vector<uint8_t> buffer;
  QuantizedActs a;
};

Acts Quantize(QuantKernel kernel, const std::vector<float>& x, int64_t m, int64_t in, int64_t cols) {
  Acts out;
  out.buffer.resize(QuantizedActsBytes(m, cols) + 64);
  void* aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(out.buffer.data()) + 63) / 64 * 64);
  out.a = MapQuantizedActs(aligned, m, cols);
  QuantizeActs(kernel, x.data(), in, 0, m, out.a);
  return out;
}

bool HaveVnni() { return QuantKernelSupported(QuantKernel::kAvx512Vnni); }

class QuantKernelTest : public ::testing::TestWithParam<QuantType> {
 protected:
  QuantType type() const { return GetParam(); }
  // Two units of k (K-quants: 512, the others 64), 83 rows: 5 full groups and a tail.
  int64_t Cols() const { return 2 * UnitLayoutOf(type()).elems; }
};

TEST_P(QuantKernelTest, PackedLayoutHoldsTheDecodedCodes) {
  const int64_t rows = 37, cols = Cols();
  const Weights w = MakeWeights(type(), rows, cols, 1);
  const UnitLayout l = UnitLayoutOf(type());
  const int64_t bb = QuantBlockBytes(type());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t u = 0; u < w.w.units; ++u) {
      DecodedBlock b;
      DecodeBlock(type(), w.file.data() + (r * w.w.units + u) * bb, &b);
      const uint8_t* unit = w.w.unit(r / 16, u);
      const int lane = static_cast<int>(r % 16);
      for (int e = 0; e < l.elems; ++e) {
        ASSERT_EQ(PackedQuantValue(type(), l, unit, lane, e), b.q[e]) << "row " << r << " unit " << u << " e " << e;
      }
      uint16_t d;
      std::memcpy(&d, unit + l.d + 2 * lane, 2);
      EXPECT_EQ(d, b.d);
      if (l.m >= 0) {
        std::memcpy(&d, unit + l.m + 2 * lane, 2);
        EXPECT_EQ(d, b.m);
      }
    }
  }
  // The padding rows of the last group are zero.
  const uint8_t* last = w.w.unit(w.w.groups - 1, w.w.units - 1);
  for (int lane = static_cast<int>(rows % 16); lane < 16; ++lane) {
    for (int e = 0; e < l.elems; ++e) ASSERT_EQ(PackedQuantValue(type(), l, last, lane, e), 0);
  }
}

TEST_P(QuantKernelTest, ScalarKernelAgreesWithDoubleProductOfDequantizedValues) {
  const int64_t rows = 83, cols = Cols(), m = 3;
  const Weights w = MakeWeights(type(), rows, cols, 2);
  const std::vector<float> x = RandomActs(m, cols, 3);
  const Acts q = Quantize(QuantKernel::kScalar, x, m, cols, cols);
  std::vector<float> bias(static_cast<size_t>(rows));
  for (int64_t o = 0; o < rows; ++o) bias[static_cast<size_t>(o)] = 0.01f * static_cast<float>(o);
  std::vector<float> y(static_cast<size_t>(m * rows));
  QuantGemm(QuantKernel::kScalar, w.w, 0, w.w.groups, q.a, nullptr, bias.data(), y.data(), rows);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t o = 0; o < rows; ++o) {
      double ref = bias[static_cast<size_t>(o)], mag = 0;
      for (int64_t k = 0; k < cols; ++k) {
        const double xv = static_cast<double>(q.a.q(i, k / 32)[k % 32]) * q.a.d(i, k / 32);
        const double wv = w.dequant[static_cast<size_t>(o * cols + k)];
        ref += wv * xv;
        mag += std::fabs(wv * xv);
      }
      // Rounding of the per-block products and of the f32 accumulation: a few ulp of the
      // magnitude of the terms.
      EXPECT_NEAR(y[static_cast<size_t>(i * rows + o)], ref, 4e-6 * mag + 1e-6) << "row " << i << " out " << o;
    }
  }
  // And the activations reconstruct x: |x - q·d| <= d / 2 per element.
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t k = 0; k < cols; ++k) {
      const float d = q.a.d(i, k / 32);
      EXPECT_LE(std::fabs(x[static_cast<size_t>(i * cols + k)] - q.a.q(i, k / 32)[k % 32] * d), 0.5f * d * 1.0001f);
    }
  }
}

TEST_P(QuantKernelTest, Avx512KernelEqualsScalarBitForBit) {
  if (!HaveVnni()) GTEST_SKIP() << "this CPU has no AVX-512 VNNI: only the scalar kernel runs here";
  const int64_t rows = 16 * 5 + 3, cols = Cols();
  const Weights w = MakeWeights(type(), rows, cols, 4);
  std::vector<float> bias(static_cast<size_t>(rows));
  for (int64_t o = 0; o < rows; ++o) bias[static_cast<size_t>(o)] = -0.02f * static_cast<float>(o);
  for (int64_t m : {1, 2, 3, 4, 5, 7, 8, 13}) {
    SCOPED_TRACE("m " + std::to_string(m));
    const std::vector<float> x = RandomActs(m, cols, static_cast<uint32_t>(10 + m));
    const Acts qs = Quantize(QuantKernel::kScalar, x, m, cols, cols);
    const Acts qv = Quantize(QuantKernel::kAvx512Vnni, x, m, cols, cols);
    ASSERT_EQ(std::memcmp(qs.a.data, qv.a.data, QuantizedActsBytes(m, cols)), 0);
    for (const float* b : {static_cast<const float*>(nullptr), static_cast<const float*>(bias.data())}) {
      std::vector<float> ys(static_cast<size_t>(m * rows), -1.0f), yv(ys.size(), -2.0f), yp(ys.size(), -3.0f);
      QuantGemm(QuantKernel::kScalar, w.w, 0, w.w.groups, qs.a, nullptr, b, ys.data(), rows);
      QuantGemm(QuantKernel::kAvx512Vnni, w.w, 0, w.w.groups, qv.a, nullptr, b, yv.data(), rows);
      for (size_t i = 0; i < ys.size(); ++i) ASSERT_EQ(ys[i], yv[i]) << "element " << i;
      // With the panel scratch (every panel unpacked once, then read by every row tile).
      std::vector<uint8_t> scratch(QuantPanelScratchBytes(cols) + 64);
      auto* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) / 64 * 64);
      QuantGemm(QuantKernel::kAvx512Vnni, w.w, 0, w.w.groups, qv.a, aligned, b, yp.data(), rows);
      for (size_t i = 0; i < ys.size(); ++i) ASSERT_EQ(ys[i], yp[i]) << "element " << i << " (panel scratch)";
      // A sub-range of groups writes only its outputs.
      std::vector<float> part(ys.size(), 7.0f);
      QuantGemm(QuantKernel::kAvx512Vnni, w.w, 1, 3, qv.a, nullptr, b, part.data(), rows);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t o = 0; o < rows; ++o) {
          const float want = (o >= 16 && o < 48) ? ys[static_cast<size_t>(i * rows + o)] : 7.0f;
          ASSERT_EQ(part[static_cast<size_t>(i * rows + o)], want) << "row " << i << " out " << o;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, QuantKernelTest, ::testing::ValuesIn(kAllQuantTypes),
                         [](const ::testing::TestParamInfo<QuantType>& i) { return std::string(QuantTypeName(i.param)); });

TEST(QuantActsTest, ShortRowsArePaddedWithZeros) {
  const int64_t in = 80, cols = 96, m = 2;
  const std::vector<float> x = RandomActs(m, in, 5);
  for (QuantKernel k : {QuantKernel::kScalar, QuantKernel::kAvx512Vnni}) {
    if (!QuantKernelSupported(k)) continue;
    const Acts q = Quantize(k, x, m, in, cols);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t c = in; c < cols; ++c) EXPECT_EQ(q.a.q(i, c / 32)[c % 32], 0);
      EXPECT_NE(q.a.d(i, 2), 0.0f);  // k 64..79 are real values
    }
  }
  if (HaveVnni()) {
    const Acts a = Quantize(QuantKernel::kScalar, x, m, in, cols), b = Quantize(QuantKernel::kAvx512Vnni, x, m, in, cols);
    EXPECT_EQ(std::memcmp(a.a.data, b.a.data, QuantizedActsBytes(m, cols)), 0);
  }
}

class QuantLinearTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ctx = DnnContext::Create();
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    ctx_ = *std::move(ctx);
    threads_ = omp_get_max_threads();
  }
  void TearDown() override { omp_set_num_threads(threads_); }
  LinearOptions Options(QuantKernel k) const {
    LinearOptions o;
    o.quant_kernel = k;
    return o;
  }
  std::unique_ptr<DnnContext> ctx_;
  int threads_ = 1;
};

// Q|K|V-like stack of three formats: each row's outputs are the same bits for every M and
// thread count, and equal the kernel run on each part alone.
TEST_F(QuantLinearTest, StackedFormatsGiveEveryRowTheSameBitsForEveryBatch) {
  const int64_t in = 512;
  const Weights q = MakeWeights(QuantType::kQ4_K, 64, in, 7), k = MakeWeights(QuantType::kQ6_K, 32, in, 8),
                v = MakeWeights(QuantType::kQ8_0, 40, in, 9);
  const TensorView parts_v[] = {QuantView("q", QuantType::kQ4_K, 64, in, q.file),
                                QuantView("k", QuantType::kQ6_K, 32, in, k.file),
                                QuantView("v", QuantType::kQ8_0, 40, in, v.file)};
  const TensorView* parts[] = {&parts_v[0], &parts_v[1], &parts_v[2]};
  const int64_t out = 136;
  for (QuantKernel kern : {QuantKernel::kScalar, QuantKernel::kAvx512Vnni}) {
    if (!QuantKernelSupported(kern)) continue;
    SCOPED_TRACE(QuantKernelName(kern));
    auto lin = Linear::Create(*ctx_, parts, nullptr, Options(kern));
    ASSERT_TRUE(lin.ok()) << lin.status();
    EXPECT_EQ((*lin)->format(), "Q4_K+Q6_K+Q8_0");
    EXPECT_EQ((*lin)->out_features(), out);
    EXPECT_EQ((*lin)->in_features(), in);
    const int64_t big = 136;  // from 128 rows Q4_K and Q6_K take the panel scratch, Q8_0 does not
    const std::vector<float> x = RandomActs(big, in, 11);
    std::vector<float> y_big(static_cast<size_t>(big * out));
    omp_set_num_threads(2);
    (*lin)->Forward(x.data(), big, y_big.data());
    // Each part alone, through the kernel.
    const Acts qa = Quantize(kern, x, big, in, in);
    std::vector<float> y_parts(y_big.size());
    int64_t col0 = 0;
    for (const Weights* w : {&q, &k, &v}) {
      QuantGemm(kern, w->w, 0, w->w.groups, qa.a, nullptr, nullptr, y_parts.data() + col0, out);
      col0 += w->w.rows;
    }
    for (size_t i = 0; i < y_big.size(); ++i) ASSERT_EQ(y_big[i], y_parts[i]) << "element " << i;
    for (int threads : {1, 2, 3}) {
      omp_set_num_threads(threads);
      for (int64_t m : {1, 2, 5, 9, 17, 70}) {
        for (int64_t r0 : {int64_t{0}, big - m}) {
          std::vector<float> y(static_cast<size_t>(m * out));
          (*lin)->Forward(x.data() + r0 * in, m, y.data());
          ASSERT_EQ(std::memcmp(y.data(), y_big.data() + r0 * out, y.size() * 4), 0)
              << "threads " << threads << " m " << m << " from row " << r0;
        }
      }
    }
  }
}

// --weight-dtype int8 on an f32 weight whose width is not a multiple of 32: the product is
// the Q8_0 weights' (ggml's quantizer) times the quantized activations.
TEST_F(QuantLinearTest, Int8FromF32HandlesAnyWidth) {
  const int64_t out = 21, in = 172;
  std::vector<float> w = RandomActs(out, in, 12);
  for (float& f : w) f *= 0.05f;
  std::vector<float> b(static_cast<size_t>(out), 0.25f);
  TensorView wv{"w", DType::kF32, {out, in}, reinterpret_cast<const uint8_t*>(w.data()), w.size() * 4};
  TensorView bv{"b", DType::kF32, {out}, reinterpret_cast<const uint8_t*>(b.data()), b.size() * 4};
  const TensorView* parts[] = {&wv};
  LinearOptions o = Options(QuantKernel::kScalar);
  o.quant = WeightQuant::kInt8;
  auto lin = Linear::Create(*ctx_, parts, &bv, o);
  ASSERT_TRUE(lin.ok()) << lin.status();
  EXPECT_EQ((*lin)->format(), "Q8_0");
  const int64_t m = 3;
  const std::vector<float> x = RandomActs(m, in, 13);
  std::vector<float> y(static_cast<size_t>(m * out));
  (*lin)->Forward(x.data(), m, y.data());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t r = 0; r < out; ++r) {
      double exact = 0.25, mag = 0;
      for (int64_t k = 0; k < in; ++k) {
        exact += double{w[static_cast<size_t>(r * in + k)]} * x[static_cast<size_t>(i * in + k)];
        mag += std::fabs(double{w[static_cast<size_t>(r * in + k)]} * x[static_cast<size_t>(i * in + k)]);
      }
      // Two 8-bit quantizations (weights and activations), each off by at most half a step
      // of 1/127 of its block's maximum: well within 2% of the terms' magnitude.
      EXPECT_NEAR(y[static_cast<size_t>(i * out + r)], exact, 0.02 * mag) << i << "," << r;
    }
  }
}

TEST_F(QuantLinearTest, RejectsWidthsTheBlocksDoNotDivide) {
  std::vector<uint8_t> bytes(144 * 2);
  TensorView bad = QuantView("w", QuantType::kQ4_K, 1, 512, bytes);
  TensorView dense{"d", DType::kF32, {1, 100}, bytes.data(), 400};
  bad.shape = {2, 256};
  const TensorView* parts[] = {&bad, &dense};
  auto lin = Linear::Create(*ctx_, parts, nullptr, Options(QuantKernel::kScalar));
  EXPECT_FALSE(lin.ok());
}

}  // namespace
}  // namespace llmserve
