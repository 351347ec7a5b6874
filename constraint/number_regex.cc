// Range regexes over decimal text (see number_regex.h).
//
// A value is split into its integer digits and fraction digits. For non-negative values
// in [L, U]: the integer part equal to L's with a fraction >= L's, strictly between
// (any fraction), or equal to U's with a fraction <= U's. Integer ranges split by digit
// count, then by the first differing digit (the classic range-to-regex construction);
// fractions compare as digit strings padded with zeros. Negative values are "-" and a
// magnitude in the mirrored range.
#include "constraint/number_regex.h"

#include <charconv>
#include <cmath>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace llmserve::constraint {
namespace {

constexpr size_t kMaxDigits = 400;  // per integer or fraction part of a bound

// An exact decimal: sign, integer digits without leading zeros ("0" for zero), fraction
// digits without trailing zeros. Zero is never negative.
struct Decimal {
  bool negative = false;
  std::string integer = "0";
  std::string fraction;

  bool IsZero() const { return integer == "0" && fraction.empty(); }
  Decimal Abs() const {
    Decimal d = *this;
    d.negative = false;
    return d;
  }
};

absl::StatusOr<Decimal> ParseDecimal(std::string_view view) {
  const absl::string_view text(view.data(), view.size());  // Debian absl: not std's
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat("number bound \"", text, "\" is not a JSON number"));
  };
  size_t i = 0;
  Decimal d;
  if (i < text.size() && text[i] == '-') {
    d.negative = true;
    ++i;
  }
  std::string digits;  // all mantissa digits
  int64_t point = 0;   // digits before the decimal point
  size_t start = i;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') digits.push_back(text[i++]);
  if (i == start) return bad();
  point = static_cast<int64_t>(digits.size());
  if (i < text.size() && text[i] == '.') {
    ++i;
    start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') digits.push_back(text[i++]);
    if (i == start) return bad();
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool neg_exp = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) neg_exp = text[i++] == '-';
    start = i;
    int64_t e = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      e = std::min<int64_t>(e * 10 + (text[i++] - '0'), 1'000'000'000);
    }
    if (i == start) return bad();
    point += neg_exp ? -e : e;
  }
  if (i != text.size()) return bad();
  // Trim: leading zeros move the point, trailing zeros go.
  size_t lead = 0;
  while (lead < digits.size() && digits[lead] == '0') ++lead;
  digits.erase(0, lead);
  point -= static_cast<int64_t>(lead);
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  if (digits.empty()) return Decimal{};  // zero (and -0)
  const int64_t n = static_cast<int64_t>(digits.size());
  if (point > static_cast<int64_t>(kMaxDigits) || n - point > static_cast<int64_t>(kMaxDigits)) {
    return absl::InvalidArgumentError(
        absl::StrCat("number bound \"", text, "\" has more than ", kMaxDigits, " digits"));
  }
  if (point <= 0) {
    d.integer = "0";
    d.fraction = std::string(static_cast<size_t>(-point), '0') + digits;
  } else if (point >= n) {
    d.integer = digits + std::string(static_cast<size_t>(point - n), '0');
  } else {
    d.integer = digits.substr(0, static_cast<size_t>(point));
    d.fraction = digits.substr(static_cast<size_t>(point));
  }
  return d;
}

absl::StatusOr<Decimal> FromDouble(double v) {
  if (!std::isfinite(v)) return absl::InvalidArgumentError("number bound is not finite");
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest round trip
  if (ec != std::errc()) return absl::InternalError("number bound: to_chars failed");
  return ParseDecimal(std::string_view(buf, static_cast<size_t>(end - buf)));
}

// Digit strings without leading zeros.
int CompareMagnitude(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

int Compare(const Decimal& a, const Decimal& b) {
  if (a.negative != b.negative) return a.negative ? -1 : 1;
  int c = CompareMagnitude(a.integer, b.integer);
  if (c == 0) c = a.fraction < b.fraction ? -1 : a.fraction > b.fraction ? 1 : 0;
  return a.negative ? -c : c;
}

std::string Increment(std::string s) {
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != '9') {
      ++s[i];
      return s;
    }
    s[i] = '0';
  }
  return "1" + s;
}

std::string Decrement(std::string s) {  // s >= 1
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != '0') {
      --s[i];
      break;
    }
    s[i] = '9';
  }
  if (s.size() > 1 && s[0] == '0') s.erase(0, 1);
  return s;
}

// +1 and -1 on integer decimals.
Decimal AddOne(Decimal d) {
  if (!d.negative) {
    d.integer = Increment(d.integer);
    return d;
  }
  d.integer = Decrement(d.integer);
  if (d.integer == "0") d.negative = false;
  return d;
}
Decimal SubOne(Decimal d) {
  if (d.negative) {
    d.integer = Increment(d.integer);
    return d;
  }
  if (d.integer == "0") {
    d.negative = true;
    d.integer = "1";
    return d;
  }
  d.integer = Decrement(d.integer);
  return d;
}
Decimal Floor(Decimal d) {
  if (d.fraction.empty()) return d;
  d.fraction.clear();
  return d.negative ? SubOne(d) : d;  // -1.5 -> -1 -> -2
}
Decimal Ceil(Decimal d) {
  if (d.fraction.empty()) return d;
  d.fraction.clear();
  if (!d.negative) return AddOne(d);
  if (d.integer == "0") d.negative = false;  // -0.5 -> 0
  return d;
}

class Builder {
 public:
  explicit Builder(RegexPool& pool) : p_(pool) {}

  RegexId Digit() { return p_.Bytes(ByteSet::Range('0', '9')); }
  RegexId Digits(char lo, char hi) {
    if (lo > hi) return p_.Nothing();
    return p_.Bytes(ByteSet::Range(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi)));
  }
  RegexId Char(char c) { return p_.Byte(static_cast<uint8_t>(c)); }
  RegexId AnyDigits(uint32_t min, uint32_t max) { return p_.Repeat(Digit(), min, max); }
  static uint32_t Count(size_t n) { return static_cast<uint32_t>(n); }  // digits: at most ~800

  // All of JSON's numbers: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
  RegexId JsonNumber() {
    RegexId integer = p_.Concat(
        {p_.Optional(Char('-')), p_.Alt({Char('0'), p_.Concat({Digits('1', '9'), p_.Star(Digit())})})});
    RegexId frac = p_.Optional(p_.Concat({Char('.'), p_.Plus(Digit())}));
    RegexId exp =
        p_.Optional(p_.Concat({ExpMark(), p_.Optional(p_.Alt({Char('+'), Char('-')})), p_.Plus(Digit())}));
    return p_.Concat({integer, frac, exp});
  }
  RegexId ExpMark() {
    ByteSet s;
    s.Add('e');
    s.Add('E');
    return p_.Bytes(s);
  }

  // Integers in [lo, hi] (either may be absent; both absent: 0|-?[1-9][0-9]*).
  RegexId IntegerRange(const std::optional<Decimal>& lo, const std::optional<Decimal>& hi) {
    if (lo && hi && Compare(*lo, *hi) > 0) return p_.Nothing();
    std::vector<RegexId> alts;
    // Non-negative part: [max(lo, 0), hi].
    if (!hi || !hi->negative) {
      std::string from = lo && !lo->negative ? lo->integer : "0";
      alts.push_back(NatRange(from, hi ? std::optional<std::string>(hi->integer) : std::nullopt));
    }
    // Negative part: "-" and a magnitude in [max(-hi, 1), -lo].
    if (!lo || lo->negative) {
      std::string from = hi && hi->negative ? hi->integer : "1";
      std::optional<std::string> to;
      if (lo) to = lo->integer;
      alts.push_back(p_.Concat({Char('-'), NatRange(from, to)}));
    }
    return p_.Alt(std::move(alts));
  }

  // Numbers in the bounds, written without an exponent.
  RegexId NumberRange(const std::optional<Decimal>& lo, bool lo_excl, const std::optional<Decimal>& hi,
                      bool hi_excl) {
    if (lo && hi) {
      int c = Compare(*lo, *hi);
      if (c > 0 || (c == 0 && (lo_excl || hi_excl))) return p_.Nothing();
    }
    std::vector<RegexId> alts;
    const Decimal zero;
    // Values >= 0.
    if (!hi || !hi->negative) {
      if (lo && !lo->negative) {
        alts.push_back(NonNegRange(*lo, lo_excl, hi, hi_excl));
      } else {
        alts.push_back(NonNegRange(zero, false, hi, hi_excl));
      }
    }
    // Values < 0: "-" and a magnitude m > 0 with -hi <= m <= -lo.
    if (!lo || lo->negative) {
      std::optional<Decimal> m_hi;
      if (lo) m_hi = lo->Abs();
      RegexId m = hi && hi->negative ? NonNegRange(hi->Abs(), hi_excl, m_hi, lo_excl)
                                     : NonNegRange(zero, /*exclusive=*/true, m_hi, lo_excl);
      alts.push_back(p_.Concat({Char('-'), m}));
    }
    return p_.Alt(std::move(alts));
  }

 private:
  // --- Integers as digit strings without leading zeros -------------------------------

  // Naturals in [lo, hi] (hi absent: unbounded).
  RegexId NatRange(std::string lo, const std::optional<std::string>& hi) {
    if (hi && CompareMagnitude(lo, *hi) > 0) return p_.Nothing();
    std::vector<RegexId> alts;
    if (lo == "0") {
      alts.push_back(Char('0'));
      if (hi && *hi == "0") return alts[0];
      lo.assign(1, '1');
    }
    const size_t la = lo.size();
    if (hi && hi->size() == la) {
      alts.push_back(SameLength(lo, *hi));
    } else {
      alts.push_back(SameLength(lo, std::string(la, '9')));
      if (hi) {
        const size_t lb = hi->size();
        if (lb - la >= 2) {
          alts.push_back(p_.Concat({Digits('1', '9'), AnyDigits(Count(la), Count(lb - 2))}));
        }
        alts.push_back(SameLength(absl::StrCat("1", std::string(lb - 1, '0')), *hi));
      } else {
        alts.push_back(p_.Concat({Digits('1', '9'), AnyDigits(Count(la), RegexPool::kUnbounded)}));
      }
    }
    return p_.Alt(std::move(alts));
  }

  // Digit strings of lo's length in [lo, hi].
  RegexId SameLength(std::string_view lo, std::string_view hi) {
    if (lo.empty()) return p_.Empty();
    const uint32_t rest = Count(lo.size() - 1);
    if (lo[0] == hi[0]) return p_.Concat({Char(lo[0]), SameLength(lo.substr(1), hi.substr(1))});
    return p_.Alt({p_.Concat({Char(lo[0]), AtLeast(lo.substr(1))}),
                   p_.Concat({Digits(lo[0] + 1, hi[0] - 1), AnyDigits(rest, rest)}),
                   p_.Concat({Char(hi[0]), AtMost(hi.substr(1))})});
  }
  // Digit strings of s's length >= s, <= s.
  RegexId AtLeast(std::string_view s) {
    if (s.find_first_not_of('0') == std::string_view::npos)
      return AnyDigits(Count(s.size()), Count(s.size()));
    const uint32_t rest = Count(s.size() - 1);
    return p_.Alt({p_.Concat({Char(s[0]), AtLeast(s.substr(1))}),
                   p_.Concat({Digits(s[0] + 1, '9'), AnyDigits(rest, rest)})});
  }
  RegexId AtMost(std::string_view s) {
    if (s.find_first_not_of('9') == std::string_view::npos)
      return AnyDigits(Count(s.size()), Count(s.size()));
    const uint32_t rest = Count(s.size() - 1);
    return p_.Alt({p_.Concat({Char(s[0]), AtMost(s.substr(1))}),
                   p_.Concat({Digits('0', s[0] - 1), AnyDigits(rest, rest)})});
  }

  // --- Fractions: digit strings d compared as 0.d against 0.s --------------------------
  // `nonempty`: d has at least one digit (it follows the point).

  RegexId FracAtLeast(std::string_view s, bool strict, bool nonempty) {
    if (s.empty()) {
      if (strict) return p_.Concat({p_.Star(Digit()), Digits('1', '9'), p_.Star(Digit())});
      return AnyDigits(nonempty ? 1 : 0, RegexPool::kUnbounded);
    }
    // (0.d >= 0.s > 0 needs a digit, so d is never empty here.)
    return p_.Alt({p_.Concat({Digits(s[0] + 1, '9'), p_.Star(Digit())}),
                   p_.Concat({Char(s[0]), FracAtLeast(s.substr(1), strict, false)})});
  }

  RegexId FracAtMost(std::string_view s, bool strict, bool nonempty) {
    if (s.empty()) {
      if (strict) return p_.Nothing();
      return p_.Repeat(Char('0'), nonempty ? 1 : 0, RegexPool::kUnbounded);
    }
    std::vector<RegexId> alts;
    if (!nonempty) alts.push_back(p_.Empty());  // 0 < 0.s
    alts.push_back(p_.Concat({Digits('0', s[0] - 1), p_.Star(Digit())}));
    alts.push_back(p_.Concat({Char(s[0]), FracAtMost(s.substr(1), strict, false)}));
    return p_.Alt(std::move(alts));
  }

  // 0.l <= 0.d <= 0.u (each end strict or not), l <= u.
  RegexId FracBetween(std::string_view l, std::string_view u, bool l_strict, bool u_strict, bool nonempty) {
    if (l.empty() && u.empty()) {
      if (l_strict || u_strict) return p_.Nothing();
      return p_.Repeat(Char('0'), nonempty ? 1 : 0, RegexPool::kUnbounded);
    }
    std::vector<RegexId> alts;
    if (!nonempty && FracZeroAllowed(l, u, l_strict, u_strict)) alts.push_back(p_.Empty());
    const char cl = l.empty() ? '0' : l[0], cu = u.empty() ? '0' : u[0];
    const std::string_view lr = l.empty() ? l : l.substr(1), ur = u.empty() ? u : u.substr(1);
    if (cl == cu) {
      alts.push_back(p_.Concat({Char(cl), FracBetween(lr, ur, l_strict, u_strict, false)}));
    } else {
      alts.push_back(p_.Concat({Char(cl), FracAtLeast(lr, l_strict, false)}));
      alts.push_back(p_.Concat({Digits(cl + 1, cu - 1), p_.Star(Digit())}));
      alts.push_back(p_.Concat({Char(cu), FracAtMost(ur, u_strict, false)}));
    }
    return p_.Alt(std::move(alts));
  }
  static bool FracZeroAllowed(std::string_view l, std::string_view u, bool l_strict, bool u_strict) {
    return l.empty() && !l_strict && !(u.empty() && u_strict);
  }

  // "" or "." and digits, as one of the three comparisons above.
  RegexId OptionalFraction(RegexId digits, bool zero_allowed) {
    RegexId dotted = p_.Concat({Char('.'), digits});
    return zero_allowed ? p_.Alt({p_.Empty(), dotted}) : dotted;
  }

  // Non-negative numbers v with lo <(=) v <(=) hi (hi absent: unbounded), lo >= 0.
  RegexId NonNegRange(const Decimal& lo, bool lo_excl, const std::optional<Decimal>& hi, bool hi_excl) {
    if (hi) {
      int c = Compare(lo, *hi);
      if (c > 0 || (c == 0 && (lo_excl || hi_excl))) return p_.Nothing();
      if (lo.integer == hi->integer) {
        return p_.Concat({p_.Literal(lo.integer),
                          OptionalFraction(FracBetween(lo.fraction, hi->fraction, lo_excl, hi_excl, true),
                                           FracZeroAllowed(lo.fraction, hi->fraction, lo_excl, hi_excl))});
      }
    }
    std::vector<RegexId> alts;
    alts.push_back(
        p_.Concat({p_.Literal(lo.integer), OptionalFraction(FracAtLeast(lo.fraction, lo_excl, true),
                                                            lo.fraction.empty() && !lo_excl)}));
    // Integer parts strictly between, any fraction.
    RegexId any_fraction = p_.Optional(p_.Concat({Char('.'), p_.Plus(Digit())}));
    std::string after = Increment(lo.integer);
    if (!hi) {
      alts.push_back(p_.Concat({NatRange(after, std::nullopt), any_fraction}));
    } else {
      std::string before = Decrement(hi->integer);  // hi.integer > lo.integer >= 0
      if (CompareMagnitude(after, before) <= 0)
        alts.push_back(p_.Concat({NatRange(after, before), any_fraction}));
      alts.push_back(
          p_.Concat({p_.Literal(hi->integer), OptionalFraction(FracAtMost(hi->fraction, hi_excl, true),
                                                               !(hi->fraction.empty() && hi_excl))}));
    }
    return p_.Alt(std::move(alts));
  }

  RegexPool& p_;
};

absl::StatusOr<std::optional<Decimal>> ParseBound(std::optional<std::string_view> text) {
  if (!text) return std::optional<Decimal>();
  absl::StatusOr<Decimal> d = ParseDecimal(*text);
  if (!d.ok()) return d.status();
  return std::optional<Decimal>(*std::move(d));
}

absl::StatusOr<std::optional<Decimal>> DoubleBound(std::optional<double> v) {
  if (!v) return std::optional<Decimal>();
  absl::StatusOr<Decimal> d = FromDouble(*v);
  if (!d.ok()) return d.status();
  return std::optional<Decimal>(*std::move(d));
}

absl::StatusOr<RegexId> Finish(RegexPool& pool, RegexId id) {
  if (!pool.status().ok()) return pool.status();
  return id;
}

absl::StatusOr<RegexId> RangeOf(const std::optional<Decimal>& lo, bool lo_excl,
                                const std::optional<Decimal>& hi, bool hi_excl, bool integer,
                                RegexPool& pool) {
  Builder b(pool);
  if (integer) {
    // Integer bounds: ceil/floor, one step in for an exclusive integral bound.
    std::optional<Decimal> ilo, ihi;
    if (lo) ilo = lo_excl ? AddOne(Floor(*lo)) : Ceil(*lo);
    if (hi) ihi = hi_excl ? SubOne(Ceil(*hi)) : Floor(*hi);
    return Finish(pool, b.IntegerRange(ilo, ihi));
  }
  if (!lo && !hi) return Finish(pool, b.JsonNumber());
  return Finish(pool, b.NumberRange(lo, lo_excl, hi, hi_excl));
}

}  // namespace

absl::StatusOr<RegexId> DecimalRangeRegex(std::optional<std::string_view> min, bool min_exclusive,
                                          std::optional<std::string_view> max, bool max_exclusive,
                                          bool integer, RegexPool& pool) {
  absl::StatusOr<std::optional<Decimal>> lo = ParseBound(min), hi = ParseBound(max);
  if (!lo.ok()) return lo.status();
  if (!hi.ok()) return hi.status();
  return RangeOf(*lo, min_exclusive, *hi, max_exclusive, integer, pool);
}

absl::StatusOr<RegexId> IntegerRangeRegex(std::optional<int64_t> min, std::optional<int64_t> max,
                                          RegexPool& pool) {
  std::optional<std::string> lo, hi;
  if (min) lo = std::to_string(*min);
  if (max) hi = std::to_string(*max);
  return DecimalRangeRegex(lo ? std::optional<std::string_view>(*lo) : std::nullopt, false,
                           hi ? std::optional<std::string_view>(*hi) : std::nullopt, false,
                           /*integer=*/true, pool);
}

absl::StatusOr<RegexId> IntegerRangeRegexFromNumbers(std::optional<double> min, bool min_exclusive,
                                                     std::optional<double> max, bool max_exclusive,
                                                     RegexPool& pool) {
  absl::StatusOr<std::optional<Decimal>> lo = DoubleBound(min), hi = DoubleBound(max);
  if (!lo.ok()) return lo.status();
  if (!hi.ok()) return hi.status();
  return RangeOf(*lo, min_exclusive, *hi, max_exclusive, /*integer=*/true, pool);
}

absl::StatusOr<RegexId> NumberRangeRegex(std::optional<double> min, bool min_exclusive,
                                         std::optional<double> max, bool max_exclusive, RegexPool& pool) {
  absl::StatusOr<std::optional<Decimal>> lo = DoubleBound(min), hi = DoubleBound(max);
  if (!lo.ok()) return lo.status();
  if (!hi.ok()) return hi.status();
  return RangeOf(*lo, min_exclusive, *hi, max_exclusive, /*integer=*/false, pool);
}

std::optional<int64_t> ExactInt64(double v) {
  // [-2^63, 2^63): both ends are exact doubles.
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return std::nullopt;
  if (std::trunc(v) != v) return std::nullopt;
  return static_cast<int64_t>(v);
}

}  // namespace llmserve::constraint
