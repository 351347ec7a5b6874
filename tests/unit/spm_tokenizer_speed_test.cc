// SentencePiece tokenizer with the real Llama 2 vocabulary: many threads sharing one
// tokenizer, and encode throughput on ~1 MiB of English text (printed; round trip asserted).
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
#include "model/tokenizer/llama2c_tokenizer.h"
#include "model/tokenizer/spm_tokenizer.h"
#include "model/tokenizer/utf8.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

std::unique_ptr<Tokenizer> Llama2Tokenizer(const std::string& path) {
  auto spec = TokenizerSpecFromLlama2cBin(path);
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return nullptr;
  auto tok = NewSentencePieceTokenizer(*std::move(spec));
  EXPECT_TRUE(tok.ok()) << tok.status();
  return tok.ok() ? *std::move(tok) : nullptr;
}

// ~1 MiB of English: the license texts every Debian system ships, repeated if needed.
std::string EnglishCorpus() {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/share/common-licenses", ec)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string corpus;
  for (const auto& f : files) {
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

TEST(SpmTokenizerSpeedTest, ThreadsShareOneTokenizer) {
  LLMSERVE_REQUIRE_ASSET(path, "models/llama2c/tokenizer.bin");
  auto tok = Llama2Tokenizer(path);
  ASSERT_NE(tok, nullptr);
  std::vector<std::string> texts;
  for (int i = 0; i < 8; ++i) {
    std::string t;
    for (int k = 0; k <= i * 7; ++k) t += "Thread " + std::to_string(k) + " says h\xC3\xA9llo, \xE6\x97\xA5\xE6\x9C\xAC! ";
    texts.push_back(t);
  }
  std::vector<std::vector<int32_t>> expected;
  for (const auto& t : texts) expected.push_back(*tok->Encode(t, {.add_bos = true}));
  std::vector<int> mismatches(texts.size(), 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < texts.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int rep = 0; rep < 50; ++rep) {
        auto ids = tok->Encode(texts[(i + static_cast<size_t>(rep)) % texts.size()], {.add_bos = true});
        if (!ids.ok() || *ids != expected[(i + static_cast<size_t>(rep)) % texts.size()]) ++mismatches[i];
      }
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(mismatches[i], 0) << "thread " << i;
}

TEST(SpmTokenizerSpeedTest, EncodesAMegabyteOfEnglish) {
  LLMSERVE_REQUIRE_ASSET(path, "models/llama2c/tokenizer.bin");
  auto tok = Llama2Tokenizer(path);
  ASSERT_NE(tok, nullptr);
  const std::string corpus = EnglishCorpus();
  std::vector<int32_t> ids;
  double best = 1e30;
#ifdef __SANITIZE_ADDRESS__
  const int reps = 1;  // sanitized builds are ~30x slower; the figure means nothing there
#else
  const int reps = 3;
#endif
  for (int rep = 0; rep < reps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = tok->Encode(corpus, {});
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(r.ok()) << r.status();
    ids = *std::move(r);
    best = std::min(best, s);
  }
  std::printf("[ SPEED    ] Llama 2 SPM encode: %zu bytes -> %zu tokens, %.2f MB/s (best of %d)\n", corpus.size(),
              ids.size(), static_cast<double>(corpus.size()) / best / 1e6, reps);
  EXPECT_LT(ids.size(), corpus.size() / 3);  // English compresses to roughly 4 bytes per token
  EXPECT_EQ(tok->Decode(ids), corpus);
  // The corpus as many small requests (one per line) gives the same text back too.
  size_t start = 0;
  std::string rebuilt;
  while (start < corpus.size()) {
    const size_t nl = corpus.find('\n', start);
    const size_t end = nl == std::string::npos ? corpus.size() : nl + 1;
    auto line_ids = tok->Encode(corpus.substr(start, end - start), {});
    ASSERT_TRUE(line_ids.ok());
    rebuilt += tok->Decode(*line_ids);
    start = end;
  }
  EXPECT_EQ(rebuilt, corpus);
}

}  // namespace
}  // namespace llmserve
