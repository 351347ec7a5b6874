// Regex pre-tokenizers. Expected splits for Llama 3 and GPT-2 are ollama's
// (tokenizer/bytepairencoding_test.go: TestLlama "split", TestSplit); the others follow
// from the regexes by hand.
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/tokenizer/pretokenizer.h"
#include "model/tokenizer/utf8.h"

namespace llmserve {
namespace {

std::vector<std::string> SplitWith(const std::string& name, const std::string& text) {
  auto pt = PreTokenizer::Create(name);
  EXPECT_TRUE(pt.ok()) << pt.status();
  if (!pt.ok()) return {};
  std::vector<std::string_view> pieces;
  (*pt)->Split(text, &pieces);
  return std::vector<std::string>(pieces.begin(), pieces.end());
}

using V = std::vector<std::string>;

TEST(PreTokenizerTest, Llama3) {
  EXPECT_EQ(SplitWith("llama3", "Hello World!"), (V{"Hello", " World", "!"}));
  EXPECT_EQ(SplitWith("llama3", "I'm don't won't"), (V{"I", "'m", " don", "'t", " won", "'t"}));
  EXPECT_EQ(SplitWith("llama3", "In 2024 there are 366 days"),
            (V{"In", " ", "202", "4", " there", " are", " ", "366", " days"}));
  EXPECT_EQ(SplitWith("llama3", "Hello!! ...world"), (V{"Hello", "!!", " ...", "world"}));
  EXPECT_EQ(SplitWith("llama3", "Hello    World"), (V{"Hello", "   ", " World"}));
  EXPECT_EQ(SplitWith("llama3", "Hello\nWorld"), (V{"Hello", "\n", "World"}));
  EXPECT_EQ(SplitWith("llama3", "Hello, WORLD!! How's it going?"),
            (V{"Hello", ",", " WORLD", "!!", " How", "'s", " it", " going", "?"}));
  // The contractions are case-insensitive.
  EXPECT_EQ(SplitWith("llama3", "WE'LL"), (V{"WE", "'LL"}));
}

TEST(PreTokenizerTest, Gpt2AndQwen2) {
  const std::string text = "Hello, WORLD!! How's it going? 123 \xE4\xB8\x80\xE4\xBA\x8C\xE4\xB8\x89";  // 一二三
  EXPECT_EQ(SplitWith("gpt2", text), (V{"Hello", ",", " WORLD", "!!", " How", "'s", " it", " going", "?", " 123",
                                        " \xE4\xB8\x80\xE4\xBA\x8C\xE4\xB8\x89"}));
  EXPECT_EQ(SplitWith("qwen2", text), (V{"Hello", ",", " WORLD", "!!", " How", "'s", " it", " going", "?", " ", "1",
                                         "2", "3", " \xE4\xB8\x80\xE4\xBA\x8C\xE4\xB8\x89"}));
  // GPT-2: a whitespace run before a word leaves its last space to the word.
  EXPECT_EQ(SplitWith("gpt2", "a   b\t\tc \n"), (V{"a", "  ", " b", "\t", "\t", "c", " \n"}));
  EXPECT_EQ(SplitWith("mpt", "a   b"), SplitWith("gpt2", "a   b"));
}

TEST(PreTokenizerTest, SequencesSplitEachOthersPieces) {
  // starcoder: every digit alone first, then the GPT-2 regex inside the rest.
  EXPECT_EQ(SplitWith("starcoder", "abc 123x"), (V{"abc", " ", "1", "2", "3", "x"}));
  EXPECT_EQ(SplitWith("refact", "v2"), (V{"v", "2"}));
  // falcon: punctuation runs, then GPT-2, then three-digit groups.
  EXPECT_EQ(SplitWith("falcon", "x=1234!"), (V{"x", "=", "123", "4", "!"}));
  // deepseek-coder: newlines alone, letters with one leading space, punctuation, CJK, digits.
  EXPECT_EQ(SplitWith("deepseek-coder", "a\n bc, 42"), (V{"a", "\n", " bc", ",", " ", "4", "2"}));
  // deepseek-llm: "\s+$" keeps trailing whitespace of a piece together; digits in one run.
  EXPECT_EQ(SplitWith("deepseek-llm", "Hi 2024  "), (V{"Hi", " ", "2024", "  "}));
  // Its letter class holds U+01C5 (so with é it is one piece) but not U+01BB; its "CJK"
  // class U+0800..U+4E00 then takes U+212A KELVIN SIGN out of a letter run.
  EXPECT_EQ(SplitWith("deepseek-llm", "\xC7\x85\xC3\xA9"), (V{"\xC7\x85\xC3\xA9"}));
  EXPECT_EQ(SplitWith("deepseek-llm", "\xE2\x84\xAA\xC3\xA9"), (V{"\xE2\x84\xAA", "\xC3\xA9"}));
  EXPECT_EQ(SplitWith("deepseek-llm", "\xC6\xBB\xC3\xA9"), (V{"\xC6\xBB", "\xC3\xA9"}));
  // Its "punctuation" class ':'..'~' includes the ASCII letters.
  EXPECT_EQ(SplitWith("deepseek-llm", "K\xE2\x84\xAA"), (V{"K", "\xE2\x84\xAA"}));
}

TEST(PreTokenizerTest, PiecesAlwaysJoinBackToTheInput) {
  std::mt19937 rng(1234);
  const std::vector<uint32_t> alphabet = {'a', 'Z', '7', ' ', ' ', '\n', '\r', '\t', '\'', 's', '.', '!', '$',
                                          0xE9, 0x301, 0x4E00, 0xAC00, 0x1F600, 0x2126, 0x3000, 0xFF01, 0x660};
  for (const std::string& name : PreTokenizerNames()) {
    auto pt = PreTokenizer::Create(name);
    ASSERT_TRUE(pt.ok()) << name;
    for (int trial = 0; trial < 200; ++trial) {
      std::string text;
      const int len = static_cast<int>(rng() % 40);
      for (int i = 0; i < len; ++i) utf8::Append(alphabet[rng() % alphabet.size()], &text);
      std::vector<std::string_view> pieces;
      (*pt)->Split(text, &pieces);
      std::string joined;
      for (std::string_view p : pieces) {
        EXPECT_FALSE(p.empty()) << name;
        EXPECT_TRUE(utf8::IsValid(p)) << name;
        joined += p;
      }
      EXPECT_EQ(joined, text) << name;
    }
  }
}

TEST(PreTokenizerTest, HugeRunsDoNotBreak) {
  for (const std::string& text : {std::string(1 << 20, ' '), std::string(1 << 20, 'x'), std::string(1 << 20, '!'),
                                  std::string(1 << 20, '7')}) {
    for (const char* name : {"gpt2", "llama3", "deepseek-llm", "falcon"}) {
      auto pt = PreTokenizer::Create(name);
      ASSERT_TRUE(pt.ok());
      std::vector<std::string_view> pieces;
      (*pt)->Split(text, &pieces);
      size_t total = 0;
      for (std::string_view p : pieces) total += p.size();
      EXPECT_EQ(total, text.size()) << name;
    }
  }
}

TEST(PreTokenizerTest, NamesAndErrors) {
  EXPECT_EQ(CanonicalPreTokenizerName("gpt-2"), "gpt2");
  EXPECT_EQ(CanonicalPreTokenizerName("llama-bpe"), "llama3");
  EXPECT_EQ(CanonicalPreTokenizerName("qwen2"), "qwen2");
  EXPECT_EQ(CanonicalPreTokenizerName("bert"), "");
  EXPECT_EQ(PreTokenizer::Create("bert").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PreTokenizer::FromRegexes({"(unclosed"}).status().code(), absl::StatusCode::kInvalidArgument);
  auto custom = PreTokenizer::FromRegexes({"[0-9]+"});
  ASSERT_TRUE(custom.ok());
  std::vector<std::string_view> pieces;
  (*custom)->Split("ab12cd", &pieces);
  EXPECT_EQ(std::vector<std::string>(pieces.begin(), pieces.end()), (V{"ab", "12", "cd"}));
  for (const std::string& name : PreTokenizerNames()) EXPECT_FALSE(PreTokenizerRegexes(name).empty()) << name;
}

}  // namespace
}  // namespace llmserve
