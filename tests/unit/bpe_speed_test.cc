// Byte-level BPE with the real GPT-2 / Llama 3 / Qwen2 vocabularies: many threads sharing
// one tokenizer, and encode throughput on ~1 MiB of English text (printed, not asserted;
// the benchmark proper is bench/tokenizer_bench).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "model/tokenizer/bpe_tokenizer.h"
#include "model/tokenizer/utf8.h"
#include "model/tokenizer/vocab_files.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<Tokenizer> Load(const std::string& vocab, const std::string& merges, const std::string& pretok) {
  auto spec = TokenizerSpecFromVocabMerges(vocab, merges, pretok);
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return nullptr;
  auto tok = NewByteLevelBpeTokenizer(*std::move(spec));
  EXPECT_TRUE(tok.ok()) << tok.status();
  return tok.ok() ? *std::move(tok) : nullptr;
}

// ~1 MiB of English: Debian's license texts, then the packages' copyright files (as the
// benchmark builds its corpus), repeated if the system has less.
std::string EnglishCorpus() {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/share/common-licenses", ec)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<fs::path> copyrights;
  for (const auto& e : fs::directory_iterator("/usr/share/doc", ec)) {
    const fs::path c = e.path() / "copyright";
    if (fs::is_regular_file(c, ec)) copyrights.push_back(c);
  }
  std::sort(copyrights.begin(), copyrights.end());
  files.insert(files.end(), copyrights.begin(), copyrights.end());
  std::string corpus;
  for (const auto& f : files) {
    if (corpus.size() >= (size_t{1} << 20)) break;
    if (!fs::is_regular_file(f, ec)) continue;
    std::ifstream in(f, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (utf8::IsValid(text)) corpus += text;
  }
  if (corpus.empty()) corpus = "Once upon a time, there was a little girl named Lily. She loved to play outside.\n";
  const std::string unit = corpus;
  while (corpus.size() < (size_t{1} << 20)) corpus += unit;
  corpus.resize(size_t{1} << 20);
  corpus.resize(utf8::CompletePrefixLength(corpus));
  return corpus;
}

void ReportSpeed(const char* name, const Tokenizer& tok, const std::string& corpus) {
  auto once = tok.Encode(corpus, EncodeOptions{});  // warm-up
  ASSERT_TRUE(once.ok());
  ASSERT_EQ(tok.Decode(*once), corpus);  // byte-level BPE is lossless
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    auto ids = tok.Encode(corpus, EncodeOptions{});
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(ids.ok());
    best = std::min(best, s);
  }
  std::printf("[ speed    ] %s: %.2f MB/s encoding %zu bytes into %zu tokens (one thread)\n", name,
              static_cast<double>(corpus.size()) / best / 1e6, corpus.size(), once->size());
}

TEST(BpeSpeedTest, EncodeThroughput) {
  LLMSERVE_REQUIRE_ASSET(gpt2_vocab, "models/tokenizers/bpe/gpt2/vocab.json");
  LLMSERVE_REQUIRE_ASSET(gpt2_merges, "models/tokenizers/bpe/gpt2/merges.txt");
  LLMSERVE_REQUIRE_ASSET(llama3_vocab, "models/tokenizers/bpe/llama3/encoder.json");
  LLMSERVE_REQUIRE_ASSET(llama3_merges, "models/tokenizers/bpe/llama3/vocab.bpe");
  LLMSERVE_REQUIRE_ASSET(qwen2_vocab, "models/tokenizers/bpe/qwen2/vocab.json");
  LLMSERVE_REQUIRE_ASSET(qwen2_merges, "models/tokenizers/bpe/qwen2/merges.txt");
  const std::string corpus = EnglishCorpus();
  auto gpt2 = Load(gpt2_vocab, gpt2_merges, "gpt2");
  auto llama3 = Load(llama3_vocab, llama3_merges, "llama3");
  auto qwen2 = Load(qwen2_vocab, qwen2_merges, "qwen2");
  ASSERT_TRUE(gpt2 && llama3 && qwen2);
  ReportSpeed("GPT-2", *gpt2, corpus);
  ReportSpeed("Llama 3", *llama3, corpus);
  ReportSpeed("Qwen2", *qwen2, corpus);
}

TEST(BpeSpeedTest, ThreadsShareOneTokenizer) {
  LLMSERVE_REQUIRE_ASSET(vocab, "models/tokenizers/bpe/gpt2/vocab.json");
  LLMSERVE_REQUIRE_ASSET(merges, "models/tokenizers/bpe/gpt2/merges.txt");
  auto tok = Load(vocab, merges, "gpt2");
  ASSERT_NE(tok, nullptr);
  std::vector<std::string> texts;
  for (int i = 0; i < 8; ++i) {
    std::string t;
    for (int k = 0; k <= i * 9; ++k) {
      t += "Thread " + std::to_string(k) + " says h\xC3\xA9llo, \xE6\x97\xA5\xE6\x9C\xAC! " + std::string(k * 3, 'z') + "\n";
    }
    texts.push_back(t);
  }
  std::vector<std::vector<int32_t>> expected;
  for (const auto& t : texts) expected.push_back(*tok->Encode(t, EncodeOptions{}));
  std::vector<int> mismatches(texts.size(), 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < texts.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int rep = 0; rep < 50; ++rep) {
        auto ids = tok->Encode(texts[i], EncodeOptions{});
        if (!ids.ok() || *ids != expected[i] || tok->Decode(*ids) != texts[i]) ++mismatches[i];
      }
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(mismatches[i], 0) << "thread " << i;
}

}  // namespace
}  // namespace llmserve
