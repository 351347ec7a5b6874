#include "model/formats/safetensors_file.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/safetensors_writer.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

using ::llmserve::testing::AppendLE;
using ::llmserve::testing::EncodeFloats;
using ::llmserve::testing::SafetensorsBytes;
using ::llmserve::testing::SafetensorsRaw;
using ::llmserve::testing::ScratchDir;
using ::llmserve::testing::StTensor;
using ::llmserve::testing::WriteFileBytes;

std::vector<float> Floats(const SafetensorsEntry& e) {
  std::vector<float> v(e.nbytes / DTypeSize(*e.dtype));
  ConvertToF32(*e.dtype, e.data, v.size(), v.data());
  return v;
}

TEST(SafetensorsFileTest, ParsesTensorsDtypesAndMetadata) {
  const std::string path = ScratchDir("st_ok") + "/ok.safetensors";
  std::string i64;
  for (int64_t v : {7, -3}) AppendLE(&i64, v);
  WriteFileBytes(path, SafetensorsBytes(
                           {
                               {"a", "F32", {2, 3}, EncodeFloats({1, 2, 3, 4, 5, 6.5f}, "F32")},
                               {"b", "F16", {2}, EncodeFloats({0.5f, -2}, "F16")},
                               {"c", "BF16", {1, 1, 2}, EncodeFloats({3, -0.25f}, "BF16")},
                               {"ids", "I64", {2}, i64},
                               {"empty", "F32", {0, 4}, ""},
                               {"scalar", "F32", {}, EncodeFloats({9}, "F32")},
                           },
                           {{"format", "pt"}, {"n", 3}}));
  auto st = SafetensorsFile::Open(path);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ((*st)->entries().size(), 6u);
  EXPECT_EQ((*st)->metadata().size(), 1u);  // the non-string value is skipped
  EXPECT_EQ((*st)->metadata().at("format"), "pt");
  const SafetensorsEntry* a = (*st)->Find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, DType::kF32);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Floats(*a), (std::vector<float>{1, 2, 3, 4, 5, 6.5f}));
  EXPECT_EQ(Floats(*(*st)->Find("b")), (std::vector<float>{0.5f, -2}));
  EXPECT_EQ(Floats(*(*st)->Find("c")), (std::vector<float>{3, -0.25f}));
  EXPECT_EQ(Floats(*(*st)->Find("scalar")), (std::vector<float>{9}));
  EXPECT_EQ((*st)->Find("empty")->nbytes, 0u);
  const SafetensorsEntry* ids = (*st)->Find("ids");
  ASSERT_NE(ids, nullptr);
  EXPECT_FALSE(ids->dtype.has_value());
  EXPECT_EQ(ids->dtype_name, "I64");
  EXPECT_EQ(ids->nbytes, 16u);
  auto view = (*st)->View(*ids, "x");
  EXPECT_EQ(view.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(view.status().message().find(path), std::string::npos);
  EXPECT_NE(view.status().message().find("I64"), std::string::npos);
  auto av = (*st)->View(*a, "renamed");
  ASSERT_TRUE(av.ok());
  EXPECT_EQ(av->name, "renamed");
  EXPECT_EQ(av->nbytes, 24u);
  EXPECT_EQ((*st)->Find("nope"), nullptr);
}

// Expects the file content `bytes` to be rejected with INVALID_ARGUMENT naming the file.
void ExpectRejected(const std::string& bytes, const std::string& why) {
  SCOPED_TRACE(why);
  const std::string path = ScratchDir("st_bad") + "/bad.safetensors";
  WriteFileBytes(path, bytes);
  auto st = SafetensorsFile::Open(path);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), absl::StatusCode::kInvalidArgument) << st.status();
  EXPECT_NE(st.status().message().find(path), std::string::npos) << st.status();
}

std::string WithHeaderLength(uint64_t n, const std::string& rest) {
  std::string out;
  AppendLE(&out, n);
  return out + rest;
}

TEST(SafetensorsFileTest, RejectsBadHeaderLengths) {
  for (size_t len = 0; len < 8; ++len) ExpectRejected(std::string(len, '\0'), "shorter than the length field");
  ExpectRejected(WithHeaderLength(3, "{}"), "header past the end");
  ExpectRejected(WithHeaderLength(uint64_t{1} << 63, "{}"), "2^63");
  ExpectRejected(WithHeaderLength(~uint64_t{0}, "{}"), "2^64-1");
  ExpectRejected(WithHeaderLength(~uint64_t{0} - 7, "{}"), "8 + N wraps around");
  ExpectRejected(WithHeaderLength((uint64_t{100} << 20) + 1, "{}"), "over 100 MiB");
}

TEST(SafetensorsFileTest, RejectsMalformedHeaders) {
  const std::string d8(8, '\0');
  ExpectRejected(SafetensorsRaw("{\"a\": ", d8), "invalid JSON");
  ExpectRejected(SafetensorsRaw("", d8), "empty header");
  ExpectRejected(SafetensorsRaw("[1, 2]", d8), "not an object");
  ExpectRejected(SafetensorsRaw("{\"a\": \"\xff\xfe\"}", d8), "invalid UTF-8");
  ExpectRejected(SafetensorsRaw(R"({"a": 5})", d8), "entry not an object");
  ExpectRejected(SafetensorsRaw(R"({"__metadata__": [1]})", d8), "metadata not an object");
  ExpectRejected(SafetensorsRaw(R"({"a": {"shape": [2], "data_offsets": [0, 8]}})", d8), "no dtype");
  ExpectRejected(SafetensorsRaw(R"({"a": {"dtype": 1, "shape": [2], "data_offsets": [0, 8]}})", d8), "dtype int");
  ExpectRejected(SafetensorsRaw(R"({"a": {"dtype": "F32", "data_offsets": [0, 8]}})", d8), "no shape");
  ExpectRejected(SafetensorsRaw(R"({"a": {"dtype": "F32", "shape": 2, "data_offsets": [0, 8]}})", d8), "shape int");
  ExpectRejected(SafetensorsRaw(R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", d8),
                 "negative dim");
  ExpectRejected(SafetensorsRaw(R"({"a": {"dtype": "F32", "shape": [2.0], "data_offsets": [0, 8]}})", d8),
                 "float dim");
  ExpectRejected(SafetensorsRaw(R"({"a": {"dtype": "F32", "shape": ["2"], "data_offsets": [0, 8]}})", d8),
                 "string dim");
  ExpectRejected(SafetensorsRaw(R"({"a": {"dtype": "F32", "shape": [1,1,1,1,1,1,1,1,2], "data_offsets": [0, 8]}})",
                                d8),
                 "rank 9");
  ExpectRejected(SafetensorsRaw(R"({"a": {"dtype": "F32", "shape": [2]}})", d8), "no offsets");
  ExpectRejected(SafetensorsRaw(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})", d8), "one offset");
  ExpectRejected(SafetensorsRaw(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}})", d8),
                 "negative offset");
  ExpectRejected(SafetensorsRaw(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", d8),
                 "end < begin");
  ExpectRejected(SafetensorsRaw(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})", d8),
                 "past the end");
  ExpectRejected(
      SafetensorsRaw(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 18446744073709551615]}})", d8),
      "end = 2^64-1");
  ExpectRejected(SafetensorsRaw(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", d8),
                 "size mismatch");
  ExpectRejected(SafetensorsRaw(R"({"a": {"dtype": "F16", "shape": [2], "data_offsets": [0, 8]}})", d8),
                 "size mismatch (dtype)");
  ExpectRejected(SafetensorsRaw(R"({"a": {"dtype": "F32", "shape": [1099511627776, 1099511627776,
                                 1099511627776], "data_offsets": [0, 8]}})",
                                d8),
                 "numel overflows");
  ExpectRejected(SafetensorsRaw(R"({"a": {"dtype": "F32", "shape": [2199023255552], "data_offsets": [0, 8]}})", d8),
                 "dim above 2^40");
  ExpectRejected(SafetensorsRaw(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                 "b": {"dtype": "I64", "shape": [2], "data_offsets": [0, 8]}})",
                                d8),
                 "size mismatch in an unsupported-dtype tensor");
}

TEST(SafetensorsFileTest, RejectsDeeplyNestedHeaderWithoutRecursing) {
  const size_t depth = 200000;
  ExpectRejected(SafetensorsRaw(std::string(depth, '[') + std::string(depth, ']'), ""), "nested arrays");
  ExpectRejected(SafetensorsRaw("{\"a\": " + std::string(depth, '[') + std::string(depth, ']') + "}", ""),
                 "nested entry");
}

TEST(SafetensorsFileTest, RejectsEveryTruncation) {
  const std::string full = SafetensorsBytes({{"w", "F32", {3, 2}, EncodeFloats({1, 2, 3, 4, 5, 6}, "F32")},
                                             {"b", "BF16", {2}, EncodeFloats({1, 2}, "BF16")}});
  for (size_t len = 0; len < full.size(); ++len) ExpectRejected(full.substr(0, len), "truncated");
}

TEST(SafetensorsFileTest, UnknownDtypeIsKeptWithoutSizeCheck) {
  const std::string path = ScratchDir("st_unk") + "/unk.safetensors";
  WriteFileBytes(path, SafetensorsRaw(R"({"q": {"dtype": "Q4_X", "shape": [64], "data_offsets": [0, 6]}})",
                                      std::string(8, '\0')));
  auto st = SafetensorsFile::Open(path);
  ASSERT_TRUE(st.ok()) << st.status();
  const SafetensorsEntry* q = (*st)->Find("q");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->nbytes, 6u);
  EXPECT_EQ((*st)->View(*q, "q").status().code(), absl::StatusCode::kUnimplemented);
}

TEST(SafetensorsFileTest, MissingFileIsNotFound) {
  const std::string path = ScratchDir("st_missing") + "/nope.safetensors";
  auto st = SafetensorsFile::Open(path);
  EXPECT_EQ(st.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(st.status().message().find(path), std::string::npos);
}

}  // namespace
}  // namespace llmserve
