// CheckFinite finds NaN and infinity in dense tensors and in quantized blocks' scales, and
// Transformer::Create refuses a model file holding one.
#include "model/finite_check.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/model_loader.h"
#include "model/quant/ggml_blocks.h"
#include "model/runtime_config.h"
#include "model/transformer.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

TensorView View(const std::string& name, DType dtype, const std::vector<uint8_t>& bytes) {
  const int64_t n = static_cast<int64_t>(bytes.size() / DTypeSize(dtype));
  return TensorView{name, dtype, {n}, bytes.data(), bytes.size()};
}

template <class Bits>
void Put(std::vector<uint8_t>& bytes, int64_t i, Bits b) {
  std::memcpy(bytes.data() + i * static_cast<int64_t>(sizeof(Bits)), &b, sizeof(b));
}

TEST(FiniteCheckTest, DenseTensorsReportTheFirstBadElement) {
  constexpr int64_t n = 200'000;  // several chunks of parallel work
  struct Case {
    DType dtype;
    uint32_t one, nan, inf, big_finite;  // bit patterns
  };
  for (const Case& c : {Case{DType::kF32, 0x3F800000u, 0x7FC00000u, 0xFF800000u, 0x7F7FFFFFu},
                        Case{DType::kF16, 0x3C00u, 0x7E00u, 0xFC00u, 0x7BFFu},
                        Case{DType::kBF16, 0x3F80u, 0x7FC0u, 0xFF80u, 0x7F7Fu}}) {
    std::vector<uint8_t> bytes(static_cast<size_t>(n) * DTypeSize(c.dtype));
    auto put = [&](int64_t i, uint32_t bits) {
      if (c.dtype == DType::kF32) {
        Put<uint32_t>(bytes, i, bits);
      } else {
        Put<uint16_t>(bytes, i, static_cast<uint16_t>(bits));
      }
    };
    for (int64_t i = 0; i < n; ++i) put(i, i % 3 == 0 ? c.big_finite : c.one);
    EXPECT_TRUE(CheckFinite(View("w", c.dtype, bytes)).ok()) << DTypeName(c.dtype);
    put(150'001, c.inf);
    put(70'000, c.nan);
    const absl::Status s = CheckFinite(View("blk.0.ffn_up.weight", c.dtype, bytes));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), std::string("tensor blk.0.ffn_up.weight (") + std::string(DTypeName(c.dtype)) +
                               ") has a NaN or infinite value at element 70000: the model file is corrupt");
    put(70'000, c.one);
    EXPECT_NE(std::string(CheckFinite(View("w", c.dtype, bytes)).message()).find("element 150001"), std::string::npos);
  }
}

// The scales CheckFinite reads are the ones ggml's decoder (DecodeBlock) reads: a NaN put
// where CheckFinite looks is the block's d (or m) to the decoder, and the block is refused.
TEST(FiniteCheckTest, QuantizedBlocksScalesAreChecked) {
  std::mt19937 rng(7);
  constexpr uint16_t kOne = 0x3C00, kNan = 0x7E00, kInf = 0x7C00;
  for (QuantType t : kAllQuantTypes) {
    const int64_t bb = QuantBlockBytes(t);
    constexpr int64_t kBlocks = 70'000;  // more than one chunk
    std::vector<uint8_t> bytes(static_cast<size_t>(bb * kBlocks));
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    // Make every block's d and m finite, through the decoder's eyes.
    const uint16_t d_off_candidates[] = {0, 2, static_cast<uint16_t>(bb - 2)};
    for (int64_t i = 0; i < kBlocks; ++i) {
      uint8_t* block = bytes.data() + i * bb;
      for (uint16_t off : d_off_candidates) std::memcpy(block + off, &kOne, 2);
    }
    TensorView v{"blk.1.attn_q.weight", DType::kF32, {kBlocks * QuantBlockElems(t)}, bytes.data(), bytes.size(), t};
    v.shape = {1, kBlocks * QuantBlockElems(t)};
    ASSERT_TRUE(CheckFinite(v).ok()) << QuantTypeName(t) << ": " << CheckFinite(v);
    uint8_t* bad = bytes.data() + 65'537 * bb;
    DecodedBlock before;
    DecodeBlock(t, bad, &before);
    ASSERT_EQ(before.d, kOne) << QuantTypeName(t);
    // NaN in d.
    const int d_off = t == QuantType::kQ6_K ? 208 : 0;
    std::memcpy(bad + d_off, &kNan, 2);
    DecodedBlock after;
    DecodeBlock(t, bad, &after);
    EXPECT_EQ(after.d, kNan) << QuantTypeName(t);
    absl::Status s = CheckFinite(v);
    EXPECT_EQ(s.message(), std::string("tensor blk.1.attn_q.weight (") + std::string(QuantTypeName(t)) +
                               ") has a NaN or infinite scale in block 65537: the model file is corrupt");
    std::memcpy(bad + d_off, &kOne, 2);
    // Infinity in the min, for the formats with one.
    if (t == QuantType::kQ4_1 || t == QuantType::kQ5_1 || t == QuantType::kQ4_K || t == QuantType::kQ5_K) {
      std::memcpy(bad + 2, &kInf, 2);
      DecodeBlock(t, bad, &after);
      EXPECT_EQ(after.m, kInf) << QuantTypeName(t);
      EXPECT_FALSE(CheckFinite(v).ok()) << QuantTypeName(t);
      std::memcpy(bad + 2, &kOne, 2);
    }
    EXPECT_TRUE(CheckFinite(v).ok()) << QuantTypeName(t);
  }
}

TEST(FiniteCheckTest, TransformerCreateRefusesAModelWithANanWeight) {
  LLMSERVE_REQUIRE_ASSET(path, "models/llama2c/stories260K.bin");
  std::ifstream in(path, std::ios::binary);
  std::vector<char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(file.size(), 28u + 4 * 101);
  // A version-0 checkpoint: the 28-byte header, then token_embd.weight in f32.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(file.data() + 28 + 4 * 100, &nan, 4);
  const std::string patched = testing::ScratchDir("finite_check") + "/stories260K_nan.bin";
  std::ofstream(patched, std::ios::binary).write(file.data(), static_cast<std::streamsize>(file.size()));
  auto weights = LoadModel(patched);
  ASSERT_TRUE(weights.ok()) << weights.status();
  RuntimeConfig rt;
  rt.weight_dtype = DType::kF32;
  auto model = Transformer::Create(**weights, rt);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().message(),
            "tensor token_embd.weight (f32) has a NaN or infinite value at element 100: the model file is corrupt");
  // The file as it was loads.
  auto good = LoadModel(path);
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE(Transformer::Create(**good, rt).ok());
}

}  // namespace
}  // namespace llmserve
