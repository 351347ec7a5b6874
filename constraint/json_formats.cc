// The formats as patterns in our regex syntax (regex_parser.h), compiled for
// kJsonString. None of them contains `"`, `\` or a control character, so in JSON the
// text stands as written (a `/` may also appear as \/).
//
// Departures from the RFCs, for a regular language and a small lexer:
//  - date, date-time: leap years are exact; year 0000 is allowed (RFC 3339's 4DIGIT;
//    Python's datetime refuses it). A leap second (:60) is allowed at any time of day;
//    RFC 3339 allows it only at 23:59:60 UTC, which depends on the offset.
//  - hostname: labels of 1-63 letters, digits and inner hyphens, dot-separated; the
//    253-byte total is not checked, nor a trailing dot allowed.
//  - email: dot-atom local part (RFC 5322 atext and dots), @, a hostname; no quoted
//    local parts, no [address] literals.
//  - uri: RFC 3986 scheme, ":", then any of the URI characters (unreserved, reserved
//    and %HH): the hier-part's structure is not checked.
#include "constraint/json_formats.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "constraint/regex_parser.h"

namespace llmserve::constraint {
namespace {

struct Patterns {
  std::string date, time, date_time, duration, hostname, email, ipv4, ipv6, uuid, uri;

  Patterns() {
    // RFC 3339 full-date, with the days of each month and February 29 in leap years
    // (divisible by 4, centuries only if divisible by 400).
    const std::string month_day =
        "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
        "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
        "|02-(?:0[1-9]|1[0-9]|2[0-8]))";
    const std::string leap_year = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)";
    date = absl::StrCat("(?:[0-9]{4}-", month_day, "|", leap_year, "-02-29)");
    // partial-time time-offset; T and Z in either case (RFC 3339 section 5.6's note).
    const std::string partial_time = "(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\\.[0-9]+)?";
    const std::string offset = "(?:[zZ]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])";
    time = partial_time + offset;
    date_time = absl::StrCat(date, "[tT]", partial_time, offset);
    // RFC 3339 appendix A (ISO 8601 durations): P and date parts, T and time parts, or weeks.
    const std::string dur_time = "T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)";
    const std::string dur_date = "(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)";
    duration = absl::StrCat("P(?:", dur_date, "(?:", dur_time, ")?|", dur_time, "|[0-9]+W)");
    const std::string label = "[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?";
    hostname = absl::StrCat(label, "(?:\\.", label, ")*");
    const std::string atext = "[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]";
    email = absl::StrCat(atext, "+(?:\\.", atext, "+)*@", hostname);
    // Dotted quad, 0-255 each, no leading zeros.
    const std::string octet = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])";
    ipv4 = absl::StrCat(octet, "(?:\\.", octet, "){3}");
    // RFC 4291 section 2.2 as RFC 3986's IPv6address grammar spells it out.
    const std::string h = "[0-9a-fA-F]{1,4}";
    const std::string ls32 = absl::StrCat("(?:", h, ":", h, "|", ipv4, ")");
    auto left = [&](int n) {  // [ *n( h16 ":" ) h16 ]
      return n < 0 ? std::string() : absl::StrCat("(?:(?:", h, ":){0,", n, "}", h, ")?");
    };
    ipv6 = absl::StrCat("(?:(?:", h, ":){6}", ls32,                  //
                        "|::(?:", h, ":){5}", ls32,                   //
                        "|", left(0), "::(?:", h, ":){4}", ls32,      //
                        "|", left(1), "::(?:", h, ":){3}", ls32,      //
                        "|", left(2), "::(?:", h, ":){2}", ls32,      //
                        "|", left(3), "::", h, ":", ls32,             //
                        "|", left(4), "::", ls32,                     //
                        "|", left(5), "::", h,                        //
                        "|", left(6), "::)");
    uuid = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
    uri = "[a-zA-Z][a-zA-Z0-9+.-]*:(?:[a-zA-Z0-9._~:/?#\\[\\]@!$&'()*+,;=-]|%[0-9a-fA-F]{2})*";
  }
};

const Patterns& AllPatterns() {
  static const Patterns* const patterns = new Patterns();
  return *patterns;
}

}  // namespace

std::string_view JsonFormatPattern(std::string_view format) {
  const Patterns& p = AllPatterns();
  if (format == "date-time") return p.date_time;
  if (format == "date") return p.date;
  if (format == "time") return p.time;
  if (format == "duration") return p.duration;
  if (format == "email") return p.email;
  if (format == "hostname") return p.hostname;
  if (format == "ipv4") return p.ipv4;
  if (format == "ipv6") return p.ipv6;
  if (format == "uuid") return p.uuid;
  if (format == "uri") return p.uri;
  return "";
}

absl::StatusOr<RegexId> JsonFormatRegex(std::string_view format, RegexPool& pool) {
  std::string_view pattern = JsonFormatPattern(format);
  if (pattern.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "format \"", absl::string_view(format.data(), format.size()), "\" is not supported"));
  }
  return CompileRegex(pattern, RegexParseOptions{}, RegexEncoding::kJsonString, pool);
}

}  // namespace llmserve::constraint
