// ParseGbnf: llama.cpp's GBNF syntax to a Grammar of single-code-point lexemes.
//
// Acceptance is checked twice: by the matcher (GrammarAcceptsText) and by a small Earley
// recognizer over code points defined here, independent of the matcher's lexer and
// parser: each lexeme is one code point, so a lexeme matches a code point iff its byte
// expression matches that code point's UTF-8.
#include "constraint/gbnf.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "constraint/matcher.h"

namespace llmserve::constraint {
namespace {

// End positions (a bit mask over 0..bytes.size()) reachable by matching `id` from any of
// the start positions in `from`.
uint32_t RegexEnds(const RegexPool& pool, RegexId id, std::string_view bytes, uint32_t from) {
  const RegexNode& n = pool.node(id);
  switch (n.kind) {
    case RegexKind::kNothing: return 0;
    case RegexKind::kEmpty: return from;
    case RegexKind::kBytes: {
      uint32_t out = 0;
      for (size_t p = 0; p < bytes.size(); ++p) {
        if ((from >> p & 1) && n.bytes.Has(static_cast<uint8_t>(bytes[p]))) out |= 1u << (p + 1);
      }
      return out;
    }
    case RegexKind::kConcat:
      for (RegexId c : n.children) from = RegexEnds(pool, c, bytes, from);
      return from;
    case RegexKind::kAlt: {
      uint32_t out = 0;
      for (RegexId c : n.children) out |= RegexEnds(pool, c, bytes, from);
      return out;
    }
    case RegexKind::kRepeat: {
      uint32_t out = n.min == 0 ? from : 0, cur = from;
      const uint64_t cap = n.max == RegexPool::kUnbounded ? uint64_t{n.min} + bytes.size() + 1 : n.max;
      for (uint64_t i = 1; i <= cap && cur != 0; ++i) {
        cur = RegexEnds(pool, n.children[0], bytes, cur);
        if (i >= n.min) out |= cur;
      }
      return out;
    }
  }
  return 0;
}

bool LexemeMatches(const Grammar& g, LexemeId l, std::string_view bytes) {
  return (RegexEnds(g.regex, g.lexemes[l], bytes, 1) >> bytes.size()) & 1;
}

// Earley recognition of `text` (split into UTF-8 code points); nullable nonterminals are
// stepped over when predicted (Aycock & Horspool), which makes completion order-free.
bool EarleyAccepts(const Grammar& g, std::string_view text) {
  std::vector<std::string_view> cps;
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<uint8_t>(text[i]);
    const size_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    cps.push_back(text.substr(i, len));
    i += len;
  }
  struct Item { uint32_t rule, dot, origin; };
  std::vector<std::vector<Item>> sets(cps.size() + 1);
  std::vector<absl::flat_hash_set<uint64_t>> seen(cps.size() + 1);
  auto add = [&](size_t set, Item it) {
    const uint64_t key = (uint64_t{it.rule} << 40) ^ (uint64_t{it.dot} << 20) ^ it.origin;
    if (seen[set].insert(key).second) sets[set].push_back(it);
  };
  for (uint32_t r = g.rules_of[g.start].first; r < g.rules_of[g.start].second; ++r) add(0, {r, 0, 0});
  for (size_t i = 0; i <= cps.size(); ++i) {
    for (size_t k = 0; k < sets[i].size(); ++k) {
      const Item it = sets[i][k];
      const Rule& rule = g.rules[it.rule];
      if (it.dot == rule.rhs.size()) {
        for (size_t j = 0; j < sets[it.origin].size(); ++j) {
          const Item w = sets[it.origin][j];
          const auto& rhs = g.rules[w.rule].rhs;
          if (w.dot < rhs.size() && rhs[w.dot] == Symbol::Nonterminal(rule.lhs)) add(i, {w.rule, w.dot + 1, w.origin});
        }
        continue;
      }
      const Symbol s = rule.rhs[it.dot];
      if (s.is_nonterminal()) {
        for (uint32_t r = g.rules_of[s.id()].first; r < g.rules_of[s.id()].second; ++r) add(i, {r, 0, uint32_t(i)});
        if (g.nullable[s.id()]) add(i, {it.rule, it.dot + 1, it.origin});
      } else if (i < cps.size() && LexemeMatches(g, s.id(), cps[i])) {
        add(i + 1, {it.rule, it.dot + 1, it.origin});
      }
    }
  }
  for (const Item& it : sets.back()) {
    if (it.origin == 0 && g.rules[it.rule].lhs == g.start && it.dot == g.rules[it.rule].rhs.size()) return true;
  }
  return false;
}

// The recognizer's answer, which the matcher's must equal.
bool Accepts(const Grammar& g, std::string_view text) {
  const bool expected = EarleyAccepts(g, text);
  auto matcher = GrammarAcceptsText(g, text);
  EXPECT_TRUE(matcher.ok()) << matcher.status();
  if (matcher.ok()) {
    EXPECT_EQ(*matcher, expected) << "the matcher disagrees on \"" << text << "\"";
  }
  return expected;
}

Grammar MustParse(std::string_view text, const GbnfOptions& opts = {}) {
  auto g = ParseGbnf(text, opts);
  EXPECT_TRUE(g.ok()) << g.status() << "\n" << text;
  if (!g.ok()) return *ParseGbnf("root ::= \"\\x00\"");  // accepts only NUL: every check fails
  return *std::move(g);
}

// Each string in `pass` is accepted, each in `fail` refused.
void ExpectLanguage(std::string_view grammar, const std::vector<std::string>& pass,
                    const std::vector<std::string>& fail) {
  const Grammar g = MustParse(grammar);
  for (const auto& s : pass) EXPECT_TRUE(Accepts(g, s)) << "should accept \"" << s << "\"\n" << grammar;
  for (const auto& s : fail) EXPECT_FALSE(Accepts(g, s)) << "should refuse \"" << s << "\"\n" << grammar;
}

// The status message of a failed parse (and that it failed with `code`).
std::string Error(std::string_view text, absl::StatusCode code = absl::StatusCode::kInvalidArgument,
                  const GbnfOptions& opts = {}) {
  auto g = ParseGbnf(text, opts);
  EXPECT_FALSE(g.ok()) << text;
  if (g.ok()) return "";
  EXPECT_EQ(g.status().code(), code) << g.status();
  return std::string(g.status().message());
}

// ---- Structure -------------------------------------------------------------------------

TEST(GbnfTest, LiteralIsOneLexemePerCodePoint) {
  const Grammar g = MustParse("root ::= \"abé\"");
  EXPECT_EQ(g.ToString(), "root#0 ::= /a/ /b/ /\\xC3\\xA9/\n");
  EXPECT_EQ(g.lexemes.size(), 3u);
}

TEST(GbnfTest, ClassAndDotAreOneLexemeEach) {
  const Grammar g = MustParse("root ::= [a-cx] . [^\\x00-\\U0010FFFF\\n]? \"\"");
  ASSERT_EQ(g.rules_of[g.start].second - g.rules_of[g.start].first, 1u);
  EXPECT_TRUE(absl::StartsWith(g.ToString(), "root#0 ::= /[a-cx]/ /")) << g.ToString();
  // The complement of every code point matches nothing, so its `?` is always empty.
  EXPECT_TRUE(Accepts(g, "a\n"));
  EXPECT_TRUE(Accepts(g, "x\xF0\x9F\x98\x80"));
  EXPECT_FALSE(Accepts(g, "a"));
}

TEST(GbnfTest, RepetitionsAreLeftRecursiveOrChains) {
  EXPECT_EQ(MustParse("root ::= \"a\"*").ToString(),
            "root#0 ::= root_1#1\nroot_1#1 ::= root_1#1 /a/ | ()\n");
  EXPECT_EQ(MustParse("root ::= \"a\"+").ToString(),
            "root#0 ::= root_1#1\nroot_1#1 ::= root_1#1 /a/ | /a/\n");
  EXPECT_EQ(MustParse("root ::= \"ab\"?").ToString(),
            "root#0 ::= root_2#2\nroot_1#1 ::= /a/ /b/\nroot_2#2 ::= root_1#1 | ()\n");
  EXPECT_EQ(MustParse("root ::= [x]{2,4}").ToString(),
            "root#0 ::= /x/ /x/ root_2#2\nroot_1#1 ::= /x/ | ()\nroot_2#2 ::= /x/ root_1#1 | ()\n");
  EXPECT_EQ(MustParse("root ::= \"a\"{0}").ToString(), "root#0 ::= ()\n");
  // A one-alternative group is inlined; two alternatives make a nonterminal.
  EXPECT_EQ(MustParse("root ::= (\"a\" (\"b\")) (\"c\" | \"d\")").ToString(),
            "root#0 ::= /a/ /b/ root_1#1\nroot_1#1 ::= /c/ | /d/\n");
}

TEST(GbnfTest, RepetitionAppliesToTheWholeItem) {
  ExpectLanguage("root ::= \"ab\"+ \"c\"{2} (\"d\" | \"e\" \"f\"){1,2}", {"abccd", "ababccefd"},
                 {"abcd", "abccd" "d" "d", "aabccd", "ccd", "abcce"});
}

TEST(GbnfTest, EqualTerminalsShareALexeme) {
  const Grammar g = MustParse("root ::= [a-z] [a-z] . . \"aa\" [^a] [^a] \"\\x61\"");
  EXPECT_EQ(g.lexemes.size(), 4u) << g.ToString();  // [a-z], any, a, [^a]
}

TEST(GbnfTest, EscapesInLiteralsAndClasses) {
  const Grammar g = MustParse(R"(root ::= "\x41\u00e9\U0001F600\t\n\r\\\"\[\]" [\]\[\\"])");
  EXPECT_TRUE(Accepts(g, "A\u00e9\U0001F600\t\n\r\\\"[]]"));
  EXPECT_TRUE(Accepts(g, "A\u00e9\U0001F600\t\n\r\\\"[]\\"));
  EXPECT_FALSE(Accepts(g, "A\u00e9\U0001F600\t\n\r\\\"[]x"));
  const Grammar dash = MustParse("root ::= [-a-c-] [a-]");
  EXPECT_TRUE(Accepts(dash, "--"));
  EXPECT_TRUE(Accepts(dash, "ba"));
  EXPECT_FALSE(Accepts(dash, "da"));
}

TEST(GbnfTest, NegatedClassIsComplementOverAllCodePoints) {
  ExpectLanguage("root ::= [^a-z\\n]+", {"A", "\xF4\x8F\xBF\xBF", "\xE4\xB8\xAD!", "\x01\x7F"},
                 {"", "a", "A\n", "Az"});
}

TEST(GbnfTest, DotIsAnyCodePointIncludingNewline) {
  // As llama.cpp's LLAMA_GRETYPE_CHAR_ANY: every code point matches.
  ExpectLanguage("root ::= . .", {"ab", "\n\n", "\xF0\x9F\x94\xB5\n", std::string("\0x", 2)},
                 {"a", "abc", ""});
}

// ---- Newlines and comments (llama.cpp's parse_space(newline_ok)) ------------------------

TEST(GbnfTest, NewlinesContinueInsideParensAndAfterBarOnly) {
  ExpectLanguage(R"(
# leading comment
root ::= (   # comment inside
    "a"
    "b" |
    "c"
  ) tail   # trailing comment
tail ::=
  "x" |
  "y"
# comment at the end without a newline)",
                 {"abx", "cy"}, {"ab", "acx", "x"});
  // Outside parentheses a newline ends the rule, so a body may not continue on the next line.
  EXPECT_EQ(Error("root ::= \"a\"\n  \"b\""), "expected a rule name at line 2:3");
  EXPECT_EQ(Error("root ::= \"a\"\n| \"b\""), "expected a rule name at line 2:1");
  // CRLF line endings.
  ExpectLanguage("root ::= a b\r\na ::= \"a\"\r\nb ::= (\r\n\"b\"\r\n)\r\n", {"ab"}, {"a"});
}

TEST(GbnfTest, EmptyAlternativesAndEmptyBody) {
  ExpectLanguage("root ::= \"a\" | ", {"a", ""}, {"b"});
  ExpectLanguage("root ::=", {""}, {"x"});
  // As in llama.cpp, a newline may follow "::=", so an empty body cannot end at one.
  EXPECT_EQ(Error("root ::=\nx ::= \"x\""), "unexpected ':' at line 2:3");
  ExpectLanguage("root ::= () \"a\" (|\"b\")", {"a", "ab"}, {"b"});
}

// ---- Languages (transcribed from llama.cpp tests/test-grammar-integration.cpp, b10573) ---

TEST(GbnfLlamaCppTest, SimpleGrammar) {
  ExpectLanguage(R"(
            root ::= expr
            expr ::= term ("+" term)*
            term ::= number
            number ::= [0-9]+)",
                 {"42", "1+2+3+4+5", "123+456"}, {"+", "/ 3", "1+2+3+4+5+", "12a45"});
}

TEST(GbnfLlamaCppTest, MediumComplexityGrammar) {
  ExpectLanguage(R"g(
            root ::= expression
            expression ::= term ws (("+"|"-") ws term)*
            term ::= factor ws (("*"|"/") ws factor)*
            factor ::= number | variable | "(" expression ")" | function-call
            number ::= [0-9]+
            variable ::= [a-zA-Z_][a-zA-Z0-9_]*
            function-call ::= variable ws "(" (expression ("," ws expression)*)? ")"
            ws ::= [ \t\n\r]?)g",
                 {"42", "1*2*3*4*5", "x", "x+10", "x1+y2", "(a+b)*(c-d)", "func()", "func(x,y+2)",
                  "a*(b+c)-d/e", "f(g(x),h(y,z))", "x + 10", "x1 + y2", "(a + b) * (c - d)",
                  "func(x, y + 2)", "a * (b + c) - d / e", "f(g(x), h(y, z))", "123+456",
                  "123*456*789-123/456+789*123",
                  "123+456*789-123/456+789*123-456/789+123*456-789/123+456*789-123/456+789*123-456"},
                 {"+", "/ 3x", "x + + y", "a * / b", "func(,)", "func(x y)", "(a + b", "x + y)",
                  "a + b * (c - d", "42 +", "x +", "x + 10 +", "(a + b) * (c - d", "func(",
                  "func(x, y + 2", "a * (b + c) - d /", "f(g(x), h(y, z)",
                  "123+456*789-123/456+789*123-456/789+123*456-789/123+456*789-123/456+789*123-456/"});
}

TEST(GbnfLlamaCppTest, SpecialCharacters) {
  ExpectLanguage(R"(
            root ::= ... "abc" ...
            )",
                 {"abcabcabc", "aaaabcccc", "🔵🟠✅abc❌🟠🔵"},
                 {"aaabcccc", "aaaaabcccc", "aaaabccc", "aaaabccccc", "🔵🟠✅❌abc❌✅🟠🔵", "🔵🟠abc🟠🔵"});
}

TEST(GbnfLlamaCppTest, Quantifiers) {
  const std::string a62(62, 'a');
  ExpectLanguage(R"(root ::= "a"*)", {"", "a", "aaaaa", "aaaaaaaaaaaaaaaaaa", a62},
                 {"b", "ab", "aab", "ba", a62 + "b"});
  ExpectLanguage(R"(root ::= "a"+)", {"a", "aaaaa", "aaaaaaaaaaaaaaaaaa", a62},
                 {"", "b", "ab", "aab", "ba", a62 + "b"});
  ExpectLanguage(R"(root ::= "a"?)", {"", "a"}, {"b", "ab", "aa", "ba"});
  ExpectLanguage(R"(
            root ::= cons+ vowel* cons? (vowel cons)*
            vowel ::= [aeiouy]
            cons ::= [bcdfghjklmnpqrstvwxyz]
            )",
                 {"yes", "no", "noyes", "crwth", "four", "bryyyy"}, {"yess", "yesno", "forty", "catyyy"});
  ExpectLanguage("\n            root ::= [ab]{4}\n        ", {"aaaa", "bbbb", "abab"}, {"a", "b", "aaaaa"});
  ExpectLanguage("\n            root ::= [ab]{4,}\n        ", {"aaaa", "aaaaab", "bbbb", "ababab"},
                 {"", "aba"});
  ExpectLanguage("\n            root ::= [ab]{0,4}\n        ", {"", "a", "aa", "aaa", "aaab"}, {"aaaaa"});
  ExpectLanguage(R"(
            root ::= ("0x" [A-F0-9]{2} " "?){3,5}
        )",
                 {"0xFF 0x12 0xAB", "0xFF 0x12 0xAB 0x00 0x00"},
                 {"", "0xFF", "0xFF 0x12", "0xFF 0x12 0xAB 0x00 0x00 0x00"});
  ExpectLanguage(R"(
            root ::= ( [x]* )*
        )",
                 {"", "x", "xx"}, {"y", "yy"});
}

TEST(GbnfLlamaCppTest, MissingReferenceIsAnError) {
  EXPECT_EQ(Error(R"(root ::= expr
        expr ::= term ("+" term)*
        term ::= numero
        number ::= [0-9]+)"),
            "undefined rule \"numero\" at line 3:18");
}

TEST(GbnfLlamaCppTest, MissingRootIsAnError) {
  EXPECT_EQ(Error(R"(
        rot ::= expr
        expr ::= term ("+" term)*
        term ::= number
        number ::= [0-9]+)"),
            "grammar has no root rule");
}

// llama.cpp refuses left recursion (its matcher is a pushdown automaton); ours is Earley,
// so these grammars from its left-recursion test are accepted with their languages.
TEST(GbnfLlamaCppTest, LeftRecursionIsAccepted) {
  ExpectLanguage(R"(root ::= "a" | root "a")", {"a", "aaaa"}, {"", "b", "ab"});
  ExpectLanguage(R"(
        root ::= asdf
        asdf ::= "a" | foo "b"
        foo ::= "c" | asdf "d" | "e")",
                 {"a", "cb", "eb", "adb", "cbdb"}, {"", "c", "ad", "ab"});
  ExpectLanguage(R"(
        root ::= asdf
        asdf ::= "a" | foo "b"
        foo ::= "c" | empty asdf "d" | "e"
        empty ::= "blah" | )",
                 {"a", "adb", "blahadb", "blahcbdb"}, {"blah", "blahad"});
}

// llama.cpp's parser test refuses this for multiplying its rule count; the expansion here
// is linear in the bounds, so it is an ordinary grammar.
TEST(GbnfLlamaCppTest, NestedCountedRepetitionIsLinear) {
  const Grammar g = MustParse("root ::= (((((([^x]*){0,99}){0,99}){0,99}){0,99}){0,99}){0,99}");
  EXPECT_LT(g.rules.size(), 2000u);
  EXPECT_TRUE(Accepts(g, "abc"));
  EXPECT_FALSE(Accepts(g, "axc"));
}

// ---- Grammars written like llama.cpp's grammars/ files --------------------------------

TEST(GbnfGrammarsTest, Json) {
  ExpectLanguage(R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)",
                 {"{}", R"({"a": 1})", R"({"a":[1, -2.5e3, true, null, "x\n\u00e9"], "b": {}})",
                  "{\"k\": \"caf\xC3\xA9\"}\n  "},
                 {"", "[]", R"({"a"})", R"({"a": 01x})", R"({"a": "\q"})", "{\"a\": \"\x01\"}", "{} {}"});
}

TEST(GbnfGrammarsTest, ArithmeticListChess) {
  ExpectLanguage(R"g(root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
)g",
                 {"1+2= 3\n", "(a +b)*c= x1\n2=2\n"}, {"1+2=3", "=3\n", "1+=3\n", "1 + 2=3\n"});
  ExpectLanguage(R"(root ::= item+

# Excludes various line break characters
item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"
)",
                 {"- one\n- two 2\n"}, {"- one", "* one\n", "- a\xE2\x80\xA8" "b\n", "- \n"});
  ExpectLanguage(R"(# Chess moves
root    ::= "1. " move " " move "\n" ([1-9] [0-9]? ". " move " " move "\n")+
move    ::= (pawn | nonpawn | castle) [+#]?
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
pawn    ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBKQR])?
castle  ::= "O-O" "-O"?
)",
                 {"1. e4 e5\n2. Nf3 Nc6\n", "1. d4 d5\n12. O-O-O exd8=Q#\n"},
                 {"1. e4 e5\n", "1. e9 e5\n2. a3 a6\n", "1. e4 e5\n0. a3 a6\n"});
}

TEST(GbnfGrammarsTest, UnicodeLiteralsAndRanges) {
  ExpectLanguage("root ::= \"こんにちは\" [ぁ-ゟ]+ \"🙂\"?", {"こんにちはあ", "こんにちはゟゟ🙂"},
                 {"こんにちは", "こんにちはア", "こんにちは🙂"});
}

TEST(GbnfGrammarsTest, UnproductiveAlternativesAreDropped) {
  ExpectLanguage("root ::= \"a\" | b\nb ::= b \"x\"", {"a"}, {"", "ax"});
  // A surrogate-only class matches nothing (surrogates are never encoded).
  ExpectLanguage("root ::= \"a\" | [\\uD800-\\uDFFF]", {"a"}, {""});
}

// ---- Errors ------------------------------------------------------------------------------

TEST(GbnfErrorTest, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(Error("root ::= \"a\"\nfoo ::= bar"), "undefined rule \"bar\" at line 2:9");
  EXPECT_EQ(Error("root = \"a\""), "expected '::=' after the rule name at line 1:6");
  EXPECT_EQ(Error("my_rule ::= \"a\""), "expected '::=' after the rule name at line 1:3");
  EXPECT_EQ(Error("root ::= \"abc"), "unterminated string literal at line 1:10");
  EXPECT_EQ(Error("root ::= [abc"), "unterminated character class at line 1:10");
  EXPECT_EQ(Error("root ::= \"\\q\""), "unknown escape '\\q' at line 1:11");
  EXPECT_EQ(Error("root ::= \"\\x4\""), "expected 2 hex digits at line 1:11");
  EXPECT_EQ(Error("root ::= \"\\U00110000\""), "code point above U+10FFFF at line 1:11");
  EXPECT_EQ(Error("root ::= \"\\uD800\""), "U+D800 is a surrogate, not a character at line 1:11");
  EXPECT_EQ(Error("root ::= []"), "empty character class at line 1:10");
  EXPECT_EQ(Error("root ::= [z-a]"), "character range is reversed at line 1:11");
  EXPECT_EQ(Error("root ::= \"a\"{,10}"), "expected a number at line 1:14");
  EXPECT_EQ(Error("root ::= \"a\"{,}"), "expected a number at line 1:14");
  EXPECT_EQ(Error("root ::= \"a\"{2 x}"), "expected ',' or '}' at line 1:16");
  EXPECT_EQ(Error("root ::= \"a\"{2,3"), "expected '}' at line 1:17");
  EXPECT_EQ(Error("root ::= \"a\"{3,2}"), "repetition {3,2} has max < min at line 1:13");
  EXPECT_EQ(Error("root ::= *\"a\""), "expected an item before '*' at line 1:10");
  EXPECT_EQ(Error("root ::= \"a\" | +"), "expected an item before '+' at line 1:16");
  EXPECT_EQ(Error("root ::= (\"a\" | ?)"), "expected an item before '?' at line 1:17");
  EXPECT_EQ(Error("root ::= (\"a\"\n\n  \"b\""), "expected ')' at line 3:6");
  EXPECT_EQ(Error("root ::= \"a\")"), "unexpected ')' at line 1:13");
  EXPECT_EQ(Error("root ::= \"a\" foo ::= \"b\""), "unexpected ':' at line 1:18");
  EXPECT_EQ(Error("root ::= <[10]>"), "token references (<...>, !<...>) are not supported at line 1:10");
  EXPECT_EQ(Error("root ::= \"a\"\nroot ::= \"b\""), "rule \"root\" is defined twice at line 2:1");
  // Columns count code points.
  EXPECT_EQ(Error("root ::= \"é\" @"), "unexpected '@' at line 1:14");
}

TEST(GbnfErrorTest, EmptyInvalidAndMissingRoot) {
  EXPECT_EQ(Error(""), "the grammar is empty: it defines no rules");
  EXPECT_EQ(Error("  # only a comment\n\n"), "the grammar is empty: it defines no rules");
  EXPECT_EQ(Error("a ::= \"a\""), "grammar has no root rule");
  EXPECT_EQ(Error("root ::= \"\xFF\""), "invalid UTF-8 at line 1:11");
  EXPECT_EQ(Error("root ::= \"a\" # \xC0\xAF overlong in a comment"), "invalid UTF-8 at line 1:16");
  EXPECT_EQ(Error("root ::= \"\xED\xA0\x80\""), "invalid UTF-8 at line 1:11");  // a surrogate
  EXPECT_EQ(Error(std::string_view("root ::= \"\0\"", 12)), "NUL byte in the grammar at line 1:11");
  EXPECT_EQ(Error("root ::= root \"a\""), "the constraint accepts no output at all");
}

// ---- Hostile inputs: bounded errors, never a crash ----------------------------------------

TEST(GbnfHostileTest, DeepNestingIsBounded) {
  const std::string deep = "root ::= " + std::string(100'000, '(') + "\"a\"" + std::string(100'000, ')');
  EXPECT_EQ(Error(deep), "groups nested more than 200 deep at line 1:210");
  GbnfOptions opts;
  opts.max_depth = 3;
  EXPECT_TRUE(ParseGbnf("root ::= (((\"a\")))", opts).ok());
  EXPECT_EQ(Error("root ::= ((((\"a\"))))", absl::StatusCode::kInvalidArgument, opts),
            "groups nested more than 3 deep at line 1:13");
}

TEST(GbnfHostileTest, RepetitionBoundsAreLimited) {
  using absl::StatusCode;
  EXPECT_EQ(Error("root ::= \"a\"{1,1000000}", StatusCode::kResourceExhausted),
            "a repetition bound of 1000000 is above the limit of 10000 at line 1:13");
  EXPECT_EQ(Error("root ::= \"a\"{99999999999999999999999}", StatusCode::kResourceExhausted),
            "a repetition bound of 1099511627776 is above the limit of 10000 at line 1:13");
  EXPECT_TRUE(ParseGbnf("root ::= \"a\"{10000} \"b\"{0,10000}").ok());
  // Many large repetitions: the builder's bounds (rules, symbols) stop the expansion.
  std::string many = "root ::=";
  for (int i = 0; i < 300; ++i) many += " \"a\"{10000}";
  EXPECT_TRUE(absl::StrContains(Error(many, StatusCode::kResourceExhausted), "symbols"));
  std::string chains = "root ::=";
  for (int i = 0; i < 30; ++i) chains += " [a-z]{0,10000}";
  EXPECT_TRUE(absl::StrContains(Error(chains, StatusCode::kResourceExhausted), "rules"));
}

TEST(GbnfHostileTest, SizeAndLexemeBounds) {
  GbnfOptions opts;
  opts.max_grammar_bytes = 16;
  EXPECT_EQ(Error("root ::= \"aaaaaaaaaaaa\"", absl::StatusCode::kResourceExhausted, opts),
            "the grammar has 23 bytes, above the limit of 16");
  GbnfOptions few;
  few.grammar.max_lexemes = 3;
  EXPECT_TRUE(ParseGbnf("root ::= \"abcabc\"", few).ok());
  EXPECT_EQ(ParseGbnf("root ::= \"abcd\"", few).status().code(), absl::StatusCode::kResourceExhausted);
  // A long literal is one symbol per code point.
  const Grammar g = MustParse("root ::= \"" + std::string(200'000, 'x') + "\"");
  EXPECT_EQ(g.rules[0].rhs.size(), 200'000u);
}

}  // namespace
}  // namespace llmserve::constraint
