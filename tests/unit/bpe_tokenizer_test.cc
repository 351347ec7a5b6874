// Byte-level BPE on small hand-made vocabularies: the merge order rules, ignore_merges,
// NFC, special tokens, decoding, and spec validation. Expected ids follow from the BPE
// definition (lowest merge rank first, leftmost on ties) applied by hand.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/tokenizer/bpe_tokenizer.h"
#include "model/tokenizer/byte_level.h"

namespace llmserve {
namespace {

// A spec whose ids 0..255 are the 256 single bytes (in byte-level form) followed by `extra`
// pieces (given as raw text, stored byte-level encoded) and `merges` (raw "left right").
TokenizerSpec MakeSpec(const std::vector<std::string>& extra, const std::vector<std::pair<std::string, std::string>>& merges,
                       const std::string& pretok = "gpt2") {
  TokenizerSpec spec;
  spec.kind = TokenizerKind::kByteLevelBpe;
  spec.source = "test-spec";
  spec.pretokenizer = pretok;
  for (int b = 0; b < 256; ++b) spec.tokens.push_back(byte_level::Encode(std::string(1, static_cast<char>(b))));
  for (const auto& e : extra) spec.tokens.push_back(byte_level::Encode(e));
  for (const auto& [l, r] : merges) spec.merges.push_back(byte_level::Encode(l) + " " + byte_level::Encode(r));
  return spec;
}

std::unique_ptr<Tokenizer> Make(TokenizerSpec spec) {
  auto tok = NewByteLevelBpeTokenizer(std::move(spec));
  EXPECT_TRUE(tok.ok()) << tok.status();
  return tok.ok() ? *std::move(tok) : nullptr;
}

std::vector<int32_t> Enc(const Tokenizer& tok, const std::string& text, bool special = false) {
  EncodeOptions o;
  o.parse_special = special;
  auto ids = tok.Encode(text, o);
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

constexpr int32_t kA = 'a', kB = 'b', kC = 'c';

TEST(ByteLevelTest, MappingMatchesGpt2) {
  EXPECT_EQ(byte_level::Encode(" "), "\xC4\xA0");   // 'Ġ'
  EXPECT_EQ(byte_level::Encode("\n"), "\xC4\x8A");  // 'Ċ'
  EXPECT_EQ(byte_level::Encode("a!~"), "a!~");
  EXPECT_EQ(byte_level::ByteToCodePoint(0x00), 0x100u);
  EXPECT_EQ(byte_level::ByteToCodePoint(0xAD), 0x143u);  // the last remapped byte
  for (int b = 0; b < 256; ++b) {
    const std::string raw(1, static_cast<char>(b));
    EXPECT_EQ(byte_level::Decode(byte_level::Encode(raw)), raw) << b;
  }
  bool exact = true;
  EXPECT_EQ(byte_level::Decode("x\xE2\x96\x81", &exact), "x\xE2\x96\x81");  // '▁' is not in the mapping
  EXPECT_FALSE(exact);
}

TEST(BpeTokenizerTest, LowestRankMergesFirst) {
  // "abc": merging b+c (rank 0) first leaves a, bc; with the ranks swapped, ab, c.
  auto t1 = Make(MakeSpec({"ab", "bc"}, {{"b", "c"}, {"a", "b"}}));
  auto t2 = Make(MakeSpec({"ab", "bc"}, {{"a", "b"}, {"b", "c"}}));
  ASSERT_TRUE(t1 && t2);
  EXPECT_EQ(Enc(*t1, "abc"), (std::vector<int32_t>{kA, 257}));
  EXPECT_EQ(Enc(*t2, "abc"), (std::vector<int32_t>{256, kC}));
}

TEST(BpeTokenizerTest, LeftmostOnTiesAndChains) {
  auto tok = Make(MakeSpec({"aa", "aaaa", "ab", "abc"}, {{"a", "a"}, {"aa", "aa"}, {"a", "b"}, {"ab", "c"}}));
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(Enc(*tok, "aaa"), (std::vector<int32_t>{256, kA}));
  EXPECT_EQ(Enc(*tok, "aaaa"), (std::vector<int32_t>{257}));
  EXPECT_EQ(Enc(*tok, "aaaaa"), (std::vector<int32_t>{257, kA}));
  EXPECT_EQ(Enc(*tok, "abc"), (std::vector<int32_t>{259}));
  EXPECT_EQ(Enc(*tok, "abcab"), (std::vector<int32_t>{259, 258}));
}

TEST(BpeTokenizerTest, LongWordsUseTheSameRules) {
  // Words longer than the quadratic-scan limit (128 bytes) go through the heap path.
  auto tok = Make(MakeSpec({"aa", "aaaa", "ab"}, {{"a", "a"}, {"aa", "aa"}, {"a", "b"}}));
  ASSERT_NE(tok, nullptr);
  for (int n : {127, 128, 129, 130, 131, 1001}) {
    std::vector<int32_t> want(n / 4, 257);
    if (n % 4 >= 2) want.push_back(256);
    if (n % 2 == 1) want.push_back(kA);
    EXPECT_EQ(Enc(*tok, std::string(n, 'a')), want) << n;
  }
  std::string abs;
  for (int i = 0; i < 300; ++i) abs += "ab";
  EXPECT_EQ(Enc(*tok, abs), std::vector<int32_t>(300, 258));
}

TEST(BpeTokenizerTest, IgnoreMergesTakesWholeVocabularyWords) {
  TokenizerSpec spec = MakeSpec({"ab", "abc"}, {{"a", "b"}});  // "abc" is unreachable by merges
  auto plain = Make(spec);
  spec.ignore_merges = true;
  auto ignoring = Make(spec);
  ASSERT_TRUE(plain && ignoring);
  EXPECT_EQ(Enc(*plain, "abc"), (std::vector<int32_t>{256, kC}));
  EXPECT_EQ(Enc(*ignoring, "abc"), (std::vector<int32_t>{257}));
  EXPECT_EQ(Enc(*ignoring, "abcab"), (std::vector<int32_t>{256, kC, 256}));  // not a vocabulary word
}

TEST(BpeTokenizerTest, PreTokenizerBoundsMerges) {
  // " a" and "b" are separate gpt2 pre-tokens, so "a b" never merges across the space.
  auto tok = Make(MakeSpec({"ab", " a"}, {{"a", "b"}, {" ", "a"}}));
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(Enc(*tok, "ab ab"), (std::vector<int32_t>{256, ' ', 256}));
  EXPECT_EQ(Enc(*tok, " a b"), (std::vector<int32_t>{257, ' ', kB}));
  EXPECT_EQ(tok->Decode(Enc(*tok, " a b\n\xE6\x97\xA5")), " a b\n\xE6\x97\xA5");
}

TEST(BpeTokenizerTest, NfcNormalizesBeforeSplitting) {
  // é as U+00E9 is bytes C3 A9; "e" + U+0301 is 65 CC 81.
  TokenizerSpec spec = MakeSpec({"\xC3\xA9", "\xEA\xB0\x80", "\xEA\xB0"},
                                {{"\xC3", "\xA9"}, {"\xEA", "\xB0"}, {"\xEA\xB0", "\x80"}});
  auto raw = Make(spec);
  spec.nfc = true;
  auto nfc = Make(spec);
  ASSERT_TRUE(raw && nfc);
  EXPECT_EQ(Enc(*raw, "e\xCC\x81"), (std::vector<int32_t>{'e', 0xCC, 0x81}));
  EXPECT_EQ(Enc(*nfc, "e\xCC\x81"), (std::vector<int32_t>{256}));
  // Hangul jamo U+1100 U+1161 compose to U+AC00 (EA B0 80); ASCII around them is untouched.
  EXPECT_EQ(Enc(*nfc, "x\xE1\x84\x80\xE1\x85\xA1y"), (std::vector<int32_t>{'x', 257, 'y'}));
  EXPECT_EQ(Enc(*nfc, "\xC3\xA9"), (std::vector<int32_t>{256}));
}

TEST(BpeTokenizerTest, SpecialAndUserDefinedTokens) {
  TokenizerSpec spec = MakeSpec({"<|end|>", "<tool>"}, {});
  spec.types.assign(spec.tokens.size(), TokenType::kNormal);
  spec.types[256] = TokenType::kControl;
  spec.types[257] = TokenType::kUserDefined;
  spec.bos_id = 256;
  spec.eos_id = 256;
  auto tok = Make(spec);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(Enc(*tok, "a<|end|>", /*special=*/true), (std::vector<int32_t>{kA, 256}));
  const std::vector<int32_t> as_text = Enc(*tok, "a<|end|>", false);
  EXPECT_EQ(as_text.size(), 8u);  // a < | end | > split by gpt2 into bytes (no merges)
  EXPECT_EQ(Enc(*tok, "<tool>x", false), (std::vector<int32_t>{257, 'x'}));
  EncodeOptions bos;
  bos.add_bos = true;
  EXPECT_EQ(*tok->Encode("a", bos), (std::vector<int32_t>{256, kA}));
  EXPECT_EQ(tok->TokenBytes(256), "<|end|>");
  EXPECT_EQ(tok->TokenBytes(' '), " ");
  EXPECT_EQ(tok->TokenBytes(5000), "");
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{kA, 256, 257}), "a<tool>");
  DecodeOptions keep;
  keep.skip_special = false;
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{kA, 256}, keep), "a<|end|>");
}

TEST(BpeTokenizerTest, InvalidUtf8IsRejected) {
  auto tok = Make(MakeSpec({}, {}));
  ASSERT_NE(tok, nullptr);
  auto ids = tok->Encode("ab\xC3(", EncodeOptions{});
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(tok->Encode("", EncodeOptions{})->empty());
}

TEST(BpeTokenizerTest, SpecValidation) {
  auto expect_invalid = [](TokenizerSpec spec, const std::string& what) {
    auto tok = NewByteLevelBpeTokenizer(std::move(spec));
    ASSERT_FALSE(tok.ok()) << what;
    EXPECT_EQ(tok.status().code(), absl::StatusCode::kInvalidArgument) << what;
    EXPECT_NE(tok.status().message().find("test-spec"), std::string::npos) << tok.status();
  };
  TokenizerSpec s = MakeSpec({"ab"}, {{"a", "b"}});
  { auto t = s; t.pretokenizer = "klingon"; expect_invalid(t, "unknown pre-tokenizer"); }
  { auto t = s; t.kind = TokenizerKind::kSentencePiece; expect_invalid(t, "wrong kind"); }
  { auto t = s; t.types.assign(3, TokenType::kNormal); expect_invalid(t, "types size"); }
  { auto t = s; t.scores.assign(2, 0.0f); expect_invalid(t, "scores size"); }
  { auto t = s; t.bos_id = 257; expect_invalid(t, "bos out of range"); }
  { auto t = s; t.eos_id = -2; expect_invalid(t, "negative eos"); }
  { auto t = s; t.merges.push_back("ab"); expect_invalid(t, "merge without space"); }
  { auto t = s; t.merges.push_back("a "); expect_invalid(t, "merge with empty right"); }
  { auto t = s; t.merges.push_back("a zz"); expect_invalid(t, "merge of unknown piece"); }
  { auto t = s; t.tokens.clear(); t.merges.clear(); expect_invalid(t, "empty vocabulary"); }
  // A merge whose result is not a token is skipped, not an error.
  auto t = s;
  t.merges.push_back("b c");
  auto tok = Make(t);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(Enc(*tok, "abc"), (std::vector<int32_t>{256, kC}));
  // GGUF spellings of pre-tokenizer names are accepted.
  t.pretokenizer = "llama-bpe";
  EXPECT_NE(Make(t), nullptr);
}

}  // namespace
}  // namespace llmserve
