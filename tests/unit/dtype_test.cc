#include "model/dtype.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace llmserve {
namespace {

TEST(DTypeTest, F16ToF32KnownValues) {
  EXPECT_EQ(F16ToF32(0x3C00), 1.0f);
  EXPECT_EQ(F16ToF32(0xC000), -2.0f);
  EXPECT_EQ(F16ToF32(0x7BFF), 65504.0f);
  EXPECT_EQ(F16ToF32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(F16ToF32(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_TRUE(std::isinf(F16ToF32(0x7C00)));
  EXPECT_TRUE(std::isnan(F16ToF32(0x7E00)));
  EXPECT_TRUE(std::signbit(F16ToF32(0x8000)));
}

TEST(DTypeTest, BF16RoundTripAndRounding) {
  EXPECT_EQ(BF16ToF32(F32ToBF16(1.5f)), 1.5f);
  EXPECT_EQ(F32ToBF16(1.0f), 0x3F80);
  // 1 + 2^-8 is exactly halfway between two bf16 values: ties to even (down to 1.0).
  EXPECT_EQ(F32ToBF16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  // Just above halfway rounds up.
  EXPECT_EQ(F32ToBF16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -16)), 0x3F81);
  EXPECT_TRUE(std::isnan(BF16ToF32(F32ToBF16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(DTypeTest, ConvertToF32) {
  const uint16_t halves[] = {0x3C00, 0x4000, 0xBC00};
  float out[3];
  ConvertToF32(DType::kF16, halves, 3, out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 2.0f);
  EXPECT_EQ(out[2], -1.0f);
  const uint16_t bf[] = {0x3F80, 0x4040};
  ConvertToF32(DType::kBF16, bf, 2, out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 3.0f);
}

}  // namespace
}  // namespace llmserve
