// Byte-level BPE against reference token ids: llama.cpp's test vectors (produced with the
// HuggingFace tokenizers) for the GPT-2, Llama 3 and Qwen2 vocab+merges files and the GGUF
// byte-level vocabularies, plus ollama's Llama 3 test expectations.
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/formats/gguf_file.h"
#include "model/formats/gguf_tokenizer.h"
#include "model/tokenizer/bpe_tokenizer.h"
#include "model/tokenizer/byte_level.h"
#include "nlohmann/json.hpp"
#include "model/tokenizer/vocab_files.h"
#include "tests/util/test_assets.h"
#include "tests/util/tokenizer_golden.h"

namespace llmserve {
namespace {

using ::llmserve::testing::ExpectMatchesVectors;
using ::llmserve::testing::ReadTestFile;
using ::llmserve::testing::RepoVectors;

std::unique_ptr<Tokenizer> FromVocabMerges(const std::string& vocab, const std::string& merges,
                                           const std::string& pretok) {
  auto spec = TokenizerSpecFromVocabMerges(vocab, merges, pretok);
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return nullptr;
  auto tok = NewByteLevelBpeTokenizer(*std::move(spec));
  EXPECT_TRUE(tok.ok()) << tok.status();
  return tok.ok() ? *std::move(tok) : nullptr;
}

TEST(BpeGoldenTest, Gpt2VocabMergesReproducesLlamaCppVectors) {
  LLMSERVE_REQUIRE_ASSET(vocab, "models/tokenizers/bpe/gpt2/vocab.json");
  LLMSERVE_REQUIRE_ASSET(merges, "models/tokenizers/bpe/gpt2/merges.txt");
  LLMSERVE_REQUIRE_ASSET(inp, "golden/tokenizers/ggml-vocab-gpt-2.gguf.inp");
  auto tok = FromVocabMerges(vocab, merges, "gpt2");
  ASSERT_NE(tok, nullptr);
  const std::string base = inp.substr(0, inp.size() - 4);
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesVectors(*tok, base, /*roundtrip=*/true));
}

TEST(BpeGoldenTest, Llama3EncoderJsonReproducesLlamaBpeVectors) {
  LLMSERVE_REQUIRE_ASSET(vocab, "models/tokenizers/bpe/llama3/encoder.json");
  LLMSERVE_REQUIRE_ASSET(merges, "models/tokenizers/bpe/llama3/vocab.bpe");
  auto tok = FromVocabMerges(vocab, merges, "llama3");
  ASSERT_NE(tok, nullptr);
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesVectors(*tok, RepoVectors("ggml-vocab-llama-bpe.gguf"), true));
}

TEST(BpeGoldenTest, Qwen2VocabMergesReproducesQwen2Vectors) {
  LLMSERVE_REQUIRE_ASSET(vocab, "models/tokenizers/bpe/qwen2/vocab.json");
  LLMSERVE_REQUIRE_ASSET(merges, "models/tokenizers/bpe/qwen2/merges.txt");
  auto tok = FromVocabMerges(vocab, merges, "qwen2");
  ASSERT_NE(tok, nullptr);
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesVectors(*tok, RepoVectors("ggml-vocab-qwen2.gguf"), true));
}

// Expected ids from ollama's tokenizer/bytepairencoding_test.go (TestLlama), which uses
// the same encoder.json / vocab.bpe.
TEST(BpeGoldenTest, Llama3MatchesOllamaExpectations) {
  LLMSERVE_REQUIRE_ASSET(vocab, "models/tokenizers/bpe/llama3/encoder.json");
  LLMSERVE_REQUIRE_ASSET(merges, "models/tokenizers/bpe/llama3/vocab.bpe");
  auto tok = FromVocabMerges(vocab, merges, "llama3");
  ASSERT_NE(tok, nullptr);
  EncodeOptions special;
  special.parse_special = true;
  EXPECT_EQ(*tok->Encode("hello world", special), (std::vector<int32_t>{15339, 1917}));
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{15339, 1917}), "hello world");
  EXPECT_EQ(*tok->Encode("hello <|end_of_text|>", special), (std::vector<int32_t>{15339, 220, 128001}));
  const std::vector<std::vector<int32_t>> zeros = {
      {15}, {410}, {931}, {931, 15}, {931, 410}, {931, 931}, {931, 931, 15}, {931, 931, 410}, {931, 931, 931},
      {931, 931, 931, 15}, {931, 931, 931, 410}, {931, 931, 931, 931}, {931, 931, 931, 931, 15},
      {931, 931, 931, 931, 410}, {931, 931, 931, 931, 931}, {931, 931, 931, 931, 931, 15},
      {931, 931, 931, 931, 931, 410}};
  for (size_t n = 1; n <= zeros.size(); ++n) {
    EXPECT_EQ(*tok->Encode(std::string(n, '0'), special), zeros[n - 1]) << n << " zeros";
  }
  EXPECT_EQ(*tok->Encode("<|begin_of_text|>A<|end_of_text|>B<|begin_of_text|>!<|end_of_text|>", special),
            (std::vector<int32_t>{128000, 32, 128001, 33, 128000, 0, 128001}));
  for (const char* s : {"hello", "hello ", "hello  ", " hello", " hello ", " hello  ", "hello world",
                        "请考试我的软件！12345"}) {
    EXPECT_EQ(tok->Decode(*tok->Encode(s, special)), s);
  }
  // BOS on request; decoding skips it unless asked not to.
  EncodeOptions bos;
  bos.add_bos = true;
  EXPECT_EQ(*tok->Encode("hello world", bos), (std::vector<int32_t>{128000, 15339, 1917}));
  DecodeOptions keep;
  keep.skip_special = false;
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{128000, 15339}, keep), "<|begin_of_text|>hello");
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{128000, 15339}), "hello");
}

TEST(BpeGoldenTest, Qwen2ChatTokensAndNfc) {
  LLMSERVE_REQUIRE_ASSET(vocab, "models/tokenizers/bpe/qwen2/vocab.json");
  LLMSERVE_REQUIRE_ASSET(merges, "models/tokenizers/bpe/qwen2/merges.txt");
  auto tok = FromVocabMerges(vocab, merges, "qwen2");
  ASSERT_NE(tok, nullptr);
  EncodeOptions special;
  special.parse_special = true;
  auto ids = tok->Encode("<|im_start|>user\nhi<|im_end|>", special);
  ASSERT_TRUE(ids.ok());
  ASSERT_GE(ids->size(), 3u);
  EXPECT_EQ(ids->front(), 151644);
  EXPECT_EQ(ids->back(), 151645);
  // Without special parsing the markers are ordinary text.
  auto plain = tok->Encode("<|im_start|>", EncodeOptions{});
  ASSERT_TRUE(plain.ok());
  EXPECT_GT(plain->size(), 1u);
  // NFC: "e" + U+0301 COMBINING ACUTE encodes exactly like the precomposed U+00E9.
  EXPECT_EQ(*tok->Encode("caf\x65\xCC\x81", EncodeOptions{}), *tok->Encode("caf\xC3\xA9", EncodeOptions{}));
}

// BPE by its textbook definition, on byte-level strings: repeatedly merge the adjacent pair
// with the lowest rank (the leftmost such pair), until no pair has a rank.
std::vector<std::string> NaiveBpe(const std::string& word, const std::map<std::pair<std::string, std::string>, int>& ranks) {
  std::vector<std::string> syms;
  for (char c : word) syms.push_back(byte_level::Encode(std::string(1, c)));
  while (syms.size() > 1) {
    int best = -1;
    size_t at = 0;
    for (size_t i = 0; i + 1 < syms.size(); ++i) {
      auto it = ranks.find({syms[i], syms[i + 1]});
      if (it != ranks.end() && (best < 0 || it->second < best)) {
        best = it->second;
        at = i;
      }
    }
    if (best < 0) break;
    syms[at] += syms[at + 1];
    syms.erase(syms.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  }
  return syms;
}

// Long and short single-piece words (both of the tokenizer's merge loops) against NaiveBpe.
TEST(BpeGoldenTest, Gpt2MatchesTextbookBpeOnRandomWords) {
  LLMSERVE_REQUIRE_ASSET(vocab_path, "models/tokenizers/bpe/gpt2/vocab.json");
  LLMSERVE_REQUIRE_ASSET(merges_path, "models/tokenizers/bpe/gpt2/merges.txt");
  auto tok = FromVocabMerges(vocab_path, merges_path, "gpt2");
  ASSERT_NE(tok, nullptr);
  const nlohmann::json vocab = nlohmann::json::parse(ReadTestFile(vocab_path));
  std::map<std::pair<std::string, std::string>, int> ranks;
  std::istringstream lines(ReadTestFile(merges_path));
  std::string line;
  int rank = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    const size_t sp = line.find(' ');
    ranks.emplace(std::make_pair(line.substr(0, sp), line.substr(sp + 1)), rank++);
  }
  std::mt19937 rng(42);
  const std::string letters = "etaoinshrdlucmfwypvbgkjqxz";
  for (int trial = 0; trial < 60; ++trial) {
    const size_t len = trial < 30 ? 1 + rng() % 20 : 100 + rng() % 300;
    std::string word;
    for (size_t i = 0; i < len; ++i) word += letters[rng() % (trial % 3 == 0 ? 5 : letters.size())];
    std::vector<int32_t> want;
    for (const std::string& piece : NaiveBpe(word, ranks)) want.push_back(vocab.at(piece).get<int32_t>());
    EXPECT_EQ(*tok->Encode(word, EncodeOptions{}), want) << word;
  }
}

// The GGUF byte-level vocabularies (read by TokenizerSpecFromGguf) against their vectors.
class GgufBpeGoldenTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufBpeGoldenTest, ReproducesVectors) {
  const std::string name = GetParam();
  LLMSERVE_REQUIRE_ASSET(gguf_path, "models/tokenizers/gguf/ggml-vocab-" + name + ".gguf");
  std::string base = RepoVectors("ggml-vocab-" + name + ".gguf");
  if (name == "gpt-2") {
    LLMSERVE_REQUIRE_ASSET(inp, "golden/tokenizers/ggml-vocab-gpt-2.gguf.inp");
    base = inp.substr(0, inp.size() - 4);
  }
  auto gguf = GgufFile::Open(gguf_path);
  ASSERT_TRUE(gguf.ok()) << gguf.status();
  auto spec = TokenizerSpecFromGguf(**gguf);
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->kind, TokenizerKind::kByteLevelBpe);
  auto tok = NewByteLevelBpeTokenizer(*std::move(spec));
  ASSERT_TRUE(tok.ok()) << tok.status();
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesVectors(**tok, base, /*roundtrip=*/true));
}

INSTANTIATE_TEST_SUITE_P(Vocabs, GgufBpeGoldenTest,
                         ::testing::Values("gpt-2", "deepseek-llm", "deepseek-coder", "falcon", "starcoder", "mpt",
                                           "refact"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace llmserve
