// LowerRegex: CharRegex (code points) -> RegexPool expression (bytes).
//
// kUtf8 writes each class as the UTF-8 sequences of its ranges. kJsonString writes each
// code point as it may appear inside a JSON string literal:
//  - U+0020.. other than `"` and `\`: its UTF-8 bytes (`/` also as \/);
//  - `"` as \", `\` as \\;
//  - U+0008 U+000C U+000A U+000D U+0009 as \b \f \n \r \t or \u00XX;
//  - the other controls U+0000..U+001F only as \u00XX;
// with XX in either case. \uXXXX for any other code point (and UTF-16 surrogate pairs) is
// deliberately not accepted: a model writing JSON has no need for it, and the lexer stays
// small. A regex over kJsonString thus constrains the decoded string value.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "constraint/regex_parser.h"

namespace llmserve::constraint {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

// Far above anything ParseRegex builds (its groups nest at most max_depth deep); guards
// the recursion against a hand-built CharRegex.
constexpr int kMaxLowerDepth = 10'000;

bool IsSurrogate(uint32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

// Code points that JSON writes escaped.
bool JsonEscaped(uint32_t cp) { return cp < 0x20 || cp == '"' || cp == '\\'; }

class Lowerer {
 public:
  Lowerer(RegexEncoding encoding, RegexPool& pool) : encoding_(encoding), pool_(pool) {}

  absl::StatusOr<RegexId> Lower(const CharRegex& re, int depth) {
    if (depth > kMaxLowerDepth) {
      return absl::ResourceExhaustedError("regex: the expression is nested too deeply");
    }
    switch (re.kind) {
      case CharRegex::Kind::kNothing: return pool_.Nothing();
      case CharRegex::Kind::kEmpty: return pool_.Empty();
      case CharRegex::Kind::kClass: return Class(re.ranges);
      case CharRegex::Kind::kConcat:
      case CharRegex::Kind::kAlt: {
        std::vector<RegexId> parts;
        parts.reserve(re.children.size());
        for (const CharRegex& c : re.children) {
          absl::StatusOr<RegexId> id = Lower(c, depth + 1);
          if (!id.ok()) return id;
          parts.push_back(*id);
        }
        return re.kind == CharRegex::Kind::kConcat ? pool_.Concat(std::move(parts))
                                                   : pool_.Alt(std::move(parts));
      }
      case CharRegex::Kind::kRepeat: {
        if (re.children.size() != 1) {
          return absl::InvalidArgumentError("regex: a repetition needs exactly one child");
        }
        absl::StatusOr<RegexId> child = Lower(re.children[0], depth + 1);
        if (!child.ok()) return child;
        return pool_.Repeat(*child, re.min, re.max);
      }
    }
    return pool_.Nothing();
  }

 private:
  RegexId Class(const Ranges& ranges) {
    // One code point: its bytes (the common case: literal text).
    if (ranges.size() == 1 && ranges[0].first == ranges[0].second) {
      const uint32_t cp = ranges[0].first;
      if (cp > 0x10FFFF || IsSurrogate(cp)) return pool_.Nothing();
      if (encoding_ == RegexEncoding::kUtf8 || (!JsonEscaped(cp) && cp != '/')) {
        return pool_.Literal(EncodeUtf8(cp));
      }
    }
    if (encoding_ == RegexEncoding::kUtf8) return pool_.CodepointRanges(ranges);
    return JsonClass(ranges);
  }

  // The plain part as one CodepointRanges, plus `\` followed by the escapes of the code
  // points present: a class of one-letter escapes, and \u00 then 0[..] or 1[..].
  RegexId JsonClass(const Ranges& ranges) {
    Ranges plain;
    ByteSet single;           // after the backslash: " \ / b f n r t
    ByteSet low_hex[2];       // \u000X, \u001X: the X digits (both cases)
    auto add_escape = [&](uint32_t cp) {
      static constexpr char kHex[] = "0123456789abcdef";
      const char digit = kHex[cp & 0xF];
      low_hex[cp >> 4].Add(static_cast<uint8_t>(digit));
      if (digit >= 'a') low_hex[cp >> 4].Add(static_cast<uint8_t>(digit - 'a' + 'A'));
      switch (cp) {
        case '\b': single.Add('b'); break;
        case '\f': single.Add('f'); break;
        case '\n': single.Add('n'); break;
        case '\r': single.Add('r'); break;
        case '\t': single.Add('t'); break;
        default: break;
      }
    };
    for (auto [lo, hi] : ranges) {
      if (lo > hi) continue;
      for (uint32_t cp = lo; cp <= std::min<uint32_t>(hi, 0x1F); ++cp) add_escape(cp);
      for (uint32_t special : {uint32_t{'"'}, uint32_t{'\\'}, uint32_t{'/'}}) {
        if (lo <= special && special <= hi) single.Add(static_cast<uint8_t>(special));
      }
      // The plain part: [lo, hi] without 00-1F, `"` and `\` (`/` stays in it).
      lo = std::max<uint32_t>(lo, 0x20);
      for (uint32_t cut : {uint32_t{'"'}, uint32_t{'\\'}}) {
        if (lo <= cut && cut <= hi) {
          if (lo < cut) plain.push_back({lo, cut - 1});
          lo = cut + 1;
        }
      }
      if (lo <= hi) plain.push_back({lo, hi});
    }
    std::vector<RegexId> escapes;
    if (!single.Empty()) escapes.push_back(pool_.Bytes(single));
    std::vector<RegexId> u00;
    for (int high = 0; high < 2; ++high) {
      if (low_hex[high].Empty()) continue;
      u00.push_back(pool_.Concat({pool_.Byte(static_cast<uint8_t>('0' + high)), pool_.Bytes(low_hex[high])}));
    }
    if (!u00.empty()) escapes.push_back(pool_.Concat({pool_.Literal("u00"), pool_.Alt(std::move(u00))}));
    std::vector<RegexId> alts;
    if (!plain.empty()) alts.push_back(pool_.CodepointRanges(plain));
    if (!escapes.empty()) alts.push_back(pool_.Concat({pool_.Byte('\\'), pool_.Alt(std::move(escapes))}));
    return pool_.Alt(std::move(alts));
  }

  RegexEncoding encoding_;
  RegexPool& pool_;
};

}  // namespace

absl::StatusOr<RegexId> LowerRegex(const CharRegex& re, RegexEncoding encoding, RegexPool& pool) {
  absl::StatusOr<RegexId> id = Lowerer(encoding, pool).Lower(re, 0);
  if (!id.ok()) return id;
  if (!pool.status().ok()) return pool.status();
  return id;
}

}  // namespace llmserve::constraint
