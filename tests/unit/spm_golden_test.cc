// The SentencePiece tokenizer built from every source of the Llama 2 and Phi-3 vocabularies
// (HF tokenizer.json with ranked merges, llama.cpp's vocab GGUFs with scores, llama2.c's
// tokenizer.bin) reproduces llama.cpp's test vectors exactly, and decoding gives the input back.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/formats/gguf_file.h"
#include "model/formats/gguf_tokenizer.h"
#include "model/tokenizer/hf_tokenizer_json.h"
#include "model/tokenizer/llama2c_tokenizer.h"
#include "model/tokenizer/spm_tokenizer.h"
#include "tests/util/test_assets.h"
#include "tests/util/tokenizer_golden.h"

namespace llmserve {
namespace {

using ::llmserve::testing::ExpectMatchesVectors;
using ::llmserve::testing::RepoVectors;

std::unique_ptr<Tokenizer> Build(absl::StatusOr<TokenizerSpec> spec) {
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return nullptr;
  EXPECT_EQ(spec->kind, TokenizerKind::kSentencePiece);
  auto tok = NewSentencePieceTokenizer(*std::move(spec));
  EXPECT_TRUE(tok.ok()) << tok.status();
  return tok.ok() ? *std::move(tok) : nullptr;
}

std::unique_ptr<Tokenizer> FromGguf(const std::string& path) {
  auto g = GgufFile::Open(path);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return nullptr;
  return Build(TokenizerSpecFromGguf(**g));
}

// ".../x.gguf.inp" -> ".../x.gguf"
std::string Base(const std::string& inp) { return inp.substr(0, inp.size() - 4); }

TEST(SpmGoldenTest, LlamaSpmFromHfTokenizerJson) {
  LLMSERVE_REQUIRE_ASSET(path, "models/tokenizers/hf/llama2/tokenizer.json");
  LLMSERVE_REQUIRE_ASSET(inp, "golden/tokenizers/ggml-vocab-llama-spm.gguf.inp");
  auto tok = Build(TokenizerSpecFromHfJson(path));
  ASSERT_NE(tok, nullptr);
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesVectors(*tok, Base(inp), /*roundtrip=*/true));
}

TEST(SpmGoldenTest, LlamaSpmFromGguf) {
  LLMSERVE_REQUIRE_ASSET(path, "models/tokenizers/gguf/ggml-vocab-llama-spm.gguf");
  LLMSERVE_REQUIRE_ASSET(inp, "golden/tokenizers/ggml-vocab-llama-spm.gguf.inp");
  auto tok = FromGguf(path);
  ASSERT_NE(tok, nullptr);
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesVectors(*tok, Base(inp), /*roundtrip=*/true));
}

TEST(SpmGoldenTest, LlamaSpmFromTinyRandomModelGguf) {
  LLMSERVE_REQUIRE_ASSET(path, "models/gguf/llama-2-tiny-random.gguf");
  LLMSERVE_REQUIRE_ASSET(inp, "golden/tokenizers/ggml-vocab-llama-spm.gguf.inp");
  auto tok = FromGguf(path);
  ASSERT_NE(tok, nullptr);
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesVectors(*tok, Base(inp), /*roundtrip=*/true));
}

// llama.cpp's own phi-3 vectors (tests/golden/tokenizers, see tests/golden/README.md).
TEST(SpmGoldenTest, Phi3FromHfTokenizerJson) {
  LLMSERVE_REQUIRE_ASSET(path, "models/tokenizers/hf/phi-3-mini/tokenizer.json");
  auto tok = Build(TokenizerSpecFromHfJson(path));
  ASSERT_NE(tok, nullptr);
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesVectors(*tok, RepoVectors("ggml-vocab-phi-3.gguf"), /*roundtrip=*/true));
}

TEST(SpmGoldenTest, Phi3FromGguf) {
  LLMSERVE_REQUIRE_ASSET(path, "models/tokenizers/gguf/ggml-vocab-phi-3.gguf");
  auto tok = FromGguf(path);
  ASSERT_NE(tok, nullptr);
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesVectors(*tok, RepoVectors("ggml-vocab-phi-3.gguf"), /*roundtrip=*/true));
}

// All sources of the Llama 2 vocabulary agree with each other beyond the vectors too, with
// BOS and with special-token parsing (score merges and ranked merges give the same result).
TEST(SpmGoldenTest, AllLlama2SourcesAgree) {
  LLMSERVE_REQUIRE_ASSET(hf, "models/tokenizers/hf/llama2/tokenizer.json");
  LLMSERVE_REQUIRE_ASSET(gguf, "models/tokenizers/gguf/ggml-vocab-llama-spm.gguf");
  LLMSERVE_REQUIRE_ASSET(bin, "models/llama2c/tokenizer.bin");
  std::vector<std::unique_ptr<Tokenizer>> toks;
  toks.push_back(Build(TokenizerSpecFromHfJson(hf)));
  toks.push_back(FromGguf(gguf));
  toks.push_back(Build(TokenizerSpecFromLlama2cBin(bin)));
  for (const auto& t : toks) ASSERT_NE(t, nullptr);
  const std::vector<std::string> texts = {
      "The quick brown fox jumps over the lazy dog.",
      "<s>[INST] What is 2+2? [/INST] 4</s>",
      "  indented\n\tcode();  // comment\n",
      "Ünïcödé — “quotes” … 日本語のテキスト 🙂🙃 \xE2\x80\x8B zero-width",
      "supercalifragilisticexpialidocious antidisestablishmentarianism",
  };
  for (const std::string& text : texts) {
    for (const EncodeOptions opts : {EncodeOptions{}, EncodeOptions{.add_bos = true, .parse_special = true}}) {
      auto a = toks[0]->Encode(text, opts);
      ASSERT_TRUE(a.ok());
      for (size_t i = 1; i < toks.size(); ++i) {
        auto b = toks[i]->Encode(text, opts);
        ASSERT_TRUE(b.ok());
        EXPECT_EQ(*a, *b) << "source " << i << " text \"" << text << "\" parse_special " << opts.parse_special;
      }
      if (!opts.parse_special) {
        EXPECT_EQ(toks[0]->Decode(*a), text);
      }
    }
  }
}

}  // namespace
}  // namespace llmserve
