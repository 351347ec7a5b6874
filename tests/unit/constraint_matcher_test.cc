// The token-level matcher on hand-built grammars: whole-text acceptance, greedy lexing,
// and masks that agree with feeding each token on its own.
#include <gtest/gtest.h>

#include <random>

#include "constraint/grammar.h"
#include "constraint/matcher.h"

namespace llmserve::constraint {
namespace {

// value ::= NUMBER | STRING | array ; array ::= "[" (value ("," value)*)? "]"
Grammar ArrayGrammar() {
  GrammarBuilder b;
  RegexPool& re = b.regex();
  Symbol open = b.LexemeSymbol(re.Byte('['));
  Symbol close = b.LexemeSymbol(re.Byte(']'));
  Symbol comma = b.LexemeSymbol(re.Byte(','));
  RegexId digit = re.Bytes(ByteSet::Range('0', '9'));
  RegexId nonzero = re.Bytes(ByteSet::Range('1', '9'));
  Symbol number = b.LexemeSymbol(re.Concat(
      {re.Optional(re.Byte('-')), re.Alt({re.Byte('0'), re.Concat({nonzero, re.Star(digit)})})}));
  Symbol string = b.LexemeSymbol(
      re.Concat({re.Byte('"'), re.Star(re.Bytes(ByteSet::Range('a', 'z'))), re.Byte('"')}));
  NonterminalId value = b.NewNonterminal("value");
  NonterminalId array = b.NewNonterminal("array");
  NonterminalId items = b.NewNonterminal("items");
  b.AddRule(value, {number});
  b.AddRule(value, {string});
  b.AddRule(value, {Symbol::Nonterminal(array)});
  b.AddRule(items, {Symbol::Nonterminal(value)});
  b.AddRule(items, {Symbol::Nonterminal(items), comma, Symbol::Nonterminal(value)});
  b.AddRule(array, {open, close});
  b.AddRule(array, {open, Symbol::Nonterminal(items), close});
  auto g = std::move(b).Build(array);
  EXPECT_TRUE(g.ok()) << g.status();
  return *std::move(g);
}

bool Accepts(const Grammar& g, std::string_view text) {
  auto r = GrammarAcceptsText(g, text);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() && *r;
}

TEST(ConstraintMatcher, WholeText) {
  Grammar g = ArrayGrammar();
  for (const char* ok : {"[]", "[1]", "[1,22,-3]", "[\"ab\",[],[0,[\"\"]]]", "[0]"}) {
    EXPECT_TRUE(Accepts(g, ok)) << ok;
  }
  for (const char* bad : {"", "[", "[1,]", "[01]", "[-]", "[\"a]", "[1]]", "[]x", "[1 ]", "[--1]"}) {
    EXPECT_FALSE(Accepts(g, bad)) << bad;
  }
}

TEST(ConstraintMatcher, CompleteAndAccepting) {
  auto c = CompiledConstraint::Create(ArrayGrammar(), nullptr);
  ASSERT_TRUE(c.ok());
  Matcher m(*c);
  EXPECT_FALSE(m.Accepting());
  EXPECT_FALSE(m.Complete());
  ASSERT_TRUE(m.AdvanceBytes("[1"));
  EXPECT_FALSE(m.Accepting());
  EXPECT_FALSE(m.AdvanceBytes("]x"));  // refused as a whole: state unchanged
  ASSERT_TRUE(m.AdvanceBytes("]"));
  EXPECT_TRUE(m.Accepting());
  EXPECT_TRUE(m.Complete());
}

std::shared_ptr<const TokenVocabulary> Vocab(std::vector<std::string> tokens, int32_t* eos) {
  VocabularyInput in;
  in.token_bytes = std::move(tokens);
  in.token_bytes.push_back("</s>");
  in.special.assign(in.token_bytes.size(), false);
  in.special.back() = true;
  *eos = static_cast<int32_t>(in.token_bytes.size() - 1);
  in.end_of_generation = {*eos};
  auto v = TokenVocabulary::Create(std::move(in));
  EXPECT_TRUE(v.ok()) << v.status();
  return *v;
}

// The mask from the trie walk equals, token by token, what feeding the token allows.
TEST(ConstraintMatcher, MaskAgreesWithAdvance) {
  int32_t eos = 0;
  auto vocab = Vocab({"[", "]", ",", "1", "12", "0", "-", "\"", "\"a", "a\"", "ab", "1,", "],[", "[[",
                      "\",\"", "]]", "a", "x", "1]", "\"]", "12,", "[\"", "0,", "\",", "[1"},
                     &eos);
  auto c = CompiledConstraint::Create(ArrayGrammar(), vocab);
  ASSERT_TRUE(c.ok());
  std::mt19937 rng(7);
  for (int trial = 0; trial < 100; ++trial) {
    Matcher m(*c);
    std::string consumed;
    for (int step = 0; step < 25; ++step) {
      TokenMask mask;
      ASSERT_TRUE(m.ComputeMask(&mask).ok());
      std::vector<int32_t> allowed;
      for (int32_t t = 0; t < vocab->size(); ++t) {
        if (t == eos) {
          EXPECT_EQ(mask.Has(t), m.Accepting());
        } else {
          Matcher probe(*c);
          ASSERT_TRUE(probe.AdvanceBytes(consumed));
          EXPECT_EQ(probe.AdvanceBytes(vocab->bytes(t)), mask.Has(t))
              << "after '" << consumed << "' token '" << vocab->bytes(t) << "'";
        }
        if (mask.Has(t)) allowed.push_back(t);
      }
      ASSERT_FALSE(allowed.empty()) << consumed;  // a live state always has a way on
      int32_t pick = allowed[rng() % allowed.size()];
      if (pick == eos) break;
      ASSERT_TRUE(m.Advance(pick).ok());
      consumed += vocab->bytes(pick);
    }
  }
}

}  // namespace
}  // namespace llmserve::constraint
