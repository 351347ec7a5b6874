// GgufFile: metadata round trip, getters, header checks, alignment, tensor infos.
#include "model/formats/gguf_file.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/gguf_tiny_models.h"
#include "tests/util/gguf_writer.h"

namespace llmserve {
namespace {

using ::llmserve::testing::EveryTypeWriter;
using ::llmserve::testing::GgufWriter;
using ::llmserve::testing::TinyLlamaOptions;
using ::llmserve::testing::TinyLlamaWriter;

absl::StatusOr<std::unique_ptr<GgufFile>> ParseVec(const std::vector<uint8_t>& bytes) {
  return GgufFile::ParseBytes(bytes, "mem.gguf");
}

TEST(GgufFileTest, EveryMetadataTypeRoundTrips) {
  for (uint32_t version : {2u, 3u}) {
    SCOPED_TRACE(version);
    const auto built = EveryTypeWriter(version).Build();
    auto g = ParseVec(built.bytes);
    ASSERT_TRUE(g.ok()) << g.status();
    const GgufFile& f = **g;
    EXPECT_EQ(f.version(), version);
    EXPECT_EQ(f.metadata().size(), 29u);
    ASSERT_EQ(f.key_order().size(), 29u);
    EXPECT_EQ(f.key_order()[0], "t.u8");
    EXPECT_EQ(f.key_order()[28], "a.nested");
    EXPECT_TRUE(f.tensors().empty());

    EXPECT_EQ(f.Find("t.u8")->type, GgufType::kU8);
    EXPECT_EQ(f.Find("t.u8")->u, 250u);
    EXPECT_EQ(f.Find("t.i8")->i, -100);
    EXPECT_EQ(f.Find("t.u16")->u, 65000u);
    EXPECT_EQ(f.Find("t.i16")->i, -32000);
    EXPECT_EQ(f.Find("t.u32")->u, 4000000000u);
    EXPECT_EQ(f.Find("t.i32")->i, -2000000000);
    EXPECT_EQ(f.Find("t.f32")->f, 0.15625);
    EXPECT_EQ(f.Find("t.u64")->u, std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(f.Find("t.i64")->i, std::numeric_limits<int64_t>::min());
    EXPECT_EQ(f.Find("t.f64")->f, -1.0e300);
    EXPECT_EQ(*f.GetBool("t.bool_true"), true);
    EXPECT_EQ(*f.GetBool("t.bool_false"), false);
    EXPECT_EQ(*f.GetString("t.string"), "h\xc3\xa9llo\n");
    EXPECT_EQ(*f.GetString("t.empty_string"), "");

    EXPECT_EQ(*f.GetIntArray("a.u8"), (std::vector<int64_t>{0, 1, 255}));
    EXPECT_EQ(*f.GetIntArray("a.i8"), (std::vector<int64_t>{-128, 127}));
    EXPECT_EQ(*f.GetIntArray("a.u16"), (std::vector<int64_t>{65535}));
    EXPECT_EQ(*f.GetIntArray("a.i16"), (std::vector<int64_t>{-32768, 5}));
    EXPECT_EQ(*f.GetIntArray("a.u32"), (std::vector<int64_t>{4294967295, 7}));
    EXPECT_EQ(*f.GetIntArray("a.i32"), (std::vector<int64_t>{-1, 2, -3}));
    EXPECT_EQ(*f.GetIntArray("a.u64"), (std::vector<int64_t>{int64_t{1} << 40, 3}));
    EXPECT_EQ(*f.GetIntArray("a.i64"), (std::vector<int64_t>{-(int64_t{1} << 50)}));
    EXPECT_EQ(*f.GetFloatArray("a.f32"), (std::vector<float>{1.5f, -0.25f}));
    EXPECT_EQ(f.Find("a.f64")->f64s, (std::vector<double>{2.5, 1e-300}));
    EXPECT_EQ(f.Find("a.bool")->elem_type, GgufType::kBool);
    EXPECT_EQ(f.Find("a.bool")->ints, (std::vector<int64_t>{1, 0, 1}));
    auto strs = f.GetStringArray("a.string");
    ASSERT_TRUE(strs.ok());
    ASSERT_EQ(strs->size(), 3u);
    EXPECT_EQ((*strs)[2], "\xe2\x96\x81the");
    EXPECT_EQ((*strs)[1], "");
    EXPECT_EQ(f.Find("a.empty")->size(), 0u);
    EXPECT_EQ(f.Find("a.empty")->elem_type, GgufType::kU32);

    const GgufValue* nested = f.Find("a.nested");
    ASSERT_NE(nested, nullptr);
    ASSERT_EQ(nested->elem_type, GgufType::kArray);
    ASSERT_EQ(nested->size(), 3u);
    EXPECT_EQ(nested->arrays[0].elem_type, GgufType::kU16);
    EXPECT_EQ(nested->arrays[0].ints, (std::vector<int64_t>{1, 2}));
    ASSERT_EQ(nested->arrays[1].arrays.size(), 1u);
    EXPECT_EQ(nested->arrays[1].arrays[0].strs, (std::vector<std::string>{"deep"}));
    EXPECT_EQ(nested->arrays[2].elem_type, GgufType::kF32);
    EXPECT_EQ(nested->arrays[2].size(), 0u);
  }
}

TEST(GgufFileTest, GettersReportMissingKeysAndWrongTypes) {
  const auto built = EveryTypeWriter(3).Build();
  auto g = ParseVec(built.bytes);
  ASSERT_TRUE(g.ok()) << g.status();
  const GgufFile& f = **g;
  // Lenient integer getter: every integer type.
  EXPECT_EQ(*f.GetInt("t.u8"), 250);
  EXPECT_EQ(*f.GetInt("t.i16"), -32000);
  EXPECT_EQ(*f.GetInt("t.u32"), 4000000000);
  EXPECT_EQ(*f.GetInt("t.i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*f.GetFloat("t.f64"), -1.0e300);

  auto missing = f.GetInt("no.such.key");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("mem.gguf"), std::string::npos);
  EXPECT_NE(missing.status().message().find("no.such.key"), std::string::npos);

  auto wrong = f.GetString("t.u32");
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("t.u32"), std::string::npos);
  EXPECT_NE(wrong.status().message().find("u32"), std::string::npos);
  EXPECT_NE(wrong.status().message().find("mem.gguf"), std::string::npos);

  EXPECT_EQ(f.GetInt("t.f32").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.GetInt("t.bool_true").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.GetFloat("t.i32").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.GetBool("t.u8").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.GetStringArray("a.u32").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.GetIntArray("a.string").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.GetFloatArray("t.f32").status().code(), absl::StatusCode::kInvalidArgument);
  // Values beyond int64 are refused rather than wrapped.
  EXPECT_EQ(f.GetInt("t.u64").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.GetIntArray("a.u64_big").status().code(), absl::StatusCode::kInvalidArgument);
  // Strict getter by type.
  EXPECT_TRUE(f.Get("t.i8", GgufType::kI8).ok());
  EXPECT_EQ(f.Get("t.i8", GgufType::kU8).status().code(), absl::StatusCode::kInvalidArgument);
  // Fallbacks apply only to absent keys.
  EXPECT_EQ(*f.GetIntOr("absent", 42), 42);
  EXPECT_EQ(*f.GetIntOr("t.u16", 42), 65000);
  EXPECT_EQ(*f.GetFloatOr("absent", 2.5), 2.5);
  EXPECT_EQ(*f.GetStringOr("absent", "dflt"), "dflt");
  EXPECT_EQ(*f.GetBoolOr("absent", true), true);
  EXPECT_EQ(f.GetIntOr("t.string", 42).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.GetBoolOr("t.u8", true).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GgufFileTest, TensorInfosShapesAndData) {
  const auto built = TinyLlamaWriter().Build();
  auto g = ParseVec(built.bytes);
  ASSERT_TRUE(g.ok()) << g.status();
  const GgufFile& f = **g;
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset(), built.data_offset);
  EXPECT_EQ(f.data_offset() % 32, 0u);
  EXPECT_EQ(f.tensors().size(), 1u + 2 * 9 + 2);
  const GgufTensorInfo* k = f.FindTensor("blk.1.attn_k.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->ggml_type, kGgmlTypeBF16);
  EXPECT_EQ(k->shape, (std::vector<int64_t>{8, 16}));  // file dims {16, 8}, reversed
  EXPECT_EQ(k->nbytes, 8u * 16 * 2);
  EXPECT_EQ(k->offset % 32, 0u);
  EXPECT_EQ(k->data, built.bytes.data() + built.data_offset + k->offset);
  auto view = f.View(*k);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->dtype, DType::kBF16);
  EXPECT_EQ(view->shape, k->shape);
  EXPECT_EQ(f.FindTensor("nope"), nullptr);
}

TEST(GgufFileTest, QuantizedTensorsAreViewedAsTheirBlocks) {
  TinyLlamaOptions o;
  o.ffn_down_type = 8;
  const auto built = TinyLlamaWriter(o).Build();
  auto g = ParseVec(built.bytes);
  ASSERT_TRUE(g.ok()) << g.status();
  const GgufTensorInfo* t = (*g)->FindTensor("blk.0.ffn_down.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->ggml_type, 8u);
  EXPECT_EQ(GgmlTypeName(t->ggml_type), "Q8_0");
  EXPECT_EQ(t->nbytes, 16u * 34);  // 16 rows of one 32-element Q8_0 block
  auto view = (*g)->View(*t);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->quant, QuantType::kQ8_0);
  EXPECT_EQ(view->TypeName(), "Q8_0");
  EXPECT_EQ(view->shape, (std::vector<int64_t>{16, 32}));
  EXPECT_EQ(view->nbytes, 16u * 34);
  EXPECT_EQ(view->data, t->data);
}

TEST(GgufFileTest, TypesNotComputedWithParseButCannotBeViewed) {
  TinyLlamaOptions o;
  o.ffn_down_type = 20;  // IQ4_NL: blocks of 32, 18 bytes
  const auto built = TinyLlamaWriter(o).Build();
  auto g = ParseVec(built.bytes);
  ASSERT_TRUE(g.ok()) << g.status();
  const GgufTensorInfo* t = (*g)->FindTensor("blk.0.ffn_down.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->nbytes, 16u * 18);
  auto view = (*g)->View(*t);
  EXPECT_EQ(view.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(view.status().message(),
            "mem.gguf: tensor blk.0.ffn_down.weight has type IQ4_NL (20): supported are F32, F16, BF16, Q8_0, Q4_0, "
            "Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K");
}

TEST(GgufFileTest, AlignmentKey) {
  for (uint32_t a : {1u, 8u, 64u, 4096u}) {
    SCOPED_TRACE(a);
    GgufWriter w = TinyLlamaWriter();
    w.U32("general.alignment", a);
    w.alignment = a;
    const auto built = w.Build();
    auto g = ParseVec(built.bytes);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ((*g)->alignment(), a);
    EXPECT_EQ((*g)->data_offset(), built.data_offset);
    EXPECT_EQ((*g)->data_offset() % a, 0u);
    for (const auto& t : (*g)->tensors()) EXPECT_EQ(t.data, built.bytes.data() + built.data_offset + t.offset);
  }
  for (uint64_t bad : {uint64_t{0}, uint64_t{3}, uint64_t{48}, uint64_t{1} << 31, uint64_t{1} << 63}) {
    SCOPED_TRACE(bad);
    GgufWriter w = TinyLlamaWriter();
    w.U64("general.alignment", bad);
    auto g = ParseVec(w.Build().bytes);
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(g.status().message().find("mem.gguf"), std::string::npos);
    EXPECT_NE(g.status().message().find("general.alignment"), std::string::npos);
  }
  GgufWriter w = TinyLlamaWriter();
  w.String("general.alignment", "32");
  EXPECT_EQ(ParseVec(w.Build().bytes).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GgufFileTest, VersionsAndMagic) {
  auto bytes = TinyLlamaWriter().Build().bytes;
  auto patch_u32 = [&](size_t off, uint32_t v) {
    auto b = bytes;
    std::memcpy(b.data() + off, &v, 4);
    return b;
  };
  EXPECT_TRUE(ParseVec(patch_u32(4, 2)).ok());
  auto v1 = ParseVec(patch_u32(4, 1));
  EXPECT_EQ(v1.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(v1.status().message().find("mem.gguf"), std::string::npos);
  EXPECT_NE(v1.status().message().find("version 1"), std::string::npos);
  for (uint32_t v : {0u, 4u, 0x03000000u, 0xffffffffu}) {
    auto r = ParseVec(patch_u32(4, v));
    EXPECT_FALSE(r.ok()) << v;
    EXPECT_NE(r.status().message().find("mem.gguf"), std::string::npos);
  }
  auto bad_magic = ParseVec(patch_u32(0, 0x46554746));
  EXPECT_EQ(bad_magic.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_magic.status().message().find("magic"), std::string::npos);
  EXPECT_FALSE(ParseVec({}).ok());
}

TEST(GgufFileTest, OpenReportsMissingFile) {
  auto g = GgufFile::Open("/nonexistent/dir/model.gguf");
  EXPECT_EQ(g.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(g.status().message().find("/nonexistent/dir/model.gguf"), std::string::npos);
}

TEST(GgufFileTest, GgmlTypeTable) {
  EXPECT_EQ(GgmlTypeName(0), "F32");
  EXPECT_EQ(GgmlTypeName(2), "Q4_0");
  EXPECT_EQ(GgmlTypeName(12), "Q4_K");
  EXPECT_EQ(GgmlTypeName(30), "BF16");
  EXPECT_EQ(GgmlTypeName(4), "unknown");  // Q4_2: removed from ggml
  EXPECT_EQ(GgmlTypeToDType(1), DType::kF16);
  EXPECT_EQ(GgmlTypeToDType(30), DType::kBF16);
  EXPECT_FALSE(GgmlTypeToDType(2).has_value());
  // Q4_0 block: f16 scale + 32 4-bit values = 18 bytes; Q6_K: 210 bytes per 256.
  EXPECT_EQ(GgmlTypeInfo(2)->type_size, 18u);
  EXPECT_EQ(GgmlTypeInfo(14)->block_size, 256u);
  EXPECT_EQ(GgmlTypeInfo(14)->type_size, 210u);
}

}  // namespace
}  // namespace llmserve
