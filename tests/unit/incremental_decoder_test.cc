// IncrementalDecoder: streamed text == Decode(all ids), never a partial or invalid character.
#include "model/tokenizer/incremental_decoder.h"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/tokenizer/llama2c_tokenizer.h"
#include "model/tokenizer/spm_tokenizer.h"
#include "model/tokenizer/utf8.h"
#include "tests/util/load_tokenizer.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

std::unique_ptr<Tokenizer> Load(const std::string& path) { return testing::LoadTokenizerOrFail(path); }

// Streams `ids`, checking every delta, and returns the concatenation (with Finish()).
std::string Stream(const Tokenizer& tok, const std::vector<int32_t>& ids, DecodeOptions opts = {}) {
  IncrementalDecoder dec(tok, opts);
  std::string all;
  for (int32_t id : ids) {
    const std::string delta = dec.Push(id);
    EXPECT_TRUE(utf8::IsValid(delta)) << "delta after id " << id;
    EXPECT_LE(dec.pending_bytes(), 3u);
    all += delta;
  }
  const std::string rest = dec.Finish();
  EXPECT_TRUE(utf8::IsValid(rest));
  EXPECT_EQ(dec.pending_bytes(), 0u);
  return all + rest;
}

class IncrementalDecoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = testing::AssetPath("models/llama2c/tokenizer.bin");
    if (path.empty()) {
      if (testing::InCi()) FAIL() << "models/llama2c/tokenizer.bin not found (required under CI)";
      GTEST_SKIP() << "models/llama2c/tokenizer.bin not found: set LLMSERVE_TEST_ASSETS";
    }
    tok_ = Load(path);
    ASSERT_NE(tok_, nullptr);
  }
  int32_t Id(const std::string& piece) const {
    const int32_t id = tok_->PieceToId(piece);
    EXPECT_GE(id, 0) << piece;
    return id;
  }
  int32_t Byte(int b) const {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    return Id(buf);
  }
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(IncrementalDecoderTest, ByteTokensFormOneCharacterOverSeveralPushes) {
  IncrementalDecoder dec(*tok_);
  EXPECT_EQ(dec.Push(Byte(0xE2)), "");  // "€" = E2 82 AC
  EXPECT_EQ(dec.pending_bytes(), 1u);
  EXPECT_EQ(dec.Push(Byte(0x82)), "");
  EXPECT_EQ(dec.Push(Byte(0xAC)), "\xE2\x82\xAC");
  EXPECT_EQ(dec.Push(Byte(0xF0)), "");  // U+1F642 = F0 9F 99 82
  EXPECT_EQ(dec.Push(Byte(0x9F)), "");
  EXPECT_EQ(dec.Push(Byte(0x99)), "");
  EXPECT_EQ(dec.Push(Byte(0x82)), "\xF0\x9F\x99\x82");
  EXPECT_EQ(dec.Finish(), "");
}

TEST_F(IncrementalDecoderTest, LeadingSpaceOfTheFirstTextIsDropped) {
  IncrementalDecoder dec(*tok_);
  EXPECT_EQ(dec.Push(tok_->bos_id()), "");  // control: no text
  EXPECT_EQ(dec.Push(Id("\xE2\x96\x81Hello")), "Hello");
  EXPECT_EQ(dec.Push(Id("\xE2\x96\x81world")), " world");
  EXPECT_EQ(dec.Push(tok_->eos_id()), "");
  EXPECT_EQ(dec.Finish(), "");
  // Finish() resets: the next stream drops its leading space again.
  EXPECT_EQ(dec.Push(Id("\xE2\x96\x81Hello")), "Hello");
  // With special tokens shown, "<s>" is the first text, so the space stays.
  IncrementalDecoder raw(*tok_, {.skip_special = false});
  EXPECT_EQ(raw.Push(tok_->bos_id()), "<s>");
  EXPECT_EQ(raw.Push(Id("\xE2\x96\x81Hello")), " Hello");
}

TEST_F(IncrementalDecoderTest, PrimedWithAPromptTheContinuationKeepsItsSpace) {
  IncrementalDecoder dec(*tok_);
  const std::vector<int32_t> prompt = {tok_->bos_id(), Id("\xE2\x96\x81Hello")};
  dec.Prime(prompt);
  EXPECT_EQ(dec.Push(Id("\xE2\x96\x81world")), " world");
  // A prompt ending inside a character: the continuation completes it.
  IncrementalDecoder split(*tok_);
  const std::vector<int32_t> half = {Id("\xE2\x96\x81Hello"), Byte(0xE2), Byte(0x82)};
  split.Prime(half);
  EXPECT_EQ(split.Push(Byte(0xAC)), "\xE2\x82\xAC");
  // A prompt with no text (only BOS) leaves the leading-space rule in force.
  IncrementalDecoder bos_only(*tok_);
  const std::vector<int32_t> just_bos = {tok_->bos_id()};
  bos_only.Prime(just_bos);
  EXPECT_EQ(bos_only.Push(Id("\xE2\x96\x81Hello")), "Hello");
}

TEST_F(IncrementalDecoderTest, InvalidBytesBecomeReplacementCharacters) {
  IncrementalDecoder dec(*tok_);
  EXPECT_EQ(dec.Push(Byte(0xE2)), "");
  EXPECT_EQ(dec.Push(Id("a")), kFffd + "a");          // lead byte cut short
  EXPECT_EQ(dec.Push(Byte(0x80)), kFffd);             // stray continuation byte
  EXPECT_EQ(dec.Push(Byte(0xC0)), kFffd);             // never valid
  EXPECT_EQ(dec.Push(Byte(0xE0)), "");
  EXPECT_EQ(dec.Push(Byte(0x80)), kFffd + kFffd);     // E0 80: overlong
  EXPECT_EQ(dec.Push(Byte(0xF0)), "");
  EXPECT_EQ(dec.Push(Byte(0x9F)), "");
  EXPECT_EQ(dec.Finish(), kFffd + kFffd);             // incomplete at the end
  EXPECT_EQ(dec.Push(-1), "");                        // out of range: skipped
  EXPECT_EQ(dec.Push(tok_->vocab_size()), "");
}

// Property: for random id sequences (many byte tokens, control tokens, out-of-range ids),
// the streamed text equals Decode() and every delta is valid UTF-8.
TEST_F(IncrementalDecoderTest, StreamEqualsDecodeForRandomIds) {
  std::vector<std::unique_ptr<Tokenizer>> toks;
  toks.push_back(std::move(tok_));
  const std::string small = testing::AssetPath("models/llama2c/tok512.bin");
  if (!small.empty()) toks.push_back(Load(small));
  // A variant without the leading-space rule.
  auto spec = TokenizerSpecFromLlama2cBin(testing::AssetPath("models/llama2c/tokenizer.bin"));
  ASSERT_TRUE(spec.ok());
  spec->add_space_prefix = false;
  toks.push_back(*NewSentencePieceTokenizer(*std::move(spec)));

  std::mt19937 rng(99);
  for (const auto& tok : toks) {
    const int32_t n = tok->vocab_size();
    for (int trial = 0; trial < 400; ++trial) {
      std::vector<int32_t> ids;
      const int len = static_cast<int>(rng() % 24);
      for (int i = 0; i < len; ++i) {
        const unsigned r = rng() % 100;
        if (r < 45) {
          ids.push_back(3 + static_cast<int32_t>(rng() % 256));  // <0x00>..<0xFF>
        } else if (r < 52) {
          ids.push_back(static_cast<int32_t>(rng() % 3));  // <unk>, <s>, </s>
        } else if (r < 55) {
          ids.push_back(rng() % 2 ? -5 : n + 3);
        } else {
          ids.push_back(static_cast<int32_t>(rng() % static_cast<unsigned>(n)));
        }
      }
      for (bool skip : {true, false}) {
        ASSERT_EQ(Stream(*tok, ids, {.skip_special = skip}), tok->Decode(ids, {.skip_special = skip}))
            << "trial " << trial;
      }
    }
  }
}

TEST_F(IncrementalDecoderTest, StreamingEncodedTextGivesItBack) {
  for (const std::string text : {"Hello world", " leading space", "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x99\x82!",
                                 "\xEA\xB0\x80\xEA\xB0\x81 \xE1\x9E\x80 tabs\tand\nnewlines"}) {
    auto ids = tok_->Encode(text, {.add_bos = true});
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(Stream(*tok_, *ids), text);
  }
}

// run.c's greedy stories260K output, streamed token by token.
TEST(IncrementalDecoderGoldenTest, Stories260KStdout) {
  LLMSERVE_REQUIRE_ASSET(tok_path, "models/llama2c/tok512.bin");
  LLMSERVE_REQUIRE_ASSET(golden_path, "golden/stories260K_greedy.txt");
  auto tok = Load(tok_path);
  ASSERT_NE(tok, nullptr);
  std::ifstream in(golden_path, std::ios::binary);
  const std::string golden((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = golden.find("\nsequence_ids");
  ASSERT_NE(at, std::string::npos);
  const size_t colon = golden.find(':', at);
  std::istringstream line(golden.substr(colon + 1, golden.find('\n', colon) - colon - 1));
  std::vector<int32_t> seq;
  int32_t id;
  while (line >> id) seq.push_back(id);
  ASSERT_EQ(seq.size(), 257u);
  const std::string begin = "--- BEGIN stdout\n";
  const size_t b = golden.find(begin);
  const size_t e = golden.find("--- END stdout");
  ASSERT_TRUE(b != std::string::npos && e != std::string::npos);
  // run.c prints each sampled token (the BOS that starts the sequence is never printed), then "\n".
  EXPECT_EQ(Stream(*tok, seq) + "\n", golden.substr(b + begin.size(), e - b - begin.size()));
}

}  // namespace
}  // namespace llmserve
