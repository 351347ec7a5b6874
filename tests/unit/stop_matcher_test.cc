// StopStringMatcher: matches across pushes, false starts, overlapping prefixes, earliest
// match, UTF-8 boundaries, Flush, and a randomized comparison with std::string::find.
#include "model/stop_matcher.h"

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/tokenizer/utf8.h"

namespace llmserve {
namespace {

// Pushes each piece; returns the concatenated release, plus Flush when nothing matched.
struct Pushed {
  std::string text;
  std::optional<size_t> matched;
  std::vector<std::string> releases;
};

Pushed PushAll(StopStringMatcher& m, const std::vector<std::string>& pieces, bool flush = true) {
  Pushed run;
  for (const std::string& p : pieces) {
    StopStringMatcher::Result r = m.Push(p);
    run.releases.push_back(r.release);
    run.text += r.release;
    if (r.matched && !run.matched) run.matched = r.matched;
  }
  if (flush && !run.matched) {
    run.text += m.Flush();
    run.matched = m.matched_index();
  }
  return run;
}

TEST(StopMatcherTest, HeaderExample) {
  StopStringMatcher m({"Hello!"});
  StopStringMatcher::Result r = m.Push("Hel");
  EXPECT_EQ(r.release, "");
  EXPECT_FALSE(r.matched);
  EXPECT_EQ(m.held_bytes(), 3u);
  r = m.Push("lo ");
  EXPECT_EQ(r.release, "Hello ");
  EXPECT_EQ(m.held_bytes(), 0u);
  r = m.Push("Hel");
  EXPECT_EQ(r.release, "");
  r = m.Push("lo!x");
  EXPECT_EQ(r.release, "");
  ASSERT_TRUE(r.matched);
  EXPECT_EQ(*r.matched, 0u);
  EXPECT_TRUE(m.matched());
}

TEST(StopMatcherTest, SpansTwoAndThreePushes) {
  {
    StopStringMatcher m({"STOP"});
    Pushed run = PushAll(m, {"abc ST", "OP tail"});
    EXPECT_EQ(run.text, "abc ");
    EXPECT_EQ(run.matched, 0u);
  }
  {
    StopStringMatcher m({"<|end|>"});
    Pushed run = PushAll(m, {"x <|", "en", "d|> more"});
    EXPECT_EQ(run.text, "x ");
    EXPECT_EQ(run.releases, (std::vector<std::string>{"x ", "", ""}));
    EXPECT_EQ(run.matched, 0u);
  }
}

TEST(StopMatcherTest, FalseStartReleasesHeldText) {
  StopStringMatcher m({"Hello"});
  EXPECT_EQ(m.Push("Hel").release, "");
  StopStringMatcher::Result r = m.Push("p");
  EXPECT_EQ(r.release, "Help");
  EXPECT_FALSE(r.matched);
  EXPECT_EQ(m.held_bytes(), 0u);
}

TEST(StopMatcherTest, PartialFalseStartKeepsTheStillPossibleSuffix) {
  // "aab": after "aa" the suffix "a" still starts "ab".
  StopStringMatcher m({"ab"});
  EXPECT_EQ(m.Push("a").release, "");
  EXPECT_EQ(m.Push("a").release, "a");
  EXPECT_EQ(m.held_bytes(), 1u);
  StopStringMatcher::Result r = m.Push("b");
  EXPECT_EQ(r.release, "");
  EXPECT_EQ(r.matched, 0u);
}

TEST(StopMatcherTest, OverlappingPrefixes) {
  {
    StopStringMatcher m({"abcd", "abx", "bc"});
    // "ab" may start "abcd" or "abx".
    EXPECT_EQ(m.Push("zab").release, "z");
    // "bc" matched at 2, but "abc" may still become "abcd" at 1, which is earlier: wait.
    StopStringMatcher::Result r = m.Push("c");
    EXPECT_EQ(r.release, "");
    EXPECT_FALSE(r.matched);
    r = m.Push("d");
    EXPECT_EQ(r.release, "");
    EXPECT_EQ(r.matched, 0u);
  }
  {
    StopStringMatcher m({"abcd", "abx", "bc"});
    EXPECT_EQ(m.Push("zab").release, "z");
    EXPECT_FALSE(m.Push("c").matched);
    StopStringMatcher::Result r = m.Push("e");  // "abcd" is out: "bc" stands
    EXPECT_EQ(r.release, "a");
    EXPECT_EQ(r.matched, 2u);
  }
  {
    // The stream ends while "bc" waits on "abcd": Flush cuts before "bc".
    StopStringMatcher m({"abcd", "bc"});
    EXPECT_EQ(m.Push("zabc").release, "z");
    EXPECT_FALSE(m.matched());
    EXPECT_EQ(m.Flush(), "a");
    EXPECT_TRUE(m.matched());
    EXPECT_EQ(m.matched_index(), 1u);
  }
  {
    // Same position: a stop listed earlier that may still complete wins over a match.
    StopStringMatcher m({"abc", "ab"});
    EXPECT_FALSE(m.Push("xab").matched);
    StopStringMatcher::Result r = m.Push("c");
    EXPECT_EQ(r.matched, 0u);
    StopStringMatcher m2({"abc", "ab"});
    EXPECT_EQ(m2.Push("xab").release, "x");
    r = m2.Push("d");
    EXPECT_EQ(r.release, "");
    EXPECT_EQ(r.matched, 1u);
  }
}

TEST(StopMatcherTest, EarliestMatchWinsThenFirstListed) {
  {
    StopStringMatcher m({"world", "lo w"});
    Pushed run = PushAll(m, {"hello world"});
    EXPECT_EQ(run.text, "hel");
    EXPECT_EQ(run.matched, 1u);
  }
  {
    StopStringMatcher m({"abc", "ab"});  // same position: first listed wins
    Pushed run = PushAll(m, {"xabc"});
    EXPECT_EQ(run.text, "x");
    EXPECT_EQ(run.matched, 0u);
  }
  {
    StopStringMatcher m({"ab", "abc"});
    Pushed run = PushAll(m, {"xabc"});
    EXPECT_EQ(run.text, "x");
    EXPECT_EQ(run.matched, 0u);
  }
}

TEST(StopMatcherTest, MatchAtVeryStart) {
  StopStringMatcher m({"\n\n"});
  StopStringMatcher::Result r = m.Push("\n\nrest");
  EXPECT_EQ(r.release, "");
  EXPECT_EQ(r.matched, 0u);
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopMatcherTest, NothingReleasedAfterMatch) {
  StopStringMatcher m({"END"});
  Pushed run = PushAll(m, {"aEND", "more text", "END"}, /*flush=*/false);
  EXPECT_EQ(run.text, "a");
  EXPECT_EQ(run.releases[1], "");
  EXPECT_EQ(run.releases[2], "");
  EXPECT_EQ(m.Flush(), "");
  EXPECT_EQ(m.held_bytes(), 0u);
}

TEST(StopMatcherTest, FlushReleasesEverythingHeld) {
  StopStringMatcher m({"Hello!"});
  EXPECT_EQ(m.Push("say Hello").release, "say ");
  EXPECT_EQ(m.held_bytes(), 5u);
  EXPECT_EQ(m.Flush(), "Hello");
  EXPECT_EQ(m.held_bytes(), 0u);
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopMatcherTest, NoStopsReleasesImmediately) {
  StopStringMatcher m({});
  EXPECT_EQ(m.Push("abc").release, "abc");
  StopStringMatcher e({""});  // empty stops are ignored
  EXPECT_EQ(e.Push("abc").release, "abc");
  EXPECT_FALSE(e.matched());
}

TEST(StopMatcherTest, MultiByteAroundTheBoundary) {
  // Stop "éé" (C3 A9 C3 A9): text "aé" must hold back "é", but release "a" whole.
  StopStringMatcher m({"\xC3\xA9\xC3\xA9"});
  StopStringMatcher::Result r = m.Push("a\xC3\xA9");
  EXPECT_EQ(r.release, "a");
  EXPECT_EQ(m.held_bytes(), 2u);
  r = m.Push("\xC3\xA8");  // "è" shares the lead byte C3 with "é" but not the char
  EXPECT_EQ(r.release, "\xC3\xA9\xC3\xA8");
  r = m.Push("\xE7\x8C\xAB\xC3\xA9\xC3\xA9z");  // "猫éé"
  EXPECT_EQ(r.release, "\xE7\x8C\xAB");
  EXPECT_EQ(r.matched, 0u);
}

TEST(StopMatcherTest, IncompleteCharacterIsHeldBack) {
  // A push that ends inside a character (raw bytes) never releases half of it.
  StopStringMatcher m({"zz"});
  StopStringMatcher::Result r = m.Push("ab\xE7\x8C");
  EXPECT_EQ(r.release, "ab");
  r = m.Push("\xAB!");
  EXPECT_EQ(r.release, "\xE7\x8C\xAB!");
}

TEST(StopMatcherTest, StopStartingMidCharacterIsHandled) {
  // Invalid stop (a continuation byte first): the held suffix still starts at the
  // character's lead byte, so released text stays whole characters.
  StopStringMatcher m({"\xA9x"});
  StopStringMatcher::Result r = m.Push("a\xC3\xA9");
  EXPECT_EQ(r.release, "a");
  EXPECT_EQ(m.held_bytes(), 2u);
  r = m.Push("x");
  EXPECT_EQ(r.release, "\xC3");  // the match itself cuts the character: nothing better exists
  EXPECT_EQ(r.matched, 0u);
}

// Reference: text cut before the earliest occurrence of any stop (first listed on ties).
std::pair<std::string, std::optional<size_t>> Reference(const std::string& text,
                                                        const std::vector<std::string>& stops) {
  size_t best = std::string::npos;
  std::optional<size_t> which;
  for (size_t i = 0; i < stops.size(); ++i) {
    const size_t pos = text.find(stops[i]);
    if (pos < best) {
      best = pos;
      which = i;
    }
  }
  return {which ? text.substr(0, best) : text, which};
}

TEST(StopMatcherTest, RandomAgainstFindReference) {
  std::mt19937 rng(1234);
  // A small alphabet (with a two-byte and a three-byte character) makes matches and
  // partial matches frequent.
  const std::vector<std::string> alphabet = {"a", "b", "c", "\xC3\xA9", "\xE7\x8C\xAB", " "};
  auto random_string = [&](int min_chars, int max_chars) {
    std::string s;
    const int n = std::uniform_int_distribution<int>(min_chars, max_chars)(rng);
    for (int i = 0; i < n; ++i) s += alphabet[rng() % alphabet.size()];
    return s;
  };
  int matched = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<std::string> stops;
    const int nstops = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int i = 0; i < nstops; ++i) stops.push_back(random_string(1, 4));
    const std::string text = random_string(0, 40);
    // Split at random byte offsets (possibly inside characters).
    std::vector<std::string> pieces;
    for (size_t pos = 0; pos < text.size();) {
      const size_t len = std::min<size_t>(text.size() - pos, 1 + rng() % 6);
      pieces.push_back(text.substr(pos, len));
      pos += len;
    }
    StopStringMatcher m(stops);
    Pushed run = PushAll(m, pieces);
    const auto [want, which] = Reference(text, stops);
    std::string where = "iter " + std::to_string(iter) + " text '" + text + "' stops";
    for (const std::string& s : stops) where += " '" + s + "'";
    for (const std::string& s : pieces) where += " |" + s;
    ASSERT_EQ(run.text, want) << where;
    ASSERT_EQ(run.matched, which) << "iter " << iter;
    if (which) ++matched;
    // Pieces were cut at arbitrary bytes, yet every release is whole characters.
    for (const std::string& r : run.releases) {
      ASSERT_TRUE(utf8::IsValid(r)) << "iter " << iter << " text '" << text << "'";
    }
  }
  EXPECT_GT(matched, 300);  // the test exercises matches, not only misses
}

TEST(StopMatcherTest, RandomPiecesOnCharacterBoundariesReleaseWholeCharacters) {
  std::mt19937 rng(99);
  const std::vector<std::string> alphabet = {"x", "\xC3\xA9", "\xE7\x8C\xAB", "\xF0\x9F\x98\x80"};
  for (int iter = 0; iter < 1000; ++iter) {
    StopStringMatcher m({"\xC3\xA9\xC3\xA9x", "\xF0\x9F\x98\x80\xE7\x8C\xAB"});
    for (int p = 0; p < 20 && !m.matched(); ++p) {
      std::string piece;
      for (int c = 0, n = 1 + rng() % 3; c < n; ++c) piece += alphabet[rng() % alphabet.size()];
      StopStringMatcher::Result r = m.Push(piece);
      ASSERT_TRUE(utf8::IsValid(r.release)) << "iter " << iter;
    }
  }
}

}  // namespace
}  // namespace llmserve
