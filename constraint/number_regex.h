// Byte regexes for JSON integers and numbers within bounds (JSON Schema's minimum,
// maximum, exclusiveMinimum, exclusiveMaximum).
//
// The bounds are compared exactly, as decimals, digit by digit: a double bound stands for
// its shortest round-trip decimal text (0.1 is 1/10, as the schema author wrote it), and
// DecimalRangeRegex takes the text itself (e.g. nlohmann::json::dump() of the value), so
// integers beyond int64 and doubles stay exact.
//
// The languages:
//  - integers: -?(0|[1-9][0-9]*); "-0" is never produced;
//  - numbers without bounds: all of JSON's -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?;
//  - numbers with a bound: -?(0|[1-9][0-9]*)(\.[0-9]+)? whose value is within the
//    bounds. Exponent forms are then not produced (the digit-by-digit comparison needs
//    the plain decimal form), nor negative zero ("-0", "-0.00").
// Empty bounds (min > max, or min == max with an exclusive end) give pool.Nothing().
// Errors: INVALID_ARGUMENT for a non-finite or malformed bound or one of more than 400
// digits; RESOURCE_EXHAUSTED if the pool's bounds are hit.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "constraint/regex.h"

namespace llmserve::constraint {

// Inclusive bounds.
absl::StatusOr<RegexId> IntegerRangeRegex(std::optional<int64_t> min, std::optional<int64_t> max,
                                          RegexPool& pool);

// An integer schema with number bounds (e.g. minimum 1.5, exclusiveMaximum 1e30): the
// integers within them.
absl::StatusOr<RegexId> IntegerRangeRegexFromNumbers(std::optional<double> min, bool min_exclusive,
                                                     std::optional<double> max, bool max_exclusive,
                                                     RegexPool& pool);

absl::StatusOr<RegexId> NumberRangeRegex(std::optional<double> min, bool min_exclusive,
                                         std::optional<double> max, bool max_exclusive,
                                         RegexPool& pool);

// The general form: bounds as JSON number text ("12", "-0.5", "1e30", "18446744073709551615").
// `integer`: integers only (the integer language above), else numbers.
absl::StatusOr<RegexId> DecimalRangeRegex(std::optional<std::string_view> min, bool min_exclusive,
                                          std::optional<std::string_view> max, bool max_exclusive,
                                          bool integer, RegexPool& pool);

// `v` as an int64 if it is an integer in range (a schema's bound written as 3.0 is 3).
std::optional<int64_t> ExactInt64(double v);

}  // namespace llmserve::constraint
