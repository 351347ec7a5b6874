// LoadModel / DetectModelFormat: dispatch to the right format for the shared model
// files, and clear errors for paths that are no model.
#include "model/model_loader.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

TEST(ModelLoaderTest, Llama2cStories260K) {
  LLMSERVE_REQUIRE_ASSET(path, "models/llama2c/stories260K.bin");
  ASSERT_EQ(DetectModelFormat(path).value(), ModelFormat::kLlama2c);
  auto w = LoadModel(path);
  ASSERT_TRUE(w.ok()) << w.status();
  const ModelConfig& c = (*w)->config;
  // Header values from the shared MANIFEST: dim 64, hidden 172, 5 layers, 8 heads,
  // 4 kv heads, vocab 512 (shared classifier), seq_len 512.
  EXPECT_EQ(c.format, "llama2c");
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.ffn_dim, 172);
  EXPECT_EQ(c.num_layers, 5);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.context_length, 512);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(c.rope_layout, RopeLayout::kInterleaved);
  EXPECT_TRUE((*w)->CheckComplete(path).ok());
}

TEST(ModelLoaderTest, Llama2cAidreams260K) {
  LLMSERVE_REQUIRE_ASSET(path, "models/llama2c/aidreams260K.bin");
  auto w = LoadModel(path);
  ASSERT_TRUE(w.ok()) << w.status();
  const ModelConfig& c = (*w)->config;
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.ffn_dim, 172);
  EXPECT_EQ(c.num_layers, 4);
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.context_length, 128);
}

TEST(ModelLoaderTest, GgufTinyRandom) {
  LLMSERVE_REQUIRE_ASSET(path, "models/gguf/llama-2-tiny-random.gguf");
  ASSERT_EQ(DetectModelFormat(path).value(), ModelFormat::kGguf);
  auto w = LoadModel(path);
  ASSERT_TRUE(w.ok()) << w.status();
  const ModelConfig& c = (*w)->config;
  // MANIFEST: dim 8, 1 block, 2 heads, ff 32, F16, full 32000-token Llama 2 vocab.
  EXPECT_EQ(c.format, "gguf");
  EXPECT_EQ(c.arch, Architecture::kLlama);
  EXPECT_EQ(c.hidden_size, 8);
  EXPECT_EQ(c.num_layers, 1);
  EXPECT_EQ(c.num_heads, 2);
  EXPECT_EQ(c.ffn_dim, 32);
  EXPECT_EQ(c.vocab_size, 32000);
  EXPECT_EQ(c.bos_id, 1);
  EXPECT_EQ(c.eos_id, 2);
  const TensorView* q = (*w)->Find("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dtype, DType::kF16);
}

TEST(ModelLoaderTest, MissingPathIsNotFound) {
  auto w = LoadModel("/nonexistent/model.bin");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(w.status().message().find("/nonexistent/model.bin"), std::string::npos);
}

TEST(ModelLoaderTest, DirectoryWithoutConfigIsRejected) {
  const std::string dir = testing::ScratchDir("loader_emptydir");
  auto w = LoadModel(dir);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("config.json"), std::string::npos) << w.status();
}

TEST(ModelLoaderTest, TextFileIsRejected) {
  const std::string dir = testing::ScratchDir("loader_text");
  const std::string path = dir + "/notes.txt";
  std::ofstream(path) << "this is not a model, just some text that is long enough";
  auto w = LoadModel(path);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(w.status().message().find(path), std::string::npos) << w.status();
}

// Files that are no model are told apart from llama2.c checkpoints (which need a separate
// tokenizer): the error says what the file is not, whatever its first bytes.
TEST(ModelLoaderTest, NonModelFilesSayWhatTheyAreNot) {
  const std::string dir = testing::ScratchDir("loader_junk");
  struct Case {
    std::string name, bytes;
  };
  const std::vector<Case> cases = {
      {"empty", ""},
      {"one_byte", "G"},
      {"three_bytes", "GGU"},
      {"bad_magic", "GGUX" + std::string(200, '\0')},
      {"header_only", std::string("\x40\0\0\0\xac\0\0\0\x05\0\0\0\x08\0\0\0\x04\0\0\0\0\x02\0\0\0\x02\0\0", 28)},
  };
  for (const Case& c : cases) {
    const std::string path = dir + "/" + c.name + ".bin";
    std::ofstream(path, std::ios::binary) << c.bytes;
    auto format = DetectModelFormat(path);
    ASSERT_FALSE(format.ok()) << c.name;
    EXPECT_EQ(format.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    const std::string m(format.status().message());
    EXPECT_NE(m.find("is not a model file llmserve reads: not GGUF"), std::string::npos) << c.name << ": " << m;
    EXPECT_NE(m.find("not a llama2.c checkpoint ("), std::string::npos) << c.name << ": " << m;
    EXPECT_FALSE(LoadModel(path).ok()) << c.name;
  }
  // The llama2.c header above is stories260K's; its reason names the size it implies.
  const std::string header_only = DetectModelFormat(dir + "/header_only.bin").status().ToString();
  EXPECT_NE(header_only.find("truncated file"), std::string::npos) << header_only;
  for (const char* dev : {"/dev/null", "/dev/zero"}) {
    auto format = DetectModelFormat(dev);
    ASSERT_FALSE(format.ok()) << dev;
    EXPECT_NE(format.status().message().find("not a regular file"), std::string::npos) << format.status();
  }
}

}  // namespace
}  // namespace llmserve
