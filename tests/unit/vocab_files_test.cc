// vocab.json+merges.txt / encoder.json+vocab.bpe readers: the real GPT-2, Llama 3 and Qwen2
// files (facts checked against the files' own contents and the model cards), and malformed
// synthetic files.
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "model/tokenizer/vocab_files.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
}

TEST(VocabFilesTest, Gpt2) {
  LLMSERVE_REQUIRE_ASSET(vocab, "models/tokenizers/bpe/gpt2/vocab.json");
  LLMSERVE_REQUIRE_ASSET(merges, "models/tokenizers/bpe/gpt2/merges.txt");
  auto spec = TokenizerSpecFromVocabMerges(vocab, merges, "gpt2");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->kind, TokenizerKind::kByteLevelBpe);
  EXPECT_EQ(spec->tokens.size(), 50257u);
  EXPECT_EQ(spec->merges.size(), 50000u);  // the "#version: 0.2" line is not a merge
  EXPECT_EQ(spec->merges.front(), "\xC4\xA0 t");  // "Ġ t"
  EXPECT_EQ(spec->tokens[50256], "<|endoftext|>");
  EXPECT_EQ(spec->types[50256], TokenType::kControl);
  EXPECT_EQ(spec->types[0], TokenType::kNormal);
  EXPECT_EQ(spec->bos_id, 50256);
  EXPECT_EQ(spec->eos_id, 50256);
  EXPECT_FALSE(spec->add_bos);
  EXPECT_FALSE(spec->nfc);
  EXPECT_FALSE(spec->ignore_merges);
  EXPECT_EQ(spec->pretokenizer, "gpt2");
}

TEST(VocabFilesTest, Llama3GetsMetasSpecialTokens) {
  LLMSERVE_REQUIRE_ASSET(vocab, "models/tokenizers/bpe/llama3/encoder.json");
  LLMSERVE_REQUIRE_ASSET(merges, "models/tokenizers/bpe/llama3/vocab.bpe");
  auto spec = TokenizerSpecFromVocabMerges(vocab, merges, "llama3");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->tokens.size(), 128256u);
  EXPECT_EQ(spec->merges.size(), 280147u);
  EXPECT_EQ(spec->tokens[128000], "<|begin_of_text|>");
  EXPECT_EQ(spec->tokens[128001], "<|end_of_text|>");
  EXPECT_EQ(spec->tokens[128004], "<|finetune_right_pad_id|>");
  EXPECT_EQ(spec->tokens[128006], "<|start_header_id|>");
  EXPECT_EQ(spec->tokens[128007], "<|end_header_id|>");
  EXPECT_EQ(spec->tokens[128008], "<|eom_id|>");
  EXPECT_EQ(spec->tokens[128009], "<|eot_id|>");
  EXPECT_EQ(spec->tokens[128010], "<|python_tag|>");
  EXPECT_EQ(spec->tokens[128011], "<|reserved_special_token_3|>");
  EXPECT_EQ(spec->tokens[128255], "<|reserved_special_token_247|>");
  for (int id = 128000; id < 128256; ++id) EXPECT_EQ(spec->types[id], TokenType::kControl) << id;
  EXPECT_EQ(spec->bos_id, 128000);
  EXPECT_EQ(spec->eos_id, 128001);
  EXPECT_TRUE(spec->add_bos);
  EXPECT_TRUE(spec->ignore_merges);
  EXPECT_FALSE(spec->nfc);
}

TEST(VocabFilesTest, Qwen2TakesAddedTokensFromTokenizerConfig) {
  LLMSERVE_REQUIRE_ASSET(vocab, "models/tokenizers/bpe/qwen2/vocab.json");
  LLMSERVE_REQUIRE_ASSET(merges, "models/tokenizers/bpe/qwen2/merges.txt");
  auto spec = TokenizerSpecFromVocabMerges(vocab, merges, "qwen2");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->tokens.size(), 151646u);
  EXPECT_EQ(spec->merges.size(), 151387u);
  EXPECT_EQ(spec->tokens[151643], "<|endoftext|>");
  EXPECT_EQ(spec->tokens[151644], "<|im_start|>");
  EXPECT_EQ(spec->tokens[151645], "<|im_end|>");
  EXPECT_EQ(spec->types[151644], TokenType::kControl);
  EXPECT_EQ(spec->eos_id, 151645);  // tokenizer_config.json: "eos_token": "<|im_end|>"
  EXPECT_EQ(spec->chat_template.rfind("{% for message in messages %}", 0), 0u) << spec->chat_template;
  EXPECT_TRUE(spec->nfc);
  EXPECT_FALSE(spec->ignore_merges);
}

TEST(VocabFilesTest, SyntheticFilesAndErrors) {
  const std::string dir = ::llmserve::testing::ScratchDir("vocab_files");
  const std::string vocab = dir + "/vocab.json";
  const std::string merges = dir + "/merges.txt";
  WriteFile(vocab, R"({"a": 0, "b": 1, "ab": 2, "c": 5})");
  WriteFile(merges, "#version: 0.2\r\na b\r\n\r\n");
  auto spec = TokenizerSpecFromVocabMerges(vocab, merges, "gpt-2");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->tokens.size(), 6u);  // sparse ids: 3 and 4 are placeholders
  EXPECT_EQ(spec->types[3], TokenType::kUnused);
  EXPECT_EQ(spec->types[5], TokenType::kNormal);
  EXPECT_EQ(spec->tokens[5], "c");
  ASSERT_EQ(spec->merges.size(), 1u);
  EXPECT_EQ(spec->merges[0], "a b");
  EXPECT_EQ(spec->pretokenizer, "gpt2");
  EXPECT_EQ(spec->bos_id, -1);

  auto code = [&](const std::string& v, const std::string& m, const std::string& pre = "gpt2") {
    WriteFile(vocab, v);
    WriteFile(merges, m);
    auto s = TokenizerSpecFromVocabMerges(vocab, merges, pre);
    EXPECT_FALSE(s.ok()) << v << " / " << m;
    if (!s.ok()) {
      EXPECT_NE(s.status().message().find(dir), std::string::npos) << s.status();
    }
    return s.status().code();
  };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(code(R"({"a": 0})", "a b\n", "klingon"), kInvalid);
  EXPECT_EQ(code(R"({"a": 0, )", "a b\n"), kInvalid);             // truncated JSON
  EXPECT_EQ(code(R"(["a", "b"])", "a b\n"), kInvalid);            // not an object
  EXPECT_EQ(code(R"({"a": -1})", "a b\n"), kInvalid);             // negative id
  EXPECT_EQ(code(R"({"a": "0"})", "a b\n"), kInvalid);            // id not a number
  EXPECT_EQ(code(R"({"a": 0, "b": 0})", "a b\n"), kInvalid);      // duplicate id
  EXPECT_EQ(code(R"({"a": 2000000000})", "a b\n"), kInvalid);     // absurd id
  EXPECT_EQ(code(R"({"a": 0, "b": 1})", "ab\n"), kInvalid);       // merge without a space
  EXPECT_EQ(code(R"({"a": 0, "b": 1})", "#version: 0.2\n"), kInvalid);  // no merges
  EXPECT_EQ(TokenizerSpecFromVocabMerges(dir + "/missing.json", merges, "gpt2").status().code(),
            absl::StatusCode::kNotFound);
  WriteFile(vocab, R"({"a": 0, "b": 1})");
  EXPECT_EQ(TokenizerSpecFromVocabMerges(vocab, dir + "/missing.txt", "gpt2").status().code(),
            absl::StatusCode::kNotFound);
  // A malformed tokenizer_config.json beside the vocabulary is reported, naming it.
  WriteFile(merges, "a b\n");
  WriteFile(dir + "/tokenizer_config.json", R"({"added_tokens_decoder": {"x": {"content": "<s>"}}})");
  auto bad_config = TokenizerSpecFromVocabMerges(vocab, merges, "gpt2");
  EXPECT_EQ(bad_config.status().code(), kInvalid);
  EXPECT_NE(bad_config.status().message().find("tokenizer_config.json"), std::string::npos);
  WriteFile(dir + "/tokenizer_config.json",
            R"({"added_tokens_decoder": {"3": {"content": "<s>", "special": true}}, "bos_token": "<s>",
                "eos_token": {"content": "<s>"}, "add_bos_token": true})");
  auto with_config = TokenizerSpecFromVocabMerges(vocab, merges, "gpt2");
  ASSERT_TRUE(with_config.ok()) << with_config.status();
  ASSERT_EQ(with_config->tokens.size(), 4u);
  EXPECT_EQ(with_config->types[2], TokenType::kUnused);
  EXPECT_EQ(with_config->types[3], TokenType::kControl);
  EXPECT_EQ(with_config->bos_id, 3);
  EXPECT_EQ(with_config->eos_id, 3);
  EXPECT_TRUE(with_config->add_bos);
}

}  // namespace
}  // namespace llmserve
