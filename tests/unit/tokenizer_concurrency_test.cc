// Real vocabularies at scale: one tokenizer shared by many threads gives every thread
// the same ids as a lone caller, and a megabyte of English round-trips exactly.
// (Throughput is measured by bench/tokenizer_bench, not here.)
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "model/tokenizer/tokenizer_loader.h"
#include "tests/util/english_corpus.h"
#include "tests/util/load_tokenizer.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

std::unique_ptr<Tokenizer> Load(const std::string& path) { return testing::LoadTokenizerOrFail(path); }

void ExpectThreadsAgree(const Tokenizer& tok) {
  std::vector<std::string> texts;
  for (int i = 0; i < 8; ++i) {
    std::string t;
    for (int k = 0; k <= i * 9; ++k) {
      t += "Thread " + std::to_string(k) + " says h\xC3\xA9llo, \xE6\x97\xA5\xE6\x9C\xAC! " + std::string(k * 3, 'z') + "\n";
    }
    texts.push_back(t);
  }
  std::vector<std::vector<int32_t>> expected;
  for (const auto& t : texts) expected.push_back(*tok.Encode(t, {.add_bos = true}));
  std::vector<int> mismatches(texts.size(), 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < texts.size(); ++i) {
    threads.emplace_back([&, i] {
      for (size_t rep = 0; rep < 50; ++rep) {
        const size_t j = (i + rep) % texts.size();
        auto ids = tok.Encode(texts[j], {.add_bos = true});
        if (!ids.ok() || *ids != expected[j] || tok.Decode(*ids) != texts[j]) ++mismatches[i];
      }
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(mismatches[i], 0) << "thread " << i;
}

void ExpectMegabyteRoundTrips(const Tokenizer& tok) {
  const std::string corpus = testing::EnglishCorpus();
  auto ids = tok.Encode(corpus, {});
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_LT(ids->size(), corpus.size() / 3);  // English averages about 4 bytes per token
  EXPECT_EQ(tok.Decode(*ids), corpus);
}

TEST(TokenizerConcurrencyTest, Gpt2ThreadsShareOneTokenizer) {
  LLMSERVE_REQUIRE_ASSET(path, "models/tokenizers/bpe/gpt2/vocab.json");
  auto tok = Load(path);
  ASSERT_NE(tok, nullptr);
  ExpectThreadsAgree(*tok);
}

TEST(TokenizerConcurrencyTest, Llama2ThreadsShareOneTokenizer) {
  LLMSERVE_REQUIRE_ASSET(path, "models/llama2c/tokenizer.bin");
  auto tok = Load(path);
  ASSERT_NE(tok, nullptr);
  ExpectThreadsAgree(*tok);
}

TEST(TokenizerConcurrencyTest, MegabyteOfEnglishRoundTrips) {
  for (const char* rel : {"models/tokenizers/bpe/gpt2/vocab.json", "models/tokenizers/bpe/llama3/encoder.json",
                          "models/tokenizers/bpe/qwen2/vocab.json", "models/llama2c/tokenizer.bin"}) {
    SCOPED_TRACE(rel);
    LLMSERVE_REQUIRE_ASSET(path, rel);
    auto tok = Load(path);
    ASSERT_NE(tok, nullptr);
    ExpectMegabyteRoundTrips(*tok);
  }
}

}  // namespace
}  // namespace llmserve
