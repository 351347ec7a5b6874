// SentencePiece-style BPE: hand-made vocabularies whose answers follow from the algorithm,
// a naive quadratic reference on random vocabularies, spec validation, threads, speed.
#include "model/tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "model/tokenizer/llama2c_tokenizer.h"
#include "model/tokenizer/utf8.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

const std::string kMark = "\xE2\x96\x81";  // "▁"

std::string ByteName(int b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", b);
  return buf;
}

// A vocabulary: pieces with scores, plus optional 256 byte tokens and special tokens.
struct VocabBuilder {
  TokenizerSpec spec;
  VocabBuilder() {
    spec.source = "test-vocab";
    Add("<unk>", 0, TokenType::kUnknown);
    Add("<s>", 0, TokenType::kControl);
    Add("</s>", 0, TokenType::kControl);
    spec.unk_id = 0;
    spec.bos_id = 1;
    spec.eos_id = 2;
  }
  int32_t Add(const std::string& piece, float score, TokenType type = TokenType::kNormal) {
    spec.tokens.push_back(piece);
    spec.scores.push_back(score);
    spec.types.push_back(type);
    return static_cast<int32_t>(spec.tokens.size() - 1);
  }
  void AddBytes() {
    for (int b = 0; b < 256; ++b) Add(ByteName(b), 0, TokenType::kByte);
  }
  int32_t Id(const std::string& piece) const {
    auto it = std::find(spec.tokens.begin(), spec.tokens.end(), piece);
    return it == spec.tokens.end() ? -1 : static_cast<int32_t>(it - spec.tokens.begin());
  }
  std::unique_ptr<Tokenizer> Build() const {
    auto tok = NewSentencePieceTokenizer(spec);
    EXPECT_TRUE(tok.ok()) << tok.status();
    return tok.ok() ? *std::move(tok) : nullptr;
  }
};

std::vector<int32_t> Enc(const Tokenizer& tok, const std::string& text, EncodeOptions opts = {}) {
  auto ids = tok.Encode(text, opts);
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

TEST(SpmTokenizerTest, HighestScoreMergesFirst) {
  VocabBuilder v;
  v.spec.add_space_prefix = false;
  for (const char* c : {"a", "b", "c"}) v.Add(c, -10);
  const int32_t ab = v.Add("ab", -1);
  const int32_t bc = v.Add("bc", -0.5f);
  auto tok = v.Build();
  ASSERT_NE(tok, nullptr);
  // "bc" scores higher than "ab": a | bc.
  EXPECT_EQ(Enc(*tok, "abc"), (std::vector<int32_t>{v.Id("a"), bc}));
  v.spec.scores[static_cast<size_t>(ab)] = 0;  // now "ab" wins: ab | c
  tok = v.Build();
  EXPECT_EQ(Enc(*tok, "abc"), (std::vector<int32_t>{ab, v.Id("c")}));
}

TEST(SpmTokenizerTest, TiesGoToTheLeftmostPair) {
  VocabBuilder v;
  v.spec.add_space_prefix = false;
  const int32_t a = v.Add("a", -10);
  const int32_t aa = v.Add("aa", -1);
  auto tok = v.Build();
  EXPECT_EQ(Enc(*tok, "aaa"), (std::vector<int32_t>{aa, a}));
  EXPECT_EQ(Enc(*tok, "aaaaa"), (std::vector<int32_t>{aa, aa, a}));
}

TEST(SpmTokenizerTest, MergeRanksOverrideScores) {
  VocabBuilder v;
  v.spec.add_space_prefix = false;
  for (const char* c : {"a", "b", "c"}) v.Add(c, 0);
  const int32_t ab = v.Add("ab", 0);
  const int32_t bc = v.Add("bc", 0);
  v.spec.scores.clear();
  v.spec.merges = {"b c", "a b"};  // rank 0 = "b c"
  auto tok = v.Build();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(Enc(*tok, "abc"), (std::vector<int32_t>{v.Id("a"), bc}));
  v.spec.merges = {"a b", "b c"};
  tok = v.Build();
  EXPECT_EQ(Enc(*tok, "abc"), (std::vector<int32_t>{ab, v.Id("c")}));
  // Without a merge rule the pair stays apart even though "ca" could be a piece.
  v.Add("ca", 0);
  v.spec.scores.clear();
  tok = v.Build();
  EXPECT_EQ(Enc(*tok, "ca"), (std::vector<int32_t>{v.Id("c"), v.Id("a")}));
}

TEST(SpmTokenizerTest, SpacesBecomeMarksWithADummyPrefix) {
  VocabBuilder v;
  for (const char* c : {"a", "b"}) v.Add(c, -10);
  const int32_t mark = v.Add(kMark, -10);
  const int32_t ma = v.Add(kMark + "a", -1);
  const int32_t mb = v.Add(kMark + "b", -2);
  auto tok = v.Build();
  ASSERT_NE(tok, nullptr);
  EXPECT_TRUE(tok->StripsLeadingSpace());
  EXPECT_EQ(Enc(*tok, "a b"), (std::vector<int32_t>{ma, mb}));
  EXPECT_EQ(Enc(*tok, " a"), (std::vector<int32_t>{mark, ma}));
  EXPECT_EQ(Enc(*tok, ""), std::vector<int32_t>{});
  EXPECT_EQ(Enc(*tok, "", {.add_bos = true}), std::vector<int32_t>{1});
  EXPECT_EQ(Enc(*tok, "a", {.add_bos = true}), (std::vector<int32_t>{1, ma}));
  EXPECT_EQ(tok->TokenBytes(ma), " a");
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{ma, mb}), "a b");
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{mark, ma}), " a");

  v.spec.add_space_prefix = false;
  tok = v.Build();
  EXPECT_FALSE(tok->StripsLeadingSpace());
  EXPECT_EQ(Enc(*tok, "a b"), (std::vector<int32_t>{v.Id("a"), mb}));
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{ma}), " a");
}

TEST(SpmTokenizerTest, UnknownCharactersFallBackToBytesOrUnk) {
  VocabBuilder v;
  v.spec.add_space_prefix = false;
  v.Add("a", -1);
  v.AddBytes();
  auto tok = v.Build();
  ASSERT_NE(tok, nullptr);
  // "é" = C3 A9 is not a piece.
  EXPECT_EQ(Enc(*tok, "a\xC3\xA9"), (std::vector<int32_t>{v.Id("a"), v.Id("<0xC3>"), v.Id("<0xA9>")}));
  EXPECT_EQ(tok->TokenBytes(v.Id("<0x0A>")), "\n");
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{v.Id("<0xC3>"), v.Id("<0xA9>")}), "\xC3\xA9");
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{v.Id("<0xC3>")}), "\xEF\xBF\xBD");  // lone lead byte

  v.spec.byte_fallback = false;
  tok = v.Build();
  EXPECT_EQ(Enc(*tok, "a\xC3\xA9" "a"), (std::vector<int32_t>{v.Id("a"), 0, v.Id("a")}));
  v.spec.unk_id = -1;
  tok = v.Build();
  auto ids = tok->Encode("\xC3\xA9", {});
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SpmTokenizerTest, SpecialTokensAndPrefixAfterThem) {
  VocabBuilder v;
  for (const char* c : {"<", "s", ">", "a", "b"}) v.Add(c, -10);
  const int32_t mark = v.Add(kMark, -10);
  const int32_t lt_s = v.Add("<s", -1);
  const int32_t ma = v.Add(kMark + "a", -2);
  const int32_t mb = v.Add(kMark + "b", -2);
  const int32_t user = v.Add("<|u|>", 0, TokenType::kUserDefined);
  auto tok = v.Build();
  ASSERT_NE(tok, nullptr);
  // Control tokens are never produced by merging text...
  EXPECT_EQ(Enc(*tok, "<s>", {}), (std::vector<int32_t>{mark, lt_s, v.Id(">")}));
  // ...only recognised with parse_special; text after a special token gets the prefix (llama.cpp).
  EXPECT_EQ(Enc(*tok, "<s>a", {.parse_special = true}), (std::vector<int32_t>{1, ma}));
  EXPECT_EQ(Enc(*tok, "a<|u|>b", {}), (std::vector<int32_t>{ma, user, mb}));
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{1, ma}), "a");
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{1, ma}, {.skip_special = false}), "<s> a");
}

TEST(SpmTokenizerTest, UnusedPiecesAreSplitBackIntoTheirParts) {
  // SentencePiece: an unused piece may be merged through but is never output.
  VocabBuilder v;
  v.spec.add_space_prefix = false;
  const int32_t a = v.Add("a", -10), b = v.Add("b", -10), c = v.Add("c", -10);
  v.Add("ab", 0, TokenType::kUnused);
  const int32_t abc = v.Add("abc", -1);
  auto tok = v.Build();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(Enc(*tok, "ab"), (std::vector<int32_t>{a, b}));
  EXPECT_EQ(Enc(*tok, "abc"), (std::vector<int32_t>{abc}));
  EXPECT_EQ(Enc(*tok, "abab"), (std::vector<int32_t>{a, b, a, b}));
  EXPECT_EQ(Enc(*tok, "cab"), (std::vector<int32_t>{c, a, b}));
}

TEST(SpmTokenizerTest, RejectsInvalidUtf8) {
  VocabBuilder v;
  v.Add("a", 0);
  auto tok = v.Build();
  for (const std::string bad : {"\xC3", "a\xFF", "\xED\xA0\x80", "\xC0\xAF"}) {
    EXPECT_EQ(tok->Encode(bad, {}).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(SpmTokenizerTest, ValidatesTheSpec) {
  auto expect_bad = [](const VocabBuilder& v, const std::string& needle) {
    auto tok = NewSentencePieceTokenizer(v.spec);
    ASSERT_FALSE(tok.ok()) << needle;
    EXPECT_EQ(tok.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(tok.status().message()).find("test-vocab: "), std::string::npos) << tok.status();
    EXPECT_NE(std::string(tok.status().message()).find(needle), std::string::npos) << tok.status();
  };
  VocabBuilder base;
  base.Add("a", 0);
  base.Add("b", 0);
  ASSERT_NE(base.Build(), nullptr);
  VocabBuilder v = base;
  v.spec.scores.pop_back();
  expect_bad(v, "scores");
  v = base;
  v.spec.types.push_back(TokenType::kNormal);
  expect_bad(v, "token types");
  v = base;
  v.spec.types[3] = static_cast<TokenType>(42);
  expect_bad(v, "unknown type 42");
  v = base;
  v.spec.bos_id = 5;
  expect_bad(v, "bos_id 5 is out of range");
  v = base;
  v.spec.unk_id = -2;
  expect_bad(v, "unk_id -2");
  v = base;
  v.spec.scores[4] = std::numeric_limits<float>::quiet_NaN();
  expect_bad(v, "NaN");
  v = base;
  v.spec.kind = TokenizerKind::kByteLevelBpe;
  expect_bad(v, "not a SentencePiece");
  v = base;
  v.spec.tokens.clear();
  v.spec.scores.clear();
  v.spec.types.clear();
  v.spec.bos_id = v.spec.eos_id = v.spec.unk_id = -1;
  expect_bad(v, "empty vocabulary");
  v = base;
  v.spec.scores.clear();
  expect_bad(v, "neither token scores nor merges");
  v = base;
  v.spec.merges = {"a c"};
  expect_bad(v, "does not name two vocabulary pieces");
  v = base;
  v.spec.merges = {"ab"};
  expect_bad(v, "does not name two vocabulary pieces");
  v = base;
  v.spec.merges = {"a b"};  // "ab" is not a piece
  expect_bad(v, "not in the vocabulary");
}

// ---- random vocabularies against a naive reference --------------------------------

std::vector<std::string> SplitChars(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8::SequenceLength(static_cast<uint8_t>(s[i]));
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

// BPE written straight from its definition, on strings, quadratic: repeatedly merge the best
// adjacent pair (score mode: the concatenation is a piece, highest score; rank mode: the pair
// is a merge rule, lowest rank; leftmost on ties); leftovers become bytes or unk.
std::vector<int32_t> NaiveEncode(const TokenizerSpec& spec, const std::string& text) {
  std::map<std::string, int32_t> id;
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    const TokenType t = spec.types[i];
    if (t != TokenType::kControl && t != TokenType::kUnknown && t != TokenType::kByte) {
      id.emplace(spec.tokens[i], static_cast<int32_t>(i));
    }
  }
  std::map<std::pair<std::string, std::string>, int> rank;
  for (size_t r = 0; r < spec.merges.size(); ++r) {
    const size_t sp = spec.merges[r].find(' ');
    rank.emplace(std::make_pair(spec.merges[r].substr(0, sp), spec.merges[r].substr(sp + 1)), static_cast<int>(r));
  }
  std::string escaped = spec.add_space_prefix && !text.empty() ? kMark : "";
  for (char c : text) escaped += c == ' ' ? kMark : std::string(1, c);
  std::vector<std::string> sym = SplitChars(escaped);
  while (true) {
    int best = -1;
    double best_priority = 0;
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      double priority;
      if (spec.merges.empty()) {
        auto it = id.find(sym[i] + sym[i + 1]);
        if (it == id.end()) continue;
        priority = spec.scores[static_cast<size_t>(it->second)];
      } else {
        auto it = rank.find({sym[i], sym[i + 1]});
        if (it == rank.end()) continue;
        priority = -it->second;
      }
      if (best < 0 || priority > best_priority) {
        best = static_cast<int>(i);
        best_priority = priority;
      }
    }
    if (best < 0) break;
    sym[static_cast<size_t>(best)] += sym[static_cast<size_t>(best) + 1];
    sym.erase(sym.begin() + best + 1);
  }
  std::vector<int32_t> out;
  for (const std::string& s : sym) {
    if (auto it = id.find(s); it != id.end()) {
      out.push_back(it->second);
      continue;
    }
    bool all = spec.byte_fallback;
    for (char b : s) {
      all = all && std::find(spec.tokens.begin(), spec.tokens.end(), ByteName(static_cast<uint8_t>(b))) != spec.tokens.end();
    }
    for (char b : s) {
      if (all) out.push_back(static_cast<int32_t>(std::find(spec.tokens.begin(), spec.tokens.end(), ByteName(static_cast<uint8_t>(b))) - spec.tokens.begin()));
    }
    if (!all) out.push_back(spec.unk_id);
  }
  return out;
}

TEST(SpmTokenizerTest, MatchesNaiveReferenceOnRandomVocabularies) {
  // "é" occurs inside pieces but is no piece itself; "日" occurs nowhere (byte fallback).
  const std::vector<std::string> alphabet = {"a", "b", "c", kMark, "\xC3\xA9"};
  const std::vector<std::string> text_chars = {"a", "b", "c", " ", " ", "\xC3\xA9", "\xE6\x97\xA5"};
  std::mt19937 rng(77);
  for (int round = 0; round < 60; ++round) {
    const bool ranked = round % 2 == 1;
    VocabBuilder v;
    v.spec.add_space_prefix = round % 3 != 0;
    v.spec.byte_fallback = round % 5 != 0;
    for (size_t i = 0; i + 1 < alphabet.size(); ++i) v.Add(alphabet[i], -static_cast<float>(rng() % 9));
    std::set<std::string> seen(alphabet.begin(), alphabet.end());
    std::vector<std::string> multi;
    for (int i = 0; i < 40; ++i) {
      std::string p;
      const int len = 2 + static_cast<int>(rng() % 4);
      for (int k = 0; k < len; ++k) p += alphabet[rng() % alphabet.size()];
      if (!seen.insert(p).second) continue;
      v.Add(p, -static_cast<float>(rng() % 9));  // few distinct scores: many ties
      multi.push_back(p);
    }
    v.AddBytes();
    if (ranked) {
      for (const std::string& p : multi) {
        const auto chars = SplitChars(p);
        std::string left;
        for (size_t k = 0; k + 1 < chars.size(); ++k) {
          left += chars[k];
          const std::string right = p.substr(left.size());
          if (v.Id(left) >= 0 && v.Id(right) >= 0 && rng() % 10 < 7) v.spec.merges.push_back(left + " " + right);
        }
      }
      std::shuffle(v.spec.merges.begin(), v.spec.merges.end(), rng);
      v.spec.scores.clear();
    }
    auto tok = v.Build();
    ASSERT_NE(tok, nullptr);
    for (int trial = 0; trial < 40; ++trial) {
      std::string text;
      const int n = static_cast<int>(rng() % 30);
      for (int i = 0; i < n; ++i) text += text_chars[rng() % text_chars.size()];
      ASSERT_EQ(Enc(*tok, text), NaiveEncode(v.spec, text)) << "round " << round << " text \"" << text << "\"";
    }
  }
}

}  // namespace
}  // namespace llmserve
