// JSON Schema `format` values as byte regexes over the inside of a JSON string literal
// (RegexEncoding::kJsonString: the bytes between the quotes).
//
// Supported: date-time, date, time (RFC 3339; the time offset is required, T and Z in
// either case), duration (RFC 3339 appendix A, ISO 8601's P...), email (a dot-atom local
// part, @, a hostname), hostname (RFC 1123 labels), ipv4, ipv6 (RFC 4291, with ::
// compression and an embedded IPv4), uuid (8-4-4-4-12 hex, either case), uri (RFC 3986
// scheme ":" and URI characters). json_formats.cc says where each departs from its RFC.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "constraint/regex.h"

namespace llmserve::constraint {

// INVALID_ARGUMENT `format "X" is not supported` for other formats.
absl::StatusOr<RegexId> JsonFormatRegex(std::string_view format, RegexPool& pool);

// The pattern (our regex syntax, fullmatch) behind a supported format, or "" (for tests
// and for llmgrammar's listings).
std::string_view JsonFormatPattern(std::string_view format);

}  // namespace llmserve::constraint
