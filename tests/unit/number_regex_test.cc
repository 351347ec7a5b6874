// constraint/number_regex: for random bounds, many integers and decimals (in several
// spellings) are matched with RegexFullMatch and compared with the numeric comparison.
#include "constraint/number_regex.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "constraint/regex_parser.h"

namespace llmserve::constraint {
namespace {

using Int = __int128;

std::string IntText(Int v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  std::string s;
  for (Int m = neg ? -v : v; m > 0; m /= 10)
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(m % 10)));
  return neg ? "-" + s : s;
}

// Spellings that are never integers in our language, whatever the bounds.
const char* const kNotIntegers[] = {"",    "-",  "-0", "00",  "01",  "+1", "1.0",
                                    "1e2", " 1", "1 ", "--1", "0x1", "-00"};

TEST(IntegerRangeRegex, RandomBoundsAgainstComparison) {
  std::mt19937_64 rng(1);
  const int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> interesting = {0,     1,     -1,     9,         10,   11,       -9,   -10,
                                      -11,   99,    100,    101,       -100, 999,      1000, 1001,
                                      -1000, 12345, -12345, 1'000'000, kMin, kMin + 1, kMax, kMax - 1};
  auto pick = [&]() -> std::optional<int64_t> {
    switch (rng() % 6) {
      case 0: return std::nullopt;
      case 1: return interesting[rng() % interesting.size()];
      case 2: return static_cast<int64_t>(rng());
      default: return static_cast<int64_t>(rng() % 2401) - 1200;
    }
  };
  int checked = 0;
  for (int round = 0; round < 300; ++round) {
    std::optional<int64_t> lo = pick(), hi = pick();
    RegexPool pool;
    absl::StatusOr<RegexId> re = IntegerRangeRegex(lo, hi, pool);
    ASSERT_TRUE(re.ok()) << re.status();
    std::vector<Int> values;
    for (Int center : {Int(lo.value_or(0)), Int(hi.value_or(0)), Int(0), Int(lo.value_or(-5000)),
                       Int(hi.value_or(5000))}) {
      for (Int d = -25; d <= 25; ++d) values.push_back(center + d);
    }
    for (int k = 0; k < 60; ++k) values.push_back(static_cast<int64_t>(rng()));
    for (int k = 0; k < 60; ++k) values.push_back(static_cast<Int>(rng() % 20001) - 10000);
    for (Int p = 1; p < Int(1e20); p *= 10) {
      for (Int v : {p - 1, p, p + 1}) {
        values.push_back(v);
        values.push_back(-v);
      }
    }
    for (Int v : values) {
      const bool expected = (!lo || v >= *lo) && (!hi || v <= *hi);
      EXPECT_EQ(RegexFullMatch(pool, *re, IntText(v)), expected)
          << IntText(v) << " in [" << (lo ? IntText(*lo) : "-inf") << ", " << (hi ? IntText(*hi) : "inf")
          << "]";
      ++checked;
    }
    for (const char* s : kNotIntegers) EXPECT_FALSE(RegexFullMatch(pool, *re, s)) << s;
  }
  EXPECT_GT(checked, 100'000);
}

TEST(IntegerRangeRegex, EdgesAndEmpty) {
  RegexPool pool;
  RegexId all = *IntegerRangeRegex(std::nullopt, std::nullopt, pool);
  for (const char* s : {"0", "-1", "1234567890123456789012345", "-98765432109876543210"})
    EXPECT_TRUE(RegexFullMatch(pool, all, s)) << s;
  for (const char* s : kNotIntegers) EXPECT_FALSE(RegexFullMatch(pool, all, s)) << s;
  RegexId full =
      *IntegerRangeRegex(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), pool);
  EXPECT_TRUE(RegexFullMatch(pool, full, "-9223372036854775808"));
  EXPECT_TRUE(RegexFullMatch(pool, full, "9223372036854775807"));
  EXPECT_FALSE(RegexFullMatch(pool, full, "9223372036854775808"));
  EXPECT_FALSE(RegexFullMatch(pool, full, "-9223372036854775809"));
  EXPECT_EQ(*IntegerRangeRegex(5, 4, pool), pool.Nothing());
  RegexId one = *IntegerRangeRegex(7, 7, pool);
  EXPECT_TRUE(RegexFullMatch(pool, one, "7"));
  EXPECT_FALSE(RegexFullMatch(pool, one, "8"));
  RegexId zero = *IntegerRangeRegex(0, 0, pool);
  EXPECT_TRUE(RegexFullMatch(pool, zero, "0"));
  EXPECT_FALSE(RegexFullMatch(pool, zero, "-0"));
}

TEST(IntegerRangeRegex, FromNumberBounds) {
  struct Case {
    std::optional<double> lo;
    bool lo_excl;
    std::optional<double> hi;
    bool hi_excl;
    std::vector<std::string> yes, no;
  };
  const std::vector<Case> cases = {
      {1.5, false, 4.5, false, {"2", "3", "4"}, {"1", "5", "1.5"}},
      {2.0, true, 5.0, true, {"3", "4"}, {"2", "5"}},
      {-0.5, false, std::nullopt, false, {"0", "1", "99999"}, {"-1", "-0"}},
      {-2.5, true, -0.5, true, {"-2", "-1"}, {"-3", "0", "-0"}},
      {std::nullopt, false, 1e20, false, {"100000000000000000000", "-5"}, {"100000000000000000001"}},
      {1e30,
       true,
       std::nullopt,
       false,
       {"1000000000000000000000000000001"},
       {"1000000000000000000000000000000"}},
      {0.1, false, 0.9, false, {}, {"0", "1"}},
  };
  for (const Case& c : cases) {
    RegexPool pool;
    absl::StatusOr<RegexId> re = IntegerRangeRegexFromNumbers(c.lo, c.lo_excl, c.hi, c.hi_excl, pool);
    ASSERT_TRUE(re.ok()) << re.status();
    for (const std::string& s : c.yes) EXPECT_TRUE(RegexFullMatch(pool, *re, s)) << s;
    for (const std::string& s : c.no) EXPECT_FALSE(RegexFullMatch(pool, *re, s)) << s;
  }
  RegexPool pool;
  EXPECT_EQ(IntegerRangeRegexFromNumbers(NAN, false, std::nullopt, false, pool).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Decimals as integers scaled by 10^4: bounds have at most 3 fraction digits, candidates 4.
constexpr int64_t kScale = 10'000;

// Spellings of the scaled value v: shortest, padded to 4 and 5 fraction digits, and
// "n.0" for whole numbers. Negative zero is left out (never produced; tested below).
std::vector<std::string> Spellings(int64_t v) {
  const bool neg = v < 0;
  const int64_t m = neg ? -v : v;
  std::string ip = std::to_string(m / kScale), fp = std::to_string(m % kScale);
  fp = std::string(4 - fp.size(), '0') + fp;
  std::string shortest = fp;
  while (!shortest.empty() && shortest.back() == '0') shortest.pop_back();
  const std::string sign = neg ? "-" : "";
  std::vector<std::string> out = {sign + ip + "." + fp, sign + ip + "." + fp + "0"};
  out.push_back(shortest.empty() ? sign + ip : sign + ip + "." + shortest);
  if (shortest.empty()) out.push_back(sign + ip + ".0");
  return out;
}

TEST(NumberRangeRegex, RandomBoundsAgainstComparison) {
  std::mt19937_64 rng(2);
  // A bound: k / 10^f, as the double strtod gives for its decimal text.
  auto pick = [&](int64_t* scaled) -> std::optional<double> {
    if (rng() % 5 == 0) return std::nullopt;
    const int f = static_cast<int>(rng() % 4);
    const int64_t k = static_cast<int64_t>(rng() % 6001) - 3000;
    int64_t p = 1;
    for (int i = 0; i < f; ++i) p *= 10;
    *scaled = k * (kScale / p);
    std::string text = std::to_string(k < 0 ? -k : k);
    if (f > 0) {
      text = std::string(f + 1 > static_cast<int>(text.size()) ? f + 1 - text.size() : 0, '0') + text;
      text.insert(text.size() - f, ".");
    }
    return std::strtod(((k < 0 ? "-" : "") + text).c_str(), nullptr);
  };
  int checked = 0;
  for (int round = 0; round < 400; ++round) {
    int64_t lo_s = 0, hi_s = 0;
    std::optional<double> lo = pick(&lo_s), hi = pick(&hi_s);
    if (!lo && !hi) continue;  // unbounded: the exponent form is allowed (tested below)
    const bool lo_excl = rng() % 2, hi_excl = rng() % 2;
    RegexPool pool;
    absl::StatusOr<RegexId> re = NumberRangeRegex(lo, lo_excl, hi, hi_excl, pool);
    ASSERT_TRUE(re.ok()) << re.status();
    std::vector<int64_t> values = {0, 1, -1, kScale, -kScale};
    for (int64_t center : {lo_s, hi_s}) {
      for (int64_t d : {0, 1, 10, 100, 1000, 10000, 5, 9999, 10001, 123456}) {
        values.push_back(center + d);
        values.push_back(center - d);
      }
    }
    for (int k = 0; k < 80; ++k) values.push_back(static_cast<int64_t>(rng() % 800001) - 400000);
    for (int64_t v : values) {
      const bool expected =
          (!lo || (lo_excl ? v > lo_s : v >= lo_s)) && (!hi || (hi_excl ? v < hi_s : v <= hi_s));
      for (const std::string& s : Spellings(v)) {
        EXPECT_EQ(RegexFullMatch(pool, *re, s), expected)
            << s << " in " << (lo_excl ? "(" : "[") << (lo ? std::to_string(*lo) : "-inf") << ", "
            << (hi ? std::to_string(*hi) : "inf") << (hi_excl ? ")" : "]");
        ++checked;
      }
    }
    for (const char* s :
         {"-0", "-0.0", "-0.000", "1e2", "1E0", "0e0", "", ".5", "5.", "+1", "01", "00.5", "-.5"}) {
      EXPECT_FALSE(RegexFullMatch(pool, *re, s)) << s;
    }
  }
  EXPECT_GT(checked, 100'000);
}

TEST(NumberRangeRegex, Unbounded) {
  RegexPool pool;
  RegexId all = *NumberRangeRegex(std::nullopt, false, std::nullopt, false, pool);
  for (const char* s : {"0", "-0", "1e5", "1.5E-3", "0.0", "-12.50e+07", "123456789012345678901234567890"}) {
    EXPECT_TRUE(RegexFullMatch(pool, all, s)) << s;
  }
  for (const char* s : {"01", ".5", "1.", "+1", "1e", "e1", "1e+", "--1", "", "NaN", "Infinity"}) {
    EXPECT_FALSE(RegexFullMatch(pool, all, s)) << s;
  }
}

TEST(NumberRangeRegex, DecimalBoundsAreExact) {
  struct Case {
    std::optional<double> lo;
    bool lo_excl;
    std::optional<double> hi;
    bool hi_excl;
    std::vector<std::string> yes, no;
  };
  const std::vector<Case> cases = {
      {0.1,
       false,
       0.3,
       true,
       {"0.1", "0.10", "0.2999999999999", "0.2"},
       {"0.0999999", "0.3", "0.30", "0.31", "1"}},
      {1e-5, false, std::nullopt, false, {"0.00001", "0.0000100", "1", "0.1"}, {"0.000009999", "0", "-1"}},
      {std::nullopt, false, -1e-5, true, {"-0.0000100001", "-1"}, {"-0.00001", "0", "-0.000001"}},
      {-1.5,
       false,
       2.25,
       false,
       {"-1.5", "-1.4", "0", "2", "2.25", "2.2500", "-0.5"},
       {"-1.51", "2.26", "2.251", "-2"}},
      {100, true, 100.5, false, {"100.1", "100.5", "100.0001"}, {"100", "100.0", "100.50001", "101"}},
      {std::nullopt, false, 1.7976931348623157e308, false, {"1", "-5.5", "179769313486231570000"}, {"1e3"}},
      {5e-324, true, 1, false, {"0.5", "1", "1.000"}, {"0", "0.0", "1.0001"}},
      {3, false, 3, false, {"3", "3.0", "3.000"}, {"3.0001", "2.9999"}},
      {3, true, 3, false, {}, {"3", "3.0"}},
      {4, false, 3, false, {}, {"3", "4", "3.5"}},
  };
  for (const Case& c : cases) {
    RegexPool pool;
    absl::StatusOr<RegexId> re = NumberRangeRegex(c.lo, c.lo_excl, c.hi, c.hi_excl, pool);
    ASSERT_TRUE(re.ok()) << re.status();
    for (const std::string& s : c.yes) EXPECT_TRUE(RegexFullMatch(pool, *re, s)) << s;
    for (const std::string& s : c.no) EXPECT_FALSE(RegexFullMatch(pool, *re, s)) << s;
  }
}

TEST(DecimalRangeRegex, TextBounds) {
  RegexPool pool;
  RegexId u64 = *DecimalRangeRegex("0", false, "18446744073709551615", false, /*integer=*/true, pool);
  EXPECT_TRUE(RegexFullMatch(pool, u64, "18446744073709551615"));
  EXPECT_FALSE(RegexFullMatch(pool, u64, "18446744073709551616"));
  RegexId big = *DecimalRangeRegex("1e30", true, std::nullopt, false, /*integer=*/false, pool);
  EXPECT_TRUE(RegexFullMatch(pool, big, "1000000000000000000000000000000.0001"));
  EXPECT_FALSE(RegexFullMatch(pool, big, "1000000000000000000000000000000.000"));
  RegexId small = *DecimalRangeRegex("-2.50E-1", false, "0.125e1", false, /*integer=*/false, pool);
  EXPECT_TRUE(RegexFullMatch(pool, small, "-0.25"));
  EXPECT_TRUE(RegexFullMatch(pool, small, "1.25"));
  EXPECT_FALSE(RegexFullMatch(pool, small, "-0.2501"));
  EXPECT_FALSE(RegexFullMatch(pool, small, "1.2500001"));
  for (const char* bad : {"abc", "1.", ".5", "1e", "--1", "1e401", "1e-401", "0x10", ""}) {
    EXPECT_EQ(DecimalRangeRegex(bad, false, std::nullopt, false, false, pool).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_TRUE(DecimalRangeRegex("0e999999999999", false, std::nullopt, false, false, pool).ok());
  EXPECT_EQ(NumberRangeRegex(INFINITY, false, std::nullopt, false, pool).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NumberRangeRegex(std::nullopt, false, NAN, false, pool).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(NumberRangeRegex, PoolBoundsAreReported) {
  RegexPool tiny(RegexLimits{.max_nodes = 30, .max_repeat = 10'000});
  absl::StatusOr<RegexId> re = NumberRangeRegex(-123.456, false, 98765.4321, true, tiny);
  EXPECT_EQ(re.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(ExactInt64, Conversions) {
  EXPECT_EQ(ExactInt64(3.0), 3);
  EXPECT_EQ(ExactInt64(-0.0), 0);
  EXPECT_EQ(ExactInt64(-9223372036854775808.0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(ExactInt64(9223372036854775808.0), std::nullopt);
  EXPECT_EQ(ExactInt64(1.5), std::nullopt);
  EXPECT_EQ(ExactInt64(NAN), std::nullopt);
  EXPECT_EQ(ExactInt64(INFINITY), std::nullopt);
}

}  // namespace
}  // namespace llmserve::constraint
