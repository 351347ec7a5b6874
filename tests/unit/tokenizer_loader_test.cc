// LoadTokenizer: every kind of path resolves to the right tokenizer, and the
// shared vocabularies agree with each other where they describe the same tokenizer.
#include "model/tokenizer/tokenizer_loader.h"

#include <filesystem>

#include "gtest/gtest.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

std::vector<int32_t> EncodeOrDie(const Tokenizer& tok, const std::string& text, bool bos = false) {
  auto ids = tok.Encode(text, {.add_bos = bos, .parse_special = false});
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

TEST(TokenizerLoaderTest, Stories260KPromptMatchesRunC) {
  LLMSERVE_REQUIRE_ASSET(path, "models/llama2c/tok512.bin");
  auto tok = LoadTokenizer(path);
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_EQ((*tok)->vocab_size(), 512);
  // golden/stories260K_greedy.txt: prompt_ids (5): 1 403 407 261 378 (run.c encode, bos=1).
  EXPECT_EQ(EncodeOrDie(**tok, "Once upon a time", true), (std::vector<int32_t>{1, 403, 407, 261, 378}));
}

TEST(TokenizerLoaderTest, DirectoryAndFilePathsAgree) {
  LLMSERVE_REQUIRE_ASSET(vocab, "models/tokenizers/bpe/gpt2/vocab.json");
  LLMSERVE_REQUIRE_ASSET(merges, "models/tokenizers/bpe/gpt2/merges.txt");
  const std::string dir = std::filesystem::path(vocab).parent_path().string();
  auto a = LoadTokenizer(vocab);
  auto b = LoadTokenizer(merges);
  auto c = LoadTokenizer(dir);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE(c.ok()) << c.status();
  const std::string text = "Hello world! It's 2026, isn't it?";
  const auto ids = EncodeOrDie(**a, text);
  EXPECT_EQ(ids, EncodeOrDie(**b, text));
  EXPECT_EQ(ids, EncodeOrDie(**c, text));
  EXPECT_EQ((*a)->Decode(ids), text);
}

TEST(TokenizerLoaderTest, GuessesPretokenizerOfVocabMergesPairs) {
  LLMSERVE_REQUIRE_ASSET(llama3, "models/tokenizers/bpe/llama3/encoder.json");
  LLMSERVE_REQUIRE_ASSET(qwen2, "models/tokenizers/bpe/qwen2/vocab.json");
  LLMSERVE_REQUIRE_ASSET(gpt2, "models/tokenizers/bpe/gpt2/vocab.json");
  auto l = LoadTokenizerSpec(llama3);
  auto q = LoadTokenizerSpec(qwen2);
  auto g = LoadTokenizerSpec(gpt2);
  ASSERT_TRUE(l.ok()) << l.status();
  ASSERT_TRUE(q.ok()) << q.status();
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(l->pretokenizer, "llama3");
  EXPECT_EQ(q->pretokenizer, "qwen2");
  EXPECT_EQ(g->pretokenizer, "gpt2");
  // An explicit option wins over the guess.
  auto forced = LoadTokenizerSpec(gpt2, {.pretokenizer = "llama3"});
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_EQ(forced->pretokenizer, "llama3");
}

TEST(TokenizerLoaderTest, GgufAndHfJsonOfLlama2Agree) {
  LLMSERVE_REQUIRE_ASSET(gguf, "models/tokenizers/gguf/ggml-vocab-llama-spm.gguf");
  LLMSERVE_REQUIRE_ASSET(json, "models/tokenizers/hf/llama2/tokenizer.json");
  LLMSERVE_REQUIRE_ASSET(bin, "models/llama2c/tokenizer.bin");
  auto a = LoadTokenizer(gguf);
  auto b = LoadTokenizer(json);
  auto c = LoadTokenizer(bin);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE(c.ok()) << c.status();
  for (const std::string text : {"Once upon a time", " leading space", "émoji 🦙 and <0x0A> text\n\tend"}) {
    const auto ids = EncodeOrDie(**a, text, true);
    EXPECT_EQ(ids, EncodeOrDie(**b, text, true)) << text;
    EXPECT_EQ(ids, EncodeOrDie(**c, text, true)) << text;
    EXPECT_EQ((*a)->Decode(ids), text);
  }
}

TEST(TokenizerLoaderTest, ClearErrors) {
  auto missing = LoadTokenizer("/nonexistent/tokenizer.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);

  const std::string dir = testing::ScratchDir("tokloader_empty");
  auto empty = LoadTokenizer(dir);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("no tokenizer found"), std::string::npos) << empty.status();
}

TEST(TokenizerLoaderTest, BertWordPieceIsUnimplemented) {
  LLMSERVE_REQUIRE_ASSET(path, "models/tokenizers/gguf/ggml-vocab-bert-bge.gguf");
  auto tok = LoadTokenizer(path);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), absl::StatusCode::kUnimplemented) << tok.status();
}

}  // namespace
}  // namespace llmserve
