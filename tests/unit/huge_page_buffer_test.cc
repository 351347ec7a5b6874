#include "model/ops/huge_page_buffer.h"

#include <cstdint>
#include <utility>

#include "gtest/gtest.h"

namespace llmserve {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(HugePageBufferTest, LargeBufferIsHugePageAlignedZeroedAndWritable) {
  absl::StatusOr<HugePageBuffer> b = HugePageBuffer::Allocate(5 * kMiB + 123, "test");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->size(), 5 * kMiB + 123);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % (2 * kMiB), 0u);
  for (size_t i = 0; i < b->size(); i += 4096) EXPECT_EQ(b->data()[i], 0) << i;
  EXPECT_EQ(b->data()[b->size() - 1], 0);
  b->data()[0] = 1;
  b->data()[b->size() - 1] = 2;  // the last byte is inside the mapping
  EXPECT_EQ(b->data()[b->size() - 1], 2);
}

TEST(HugePageBufferTest, SmallBufferIsPageAligned) {
  absl::StatusOr<HugePageBuffer> b = HugePageBuffer::Allocate(100, "test");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % 4096, 0u);
  b->data()[99] = 7;
  EXPECT_EQ(b->data()[99], 7);
}

TEST(HugePageBufferTest, MoveTransfersOwnership) {
  absl::StatusOr<HugePageBuffer> a = HugePageBuffer::Allocate(3 * kMiB, "test");
  ASSERT_TRUE(a.ok());
  uint8_t* data = a->data();
  data[10] = 42;
  HugePageBuffer b = *std::move(a);
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(b.data()[10], 42);
  HugePageBuffer c;
  EXPECT_EQ(c.data(), nullptr);
  c = std::move(b);
  EXPECT_EQ(c.data(), data);
  EXPECT_EQ(c.size(), 3 * kMiB);
  EXPECT_EQ(b.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(b.size(), 0u);
}

TEST(HugePageBufferTest, EmptyAndImpossibleSizesAreErrors) {
  absl::StatusOr<HugePageBuffer> empty = HugePageBuffer::Allocate(0, "weights");
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("weights"), std::string::npos);
  absl::StatusOr<HugePageBuffer> huge = HugePageBuffer::Allocate(size_t{1} << 62, "weights");
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted) << huge.status();
  absl::StatusOr<HugePageBuffer> overflow = HugePageBuffer::Allocate(SIZE_MAX - 5, "weights");
  EXPECT_EQ(overflow.status().code(), absl::StatusCode::kResourceExhausted) << overflow.status();
}

}  // namespace
}  // namespace llmserve
