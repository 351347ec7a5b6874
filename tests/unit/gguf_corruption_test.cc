// Corrupted GGUF files: truncation at every header byte, patched length/count/type/
// offset fields, structural errors. Every one must be rejected with a message naming
// the file, without crashing and without a huge allocation.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/formats/gguf_file.h"
#include "model/formats/gguf_model.h"
#include "model/formats/gguf_tokenizer.h"
#include "tests/util/gguf_tiny_models.h"
#include "tests/util/gguf_writer.h"

// ---- Largest single heap allocation, to catch "reserve(count from header)".
namespace {
std::atomic<size_t> g_largest_alloc{0};
}  // namespace

// GCC cannot see that this new/delete pair matches (malloc/free) and warns.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t n) {
  size_t cur = g_largest_alloc.load(std::memory_order_relaxed);
  while (n > cur && !g_largest_alloc.compare_exchange_weak(cur, n, std::memory_order_relaxed)) {
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace llmserve {
namespace {

using ::llmserve::testing::EveryTypeWriter;
using ::llmserve::testing::GgufEncoder;
using ::llmserve::testing::GgufFieldKind;
using ::llmserve::testing::GgufWriter;
using ::llmserve::testing::TinyLlamaWriter;

constexpr const char* kSource = "corrupt.gguf";
// Far above anything the ~20 KB test files legitimately need.
constexpr size_t kAllocLimit = size_t{1} << 20;

// Parses `bytes` (a private copy, so ASan sees its exact bounds), then loads the model
// and the tokenizer. Returns the first failure.
absl::Status ParseAndLoad(const std::vector<uint8_t>& bytes, size_t* largest_alloc) {
  std::vector<uint8_t> copy(bytes);
  g_largest_alloc.store(0);
  absl::Status status;
  {
    auto g = GgufFile::ParseBytes(copy, kSource);
    if (!g.ok()) {
      status = g.status();
    } else {
      auto model = LoadGgufModel(**g);
      status = model.status();
      if (status.ok()) status = TokenizerSpecFromGguf(**g).status();
    }
  }
  *largest_alloc = g_largest_alloc.load();
  return status;
}

void ExpectRejected(const std::vector<uint8_t>& bytes, const std::string& what) {
  size_t largest = 0;
  absl::Status s = ParseAndLoad(bytes, &largest);
  EXPECT_FALSE(s.ok()) << what;
  EXPECT_NE(s.message().find(kSource), std::string::npos) << what << ": " << s;
  EXPECT_LT(largest, kAllocLimit) << what << ": " << s;
}

template <typename T>
std::vector<uint8_t> Patched(const std::vector<uint8_t>& bytes, size_t offset, T value) {
  std::vector<uint8_t> b = bytes;
  std::memcpy(b.data() + offset, &value, sizeof(T));
  return b;
}

TEST(GgufCorruptionTest, ValidFileLoadsCleanly) {
  // The baseline for every corruption below.
  size_t largest = 0;
  EXPECT_TRUE(ParseAndLoad(TinyLlamaWriter().Build().bytes, &largest).ok());
  EXPECT_LT(largest, kAllocLimit);
}

TEST(GgufCorruptionTest, TruncatedAnywhere) {
  const auto built = TinyLlamaWriter().Build();
  const size_t size = built.bytes.size();
  std::vector<size_t> cuts;
  for (size_t n = 0; n <= built.tensor_info_end; ++n) cuts.push_back(n);
  for (size_t n = built.tensor_info_end + 1; n < size; n += (size - built.tensor_info_end) / 300 + 1) cuts.push_back(n);
  cuts.push_back(size - 1);
  for (size_t n : cuts) {
    ExpectRejected(std::vector<uint8_t>(built.bytes.begin(), built.bytes.begin() + n),
                   "truncated to " + std::to_string(n) + " of " + std::to_string(size));
  }
}

// A file with quantized (Q8_0) tensors: every truncation, a row length that is not a
// multiple of the block, and a type whose size does not match the bytes laid out for it.
TEST(GgufCorruptionTest, QuantizedTensors) {
  testing::TinyLlamaOptions o;
  o.ffn_down_type = 8;
  const auto built = TinyLlamaWriter(o).Build();
  size_t largest = 0;
  ASSERT_TRUE(ParseAndLoad(built.bytes, &largest).ok());
  const size_t size = built.bytes.size();
  for (size_t n = built.tensor_info_end; n < size; n += 7) {
    ExpectRejected(std::vector<uint8_t>(built.bytes.begin(), built.bytes.begin() + n), "truncated to " + std::to_string(n));
  }
  int dims = 0, types = 0;
  for (size_t i = 0; i < built.fields.size(); ++i) {
    const auto& f = built.fields[i];
    if (f.label.find("ffn_down") == std::string::npos) continue;
    if (f.kind == GgufFieldKind::kDim && dims++ == 0) {  // the row length (innermost dim), 32
      const auto bad = Patched(built.bytes, f.offset, uint64_t{48});
      absl::Status s = ParseAndLoad(bad, &largest);
      ExpectRejected(bad, "row length 48");
      EXPECT_NE(s.message().find("not a multiple of the block size 32"), std::string::npos) << s;
    }
    if (f.kind == GgufFieldKind::kTensorType) {
      // Q8_0 -> F16 (more bytes than laid out), Q4_0 and Q5_1 (fewer): the offsets no longer match.
      for (uint32_t t : {1u, 2u, 7u}) {
        const auto bad = Patched(built.bytes, f.offset, t);
        absl::Status s = ParseAndLoad(bad, &largest);
        ExpectRejected(bad, "type " + std::to_string(t));
        EXPECT_TRUE(s.message().find("does not match its type and shape") != std::string::npos ||
                    s.message().find("past the end of the file") != std::string::npos)
            << s;
      }
      ++types;
    }
  }
  EXPECT_EQ(types, 2);  // both layers
}

// The metadata-only file ends with its last value, so every strict prefix is invalid;
// this reaches every value reader (nested arrays, strings, each scalar width).
TEST(GgufCorruptionTest, MetadataOnlyFileTruncatedAnywhere) {
  const auto built = EveryTypeWriter().Build();
  ASSERT_TRUE(GgufFile::ParseBytes(built.bytes, kSource).ok());
  for (size_t n = 0; n < built.bytes.size(); ++n) {
    std::vector<uint8_t> prefix(built.bytes.begin(), built.bytes.begin() + n);
    g_largest_alloc.store(0);
    auto g = GgufFile::ParseBytes(prefix, kSource);
    EXPECT_LT(g_largest_alloc.load(), kAllocLimit) << n;
    ASSERT_FALSE(g.ok()) << "prefix of " << n << " bytes parsed";
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(g.status().message().find(kSource), std::string::npos) << g.status();
  }
}

TEST(GgufCorruptionTest, MetadataOnlyFilePatchedFields) {
  const auto built = EveryTypeWriter().Build();
  int patched = 0;
  for (const auto& f : built.fields) {
    std::vector<std::vector<uint8_t>> variants;
    if (f.kind == GgufFieldKind::kStringLength || f.kind == GgufFieldKind::kKeyLength ||
        f.kind == GgufFieldKind::kArrayCount || f.kind == GgufFieldKind::kKvCount) {
      for (uint64_t v : {uint64_t{1} << 40, uint64_t{1} << 63, ~uint64_t{0}}) {
        variants.push_back(Patched(built.bytes, f.offset, v));
      }
    } else if (f.kind == GgufFieldKind::kValueType || f.kind == GgufFieldKind::kArrayElemType) {
      for (uint32_t v : {13u, 0x80000009u}) variants.push_back(Patched(built.bytes, f.offset, v));
    }
    for (const auto& b : variants) {
      g_largest_alloc.store(0);
      auto g = GgufFile::ParseBytes(b, kSource);
      EXPECT_LT(g_largest_alloc.load(), kAllocLimit) << f.label;
      EXPECT_FALSE(g.ok()) << "field '" << f.label << "' at " << f.offset;
      if (!g.ok()) {
        EXPECT_NE(g.status().message().find(kSource), std::string::npos) << g.status();
      }
      ++patched;
    }
  }
  EXPECT_GT(patched, 150);
}

TEST(GgufCorruptionTest, PatchedFields) {
  const auto built = TinyLlamaWriter().Build();
  const auto& bytes = built.bytes;
  constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
  int patched = 0;
  for (const auto& f : built.fields) {
    const std::string where = "field '" + f.label + "' at " + std::to_string(f.offset);
    uint64_t orig64 = 0;
    uint32_t orig32 = 0;
    if (f.size == 8) std::memcpy(&orig64, bytes.data() + f.offset, 8);
    if (f.size == 4) std::memcpy(&orig32, bytes.data() + f.offset, 4);
    std::vector<uint64_t> v64;
    std::vector<uint32_t> v32;
    switch (f.kind) {
      case GgufFieldKind::kKeyLength:
      case GgufFieldKind::kStringLength:
      case GgufFieldKind::kTensorNameLength:
      case GgufFieldKind::kArrayCount:
      case GgufFieldKind::kTensorCount:
      case GgufFieldKind::kKvCount:
        // Each exceeds the bytes left in a 20 KB file (and would need a huge allocation).
        v64 = {uint64_t{1} << 40, uint64_t{1} << 63, orig64 | (uint64_t{1} << 63), orig64 + (uint64_t{1} << 32),
               kU64Max};
        break;
      case GgufFieldKind::kDim:
        // 2^62 overflows numel*elem_size or the file; 2^63 is not an int64; 0 empties the tensor.
        v64 = {uint64_t{1} << 62, uint64_t{1} << 63, uint64_t{1} << 40, kU64Max, 0, orig64 * 2};
        break;
      case GgufFieldKind::kTensorOffset:
        v64 = {bytes.size(), orig64 + 1, orig64 + 16, orig64 + 32 * 1000, uint64_t{1} << 63, kU64Max - 31};
        break;
      case GgufFieldKind::kNDims: v32 = {5, 0xffffffffu}; break;
      case GgufFieldKind::kTensorType: v32 = {4, 5, 31, 36, 40, 1000, 0xffffffffu, 10, 11, 16, 20, 23, 12}; break;
      case GgufFieldKind::kValueType:
      case GgufFieldKind::kArrayElemType: v32 = {13, 99, 0xffffffffu}; break;
      case GgufFieldKind::kMagic: v32 = {orig32 ^ 1u, 0}; break;
      case GgufFieldKind::kVersion: v32 = {0, 1, 4, 0x03000000u}; break;
    }
    for (uint64_t v : v64) {
      ExpectRejected(Patched(bytes, f.offset, v), where + " = " + std::to_string(v));
      ++patched;
    }
    for (uint32_t v : v32) {
      ExpectRejected(Patched(bytes, f.offset, v), where + " = " + std::to_string(v));
      ++patched;
    }
  }
  EXPECT_GT(patched, 500);
}

// Small enlargements may shift parsing anywhere; they need not all be rejected, but
// nothing may crash or allocate wildly.
TEST(GgufCorruptionTest, SmallEnlargementsNeverCrash) {
  const auto built = TinyLlamaWriter().Build();
  for (const auto& f : built.fields) {
    for (uint64_t delta : {1u, 7u}) {
      std::vector<uint8_t> b = built.bytes;
      if (f.size == 8) {
        uint64_t v;
        std::memcpy(&v, b.data() + f.offset, 8);
        v += delta;
        std::memcpy(b.data() + f.offset, &v, 8);
      } else {
        uint32_t v;
        std::memcpy(&v, b.data() + f.offset, 4);
        v += static_cast<uint32_t>(delta);
        std::memcpy(b.data() + f.offset, &v, 4);
      }
      size_t largest = 0;
      absl::Status s = ParseAndLoad(b, &largest);
      EXPECT_LT(largest, kAllocLimit) << f.label;
      if (!s.ok()) {
        EXPECT_NE(s.message().find(kSource), std::string::npos) << s;
      }
    }
  }
}

TEST(GgufCorruptionTest, StructuralErrors) {
  auto with = [](auto&& add) {
    GgufWriter w = TinyLlamaWriter();
    add(w);
    return w.Build().bytes;
  };
  ExpectRejected(with([](GgufWriter& w) { w.U32("llama.block_count", 3); }), "duplicate key");
  ExpectRejected(with([](GgufWriter& w) { w.U32("", 3); }), "empty key");
  ExpectRejected(with([](GgufWriter& w) { w.Scalar<uint8_t>("x.bool", GgufType::kBool, 2); }), "bool 2");
  ExpectRejected(with([](GgufWriter& w) { w.Array<uint8_t>("x.bools", GgufType::kBool, {0, 1, 7}); }), "bool array");
  ExpectRejected(with([](GgufWriter& w) { w.FloatTensor("output_norm.weight", DType::kF32, {16}, {}); }),
                 "duplicate tensor");
  ExpectRejected(with([](GgufWriter& w) {
                   w.Tensor("x.q4", 2, {16}, std::vector<uint8_t>(18));  // row 16 < Q4_0 block of 32
                 }),
                 "row not a multiple of the block size");
  ExpectRejected(with([](GgufWriter& w) {
                   w.Kv("x.deep", GgufType::kArray, [](GgufEncoder& e) {
                     for (int d = 0; d < 20; ++d) e.ArrayHeader(GgufType::kArray, 1, "level");
                     e.ArrayHeader(GgufType::kU8, 0, "leaf");
                   });
                 }),
                 "arrays nested 21 deep");
  // Dims whose product overflows 64 bits.
  ExpectRejected(with([](GgufWriter& w) {
                   w.Tensor("x.huge", 0, {uint64_t{1} << 32, uint64_t{1} << 32}, std::vector<uint8_t>(4));
                 }),
                 "numel overflow");
}

TEST(GgufCorruptionTest, NestedArrayDepthLimitIsExact) {
  auto nested = [](int depth) {
    GgufWriter w = TinyLlamaWriter();
    w.Kv("x.deep", GgufType::kArray, [depth](GgufEncoder& e) {
      for (int d = 1; d < depth; ++d) e.ArrayHeader(GgufType::kArray, 1, "level");
      e.ArrayHeader(GgufType::kU8, 1, "leaf");
      e.Raw(uint8_t{9});
    });
    return w.Build().bytes;
  };
  const auto deepest = nested(kGgufMaxArrayDepth);
  auto ok = GgufFile::ParseBytes(deepest, kSource);
  ASSERT_TRUE(ok.ok()) << ok.status();
  const GgufValue* v = (*ok)->Find("x.deep");
  for (int d = 1; d < kGgufMaxArrayDepth; ++d) v = &v->arrays.at(0);
  EXPECT_EQ(v->ints, (std::vector<int64_t>{9}));
  const auto too_deep = nested(kGgufMaxArrayDepth + 1);
  auto bad = GgufFile::ParseBytes(too_deep, kSource);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("nested"), std::string::npos);
}

}  // namespace
}  // namespace llmserve
