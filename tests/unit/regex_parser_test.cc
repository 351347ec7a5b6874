// constraint/regex_parser: parsing, lowering to UTF-8 and to JSON string contents, and the
// reference matcher. The golden cases (tests/golden/regex/regex_cases.json) come from
// Python's `re` on ECMA-262-equivalent translations of the patterns (make_regex_cases.py
// says how); the rest are refusals, bounds and properties of the JSON encoding.
#include "constraint/regex_parser.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace llmserve::constraint {
namespace {

nlohmann::json LoadJson(const std::string& name) {
  std::ifstream in(std::string(LLMSERVE_SOURCE_DIR) + "/tests/golden/regex/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

// The inside of a JSON string literal for s, as a serializer writes it by default.
std::string JsonMinimal(const std::string& s) {
  std::string quoted = nlohmann::json(s).dump();
  return quoted.substr(1, quoted.size() - 2);
}

// Every control as \u00XX (upper-case hex), `/` as \/.
std::string JsonVerbose(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04X", c);
      out += buf;
    } else if (c == '"' || c == '\\' || c == '/') {
      out += '\\';
      out += static_cast<char>(c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// Non-ASCII as \uXXXX (which kJsonString deliberately does not accept).
std::string JsonAsciiOnly(const std::string& s) {
  std::string quoted = nlohmann::json(s).dump(-1, ' ', /*ensure_ascii=*/true);
  return quoted.substr(1, quoted.size() - 2);
}

bool HasNonAscii(const std::string& s) {
  for (unsigned char c : s) {
    if (c >= 0x80) return true;
  }
  return false;
}

TEST(RegexParserGolden, PythonReferenceCases) {
  nlohmann::json all = LoadJson("regex_cases.json");
  size_t patterns = 0, strings = 0;
  for (const auto& c : all["cases"]) {
    const std::string pattern = c["pattern"];
    RegexParseOptions opts;
    opts.search = c["search"];
    RegexPool pool;
    absl::StatusOr<RegexId> utf8 = CompileRegex(pattern, opts, RegexEncoding::kUtf8, pool);
    absl::StatusOr<RegexId> json = CompileRegex(pattern, opts, RegexEncoding::kJsonString, pool);
    ASSERT_TRUE(utf8.ok()) << pattern << ": " << utf8.status();
    ASSERT_TRUE(json.ok()) << pattern << ": " << json.status();
    ++patterns;
    for (bool expected : {true, false}) {
      for (const std::string s : c[expected ? "match" : "nomatch"]) {
        ++strings;
        const std::string where = "pattern " + nlohmann::json(pattern).dump() +
                                  (opts.search ? " (search)" : "") + " on " + nlohmann::json(s).dump();
        EXPECT_EQ(RegexFullMatch(pool, *utf8, s), expected) << where;
        EXPECT_EQ(RegexFullMatch(pool, *json, JsonMinimal(s)), expected) << where << " as JSON";
        EXPECT_EQ(RegexFullMatch(pool, *json, JsonVerbose(s)), expected) << where << " as verbose JSON";
        if (HasNonAscii(s)) {
          EXPECT_FALSE(RegexFullMatch(pool, *json, JsonAsciiOnly(s))) << where << " as \\u JSON";
        }
      }
    }
  }
  EXPECT_GT(patterns, 400u);
  EXPECT_GT(strings, 10000u);
}

// Patterns from the real schemas that the generator's translator refused: ours must too.
TEST(RegexParserGolden, RefusedSchemaPatterns) {
  nlohmann::json all = LoadJson("regex_cases.json");
  ASSERT_FALSE(all["refused"].empty());
  for (const std::string p : all["refused"]) {
    absl::StatusOr<CharRegex> re = ParseRegex(p, {.search = true});
    EXPECT_EQ(re.status().code(), absl::StatusCode::kInvalidArgument) << p;
  }
}

struct Refusal {
  std::string pattern;
  absl::StatusCode code;
  std::string message;  // a substring of the status message
};

TEST(RegexParser, RefusesWithConstructAndOffset) {
  const absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;
  const std::vector<Refusal> refusals = {
      {"abc(?=d)", kInvalid, "regex: lookahead (?=...) at offset 3 is not supported"},
      {"a(?!b)", kInvalid, "negative lookahead (?!...) at offset 1"},
      {"(?<=a)b", kInvalid, "lookbehind (?<=...) at offset 0"},
      {"(?<!a)b", kInvalid, "negative lookbehind (?<!...) at offset 0"},
      {"(a)\\1", kInvalid, "backreference \\1 at offset 3"},
      {"(?<n>a)\\k<n>", kInvalid, "backreference \\k<name> at offset 7"},
      {"(?P<n>a)(?P=n)", kInvalid, "backreference (?P=name) at offset 8"},
      {"a\\bc", kInvalid, "word boundary \\b at offset 1"},
      {"\\Ba", kInvalid, "word boundary \\B at offset 0"},
      {"a^b", kInvalid, "anchor ^ at offset 1 is not supported"},
      {"a$b", kInvalid, "anchor $ at offset 1 is not supported"},
      {"(^a)*", kInvalid, "anchor ^ at offset 1"},
      {"x(^a)", kInvalid, "anchor ^ at offset 2"},
      {"^^a", kInvalid, "anchor ^ at offset 1"},
      {"(?i)abc", kInvalid, "inline flags (?i...) at offset 0"},
      {"a(?m:b)", kInvalid, "inline flags (?m...) at offset 1"},
      {"(?#comment)", kInvalid, "group syntax (?# at offset 0"},
      {"(?>a)", kInvalid, "group syntax (?> at offset 0"},
      {"\\p{L}", kInvalid, "Unicode property escape \\p{...} at offset 0"},
      {"\\P{L}", kInvalid, "Unicode property escape \\P{...}"},
      {"\\A", kInvalid, "anchor \\A at offset 0"},
      {"a\\Z", kInvalid, "anchor \\Z at offset 1"},
      {"\\cA", kInvalid, "control escape"},
      {"\\a", kInvalid, "unknown escape \\a at offset 0"},
      {"\\q", kInvalid, "unknown escape \\q"},
      {"\\01", kInvalid, "octal escape"},
      {"\\x4", kInvalid, "escape \\x at offset 0 needs two hex digits"},
      {"\\u12", kInvalid, "needs four hex digits"},
      {"\\u{110000}", kInvalid, "needs 1-6 hex digits up to 10FFFF"},
      {"\\u{}", kInvalid, "\\u{...}"},
      {"ab\\", kInvalid, "trailing backslash at offset 2"},
      {"(ab", kInvalid, "unbalanced parenthesis: ( at offset 0 is not closed"},
      {"a(b(c)", kInvalid, "( at offset 1 is not closed"},
      {"ab)", kInvalid, "unbalanced parenthesis: ) at offset 2 has no matching ("},
      {"[ab", kInvalid, "unterminated character class [ at offset 0"},
      {"x[a\\]", kInvalid, "unterminated character class [ at offset 1"},
      {"[]a]", kInvalid, "a class starting with ]"},
      {"[]", kInvalid, "a class starting with ]"},
      {"[^]", kInvalid, "a class starting with ]"},
      {"[z-a]", kInvalid, "character range z-a at offset 1 is out of order"},
      {"[\\w-z]", kInvalid, "class escape"},
      {"[a-\\d]", kInvalid, "class escape"},
      {"*a", kInvalid, "quantifier * at offset 0 has nothing to repeat"},
      {"a|+", kInvalid, "quantifier + at offset 2 has nothing to repeat"},
      {"(?)", kInvalid, "group syntax (?) at offset 0"},
      {"(*)", kInvalid, "quantifier * at offset 1 has nothing to repeat"},
      {"{2}", kInvalid, "quantifier { at offset 0 has nothing to repeat"},
      {"a**", kInvalid, "quantifier * at offset 2 has nothing to repeat"},
      {"a{2}{3}", kInvalid, "quantifier { at offset 4"},
      {"a*+", kInvalid, "quantifier + at offset 2"},
      {"a??+", kInvalid, "quantifier + at offset 3"},
      {"^*", kInvalid, "follows an anchor"},
      {"a{3,2}", kInvalid, "repetition {n,m} at offset 1 has n > m"},
      {"a{,3}", kInvalid, "repetition {,n}"},
      {"a{,}", kInvalid, "repetition {,n}"},
      {"(?<1a>x)", kInvalid, "invalid character in a group name at offset 3"},
      {"(?<a>x)(?<a>y)", kInvalid, "duplicate group name \"a\" at offset 7"},
      {"(?<ab", kInvalid, "unterminated group name"},
      {"(?<>a)", kInvalid, "empty group name"},
      {"ok\xff", kInvalid, "regex: invalid UTF-8 at offset 2"},
      {"\xc0\xaf", kInvalid, "invalid UTF-8 at offset 0"},          // overlong
      {"a\xed\xa0\x80", kInvalid, "invalid UTF-8 at offset 1"},     // encoded surrogate
      {"\xf4\x90\x80\x80", kInvalid, "invalid UTF-8 at offset 0"},  // above 10FFFF
      {"\xe2\x82", kInvalid, "invalid UTF-8 at offset 0"},          // truncated
  };
  for (const Refusal& r : refusals) {
    absl::StatusOr<CharRegex> re = ParseRegex(r.pattern);
    ASSERT_FALSE(re.ok()) << r.pattern;
    EXPECT_EQ(re.status().code(), r.code) << r.pattern << ": " << re.status();
    EXPECT_NE(re.status().message().find(r.message), absl::string_view::npos)
        << r.pattern << ": " << re.status() << " (expected \"" << r.message << "\")";
  }
}

TEST(RegexParser, Bounds) {
  // Pattern size.
  RegexParseOptions small;
  small.max_pattern_bytes = 8;
  EXPECT_TRUE(ParseRegex("abcdefgh", small).ok());
  absl::StatusOr<CharRegex> big = ParseRegex("abcdefghi", small);
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(big.status().message().find("9 bytes, above the limit of 8"), absl::string_view::npos)
      << big.status();

  // Group depth: the default 200 levels pass, 201 do not, and a million never reach the stack's end.
  auto nested = [](int n) { return std::string(n, '(') + "a" + std::string(n, ')'); };
  EXPECT_TRUE(ParseRegex(nested(200)).ok());
  EXPECT_EQ(ParseRegex(nested(201)).status().code(), absl::StatusCode::kResourceExhausted);
  RegexParseOptions long_patterns;
  long_patterns.max_pattern_bytes = 2'000'000;
  EXPECT_EQ(ParseRegex(std::string(1'000'000, '('), long_patterns).status().code(),
            absl::StatusCode::kResourceExhausted);
  RegexParseOptions shallow;
  shallow.max_depth = 3;
  EXPECT_TRUE(ParseRegex("((a)(b(c)))", shallow).ok());
  EXPECT_EQ(ParseRegex("((((a))))", shallow).status().code(), absl::StatusCode::kResourceExhausted);

  // Counted repetitions past the pool's max_repeat: the pool's RESOURCE_EXHAUSTED.
  for (const char* p :
       {"a{10001}", "a{2,10001}", "a{10001,}", "a{99999999999999999999}", "(ab){1,4294967295}"}) {
    absl::StatusOr<CharRegex> re = ParseRegex(p);
    ASSERT_TRUE(re.ok()) << p << ": " << re.status();
    RegexPool pool;
    absl::StatusOr<RegexId> id = LowerRegex(*re, RegexEncoding::kUtf8, pool);
    EXPECT_EQ(id.status().code(), absl::StatusCode::kResourceExhausted) << p;
  }
  RegexPool ok_pool;
  EXPECT_TRUE(CompileRegex("a{10000}", {}, RegexEncoding::kUtf8, ok_pool).ok());

  // The pool's node bound.
  RegexPool tiny(RegexLimits{.max_nodes = 20, .max_repeat = 100});
  absl::StatusOr<RegexId> id =
      CompileRegex("[^a]bcdefghijklmnopqrstuvwxyz", {}, RegexEncoding::kJsonString, tiny);
  EXPECT_EQ(id.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(RegexParser, DotAndClassesFollowEcma) {
  RegexPool pool;
  RegexId dot = *CompileRegex(".", {}, RegexEncoding::kUtf8, pool);
  for (const char* s : {"a", "\t", "\x7f", "\xc2\xa0", "\xf0\x9f\x98\x80", "\x00"}) {
    EXPECT_TRUE(RegexFullMatch(pool, dot, std::string(s, s[0] ? strlen(s) : 1))) << s;
  }
  for (const char* s : {"\n", "\r", "\xe2\x80\xa8", "\xe2\x80\xa9", "", "ab"})
    EXPECT_FALSE(RegexFullMatch(pool, dot, s)) << s;
  RegexId space = *CompileRegex("\\s", {}, RegexEncoding::kUtf8, pool);
  for (const char* s :
       {" ", "\t", "\n", "\v", "\f", "\r", "\xc2\xa0", "\xef\xbb\xbf", "\xe3\x80\x80", "\xe2\x80\x8a"}) {
    EXPECT_TRUE(RegexFullMatch(pool, space, s)) << s;
  }
  for (const char* s : {"a", "\xe2\x80\x8b", "\x1c"}) EXPECT_FALSE(RegexFullMatch(pool, space, s)) << s;
  RegexId word = *CompileRegex("\\w+", {}, RegexEncoding::kUtf8, pool);
  EXPECT_TRUE(RegexFullMatch(pool, word, "az_AZ09"));
  EXPECT_FALSE(RegexFullMatch(pool, word, "\xc3\xa9"));  // é: \w is ASCII
  RegexId digit = *CompileRegex("\\d", {}, RegexEncoding::kUtf8, pool);
  EXPECT_FALSE(RegexFullMatch(pool, digit, "\xd9\xa3"));  // ARABIC-INDIC THREE
  // Search pads with every code point, line terminators included.
  RegexId search = *CompileRegex("b", {.search = true}, RegexEncoding::kUtf8, pool);
  EXPECT_TRUE(RegexFullMatch(pool, search,
                             "\n\r\xe2\x80\xa8"
                             "b\n"));
  // A lone surrogate escape matches nothing (no UTF-8 text holds one); a pair is one code point.
  RegexId lone = *CompileRegex("x|\\uD800", {}, RegexEncoding::kUtf8, pool);
  EXPECT_TRUE(RegexFullMatch(pool, lone, "x"));
  RegexId pair = *CompileRegex("\\uD83D\\uDE00", {}, RegexEncoding::kUtf8, pool);
  EXPECT_TRUE(RegexFullMatch(pool, pair, "\xf0\x9f\x98\x80"));
}

TEST(RegexParser, AnchorsInSearchMode) {
  struct Case {
    const char* pattern;
    const char* text;
    bool match;
  };
  const Case cases[] = {
      {"^a|b$", "ax", true},      {"^a|b$", "xb", true},     {"^a|b$", "xa", false},
      {"^a|b$", "bx", false},     {"(^a|b)c", "acx", true},  {"(^a|b)c", "xbc", true},
      {"(^a|b)c", "xac", false},  {"^$", "", true},          {"^$", "x", false},
      {"^", "anything", true},    {"$", "", true},           {"a(b$|c)", "xab", true},
      {"a(b$|c)", "xabx", false}, {"a(b$|c)", "xacx", true},
  };
  for (const Case& c : cases) {
    RegexPool pool;
    absl::StatusOr<RegexId> id = CompileRegex(c.pattern, {.search = true}, RegexEncoding::kUtf8, pool);
    ASSERT_TRUE(id.ok()) << c.pattern << ": " << id.status();
    EXPECT_EQ(RegexFullMatch(pool, *id, c.text), c.match) << c.pattern << " on " << c.text;
  }
}

TEST(RegexParser, JsonStringEscapes) {
  struct Case {
    const char* pattern;
    std::vector<std::string> yes, no;
  };
  const std::vector<Case> cases = {
      {"\"", {"\\\""}, {"\"", "\\u0022"}},
      {"\\\\", {"\\\\"}, {"\\", "\\u005c"}},
      {"/", {"/", "\\/"}, {"\\u002f"}},
      {"\\n", {"\\n", "\\u000a", "\\u000A"}, {"\n", "\\N"}},
      {"\\t\\r\\f\\x08", {"\\t\\r\\f\\b", "\\u0009\\u000d\\u000C\\u0008"}, {"\t\r\f\b"}},
      {"\\x01\\x1f\\x00", {"\\u0001\\u001f\\u0000", "\\u0001\\u001F\\u0000"}, {"\x01\x1f", "\\1"}},
      {"\\x7f", {"\x7f"}, {"\\u007f"}},
      {"é", {"\xc3\xa9"}, {"\\u00e9"}},
      {"[\\x00-\\x7f]", {"a", "\\n", "\\u0000", "\\\"", "\\\\", "\\/", "/"}, {"\n", "\"", "\\", "\\u0041"}},
      {"[^a]", {"b", "\\\"", "\\u0001", "\xf0\x9f\x98\x80"}, {"a", "\\a", "\\u0061"}},
  };
  for (const Case& c : cases) {
    RegexPool pool;
    absl::StatusOr<RegexId> id = CompileRegex(c.pattern, {}, RegexEncoding::kJsonString, pool);
    ASSERT_TRUE(id.ok()) << c.pattern << ": " << id.status();
    for (const std::string& s : c.yes) EXPECT_TRUE(RegexFullMatch(pool, *id, s)) << c.pattern << " on " << s;
    for (const std::string& s : c.no) EXPECT_FALSE(RegexFullMatch(pool, *id, s)) << c.pattern << " on " << s;
  }
}

std::string Hex(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    char buf[4];
    snprintf(buf, sizeof buf, "%02x ", c);
    out += buf;
  }
  return out;
}

// Decodes the inside of a JSON string literal under the rules kJsonString documents:
// nullopt if it is not valid JSON, not valid UTF-8, or uses \uXXXX beyond U+001F.
std::optional<std::string> DecodeJsonContent(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == '"') return std::nullopt;
    if (c != '\\') {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    if (i + 1 >= s.size()) return std::nullopt;
    const char e = s[i + 1];
    const std::string simple = "\"\\/bfnrt", value = "\"\\/\b\f\n\r\t";
    if (auto k = simple.find(e); k != std::string::npos) {
      out.push_back(value[k]);
      i += 2;
      continue;
    }
    if (e != 'u' || i + 6 > s.size()) return std::nullopt;
    unsigned v = 0;
    for (size_t k = i + 2; k < i + 6; ++k) {
      const char h = s[k];
      int d = (h >= '0' && h <= '9')   ? h - '0'
              : (h >= 'a' && h <= 'f') ? h - 'a' + 10
              : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                       : -1;
      if (d < 0) return std::nullopt;
      v = v * 16 + static_cast<unsigned>(d);
    }
    if (v >= 0x20) return std::nullopt;
    out.push_back(static_cast<char>(v));
    i += 6;
  }
  // UTF-8 validity via nlohmann (it throws on invalid UTF-8 when dumping).
  try {
    (void)nlohmann::json(out).dump();
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  return out;
}

// For random byte strings: the JSON-string regex matches exactly the encodings whose
// decoded value the UTF-8 regex matches.
TEST(RegexParser, JsonEncodingAgreesWithDecoding) {
  const std::vector<std::string> patterns = {
      ".*",      "[^\"]*", "[\\s\\S]*",           "\\d*u?", "[^a]*", "a[\\x00-\\x1f]*", "(?:\\\\|\"|/)*",
      "[^\\n]*", "\\w*é?", "[\\x00-\\x10]{0,3}F?"};
  const std::vector<std::string> alphabet = {"\\", "\"", "u", "0",    "1",    "a",        "F",
                                             "f",  "n",  "/", "\x01", "\x1f", "\xc3\xa9", "\xc3",
                                             "b",  "t",  " ", "\n",   "00",   "\\u00"};
  std::mt19937 rng(12345);
  for (const std::string& p : patterns) {
    RegexPool pool;
    RegexId utf8 = *CompileRegex(p, {}, RegexEncoding::kUtf8, pool);
    RegexId json = *CompileRegex(p, {}, RegexEncoding::kJsonString, pool);
    int matched = 0;
    for (int n = 0; n < 4000; ++n) {
      std::string s;
      const int len = static_cast<int>(rng() % 7);
      for (int k = 0; k < len; ++k) s += alphabet[rng() % alphabet.size()];
      std::optional<std::string> decoded = DecodeJsonContent(s);
      const bool expected = decoded && RegexFullMatch(pool, utf8, *decoded);
      EXPECT_EQ(RegexFullMatch(pool, json, s), expected) << p << " on " << Hex(s);
      matched += expected;
    }
    EXPECT_GT(matched, 0) << p;
  }
}

// The matcher stays polynomial where backtracking blows up.
TEST(RegexFullMatch, NoExponentialBlowUp) {
  struct Case {
    const char* pattern;
    std::string text;
    bool match;
  };
  const Case cases[] = {
      {"(x+x+)+y", std::string(300, 'x'), false},
      {"(x+x+)+y", std::string(300, 'x') + "y", true},
      {"(a|aa)*b", std::string(300, 'a'), false},
      {"((a{0,9}){0,9}){0,9}b", std::string(120, 'a') + "b", true},
      {"((a{0,9}){0,9}){0,9}b", std::string(730, 'a') + "b", false},
      {"(.*a){12}", std::string(200, 'a'), true},
      {"(a?){50}a{50}", std::string(50, 'a'), true},
  };
  // A blow-up would not finish (ctest's timeout fails it); nothing here times the run.
  for (const Case& c : cases) {
    RegexPool pool;
    RegexId id = *CompileRegex(c.pattern, {}, RegexEncoding::kUtf8, pool);
    EXPECT_EQ(RegexFullMatch(pool, id, c.text), c.match) << c.pattern;
  }
}

TEST(RegexFullMatch, DirectPoolExpressions) {
  RegexPool pool;
  RegexId ab = pool.Literal("ab");
  EXPECT_TRUE(RegexFullMatch(pool, ab, "ab"));
  EXPECT_FALSE(RegexFullMatch(pool, ab, "abc"));
  EXPECT_FALSE(RegexFullMatch(pool, pool.Nothing(), ""));
  EXPECT_TRUE(RegexFullMatch(pool, pool.Empty(), ""));
  RegexId rep = pool.Repeat(pool.Alt({pool.Literal("ab"), pool.Empty()}), 3, 5);  // (ab|){3,5}
  EXPECT_TRUE(RegexFullMatch(pool, rep, ""));
  EXPECT_TRUE(RegexFullMatch(pool, rep, "ababababab"));
  EXPECT_FALSE(RegexFullMatch(pool, rep, "abababababab"));
  EXPECT_FALSE(RegexFullMatch(pool, 1'000'000, ""));  // an id outside the pool
}

TEST(RegexParser, ParseTreeShape) {
  absl::StatusOr<CharRegex> re = ParseRegex("ab");
  ASSERT_TRUE(re.ok());
  EXPECT_EQ(re->kind, CharRegex::Kind::kConcat);
  ASSERT_EQ(re->children.size(), 2u);
  EXPECT_EQ(re->children[0].ranges, (std::vector<std::pair<uint32_t, uint32_t>>{{'a', 'a'}}));
  re = ParseRegex("[^\\x00-\\x{10}]");  // not an escape we know as \x{..}: refused
  EXPECT_FALSE(re.ok());
  re = ParseRegex("[^\\u0000-\\u{10FFFE}]");
  ASSERT_TRUE(re.ok()) << re.status();
  EXPECT_EQ(re->ranges, (std::vector<std::pair<uint32_t, uint32_t>>{{0x10FFFF, 0x10FFFF}}));
  re = ParseRegex("a{2,5}?");
  ASSERT_TRUE(re.ok());
  EXPECT_EQ(re->kind, CharRegex::Kind::kRepeat);
  EXPECT_EQ(re->min, 2u);
  EXPECT_EQ(re->max, 5u);
  re = ParseRegex("");
  ASSERT_TRUE(re.ok());
  EXPECT_EQ(re->kind, CharRegex::Kind::kEmpty);
}

}  // namespace
}  // namespace llmserve::constraint
