// Python printf-style formatting (`'%s: %d' % (a, b)` and the `format` filter) and the
// `truncate` filter's algorithm.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/chat/jinja_value.h"

namespace llmserve::chat::jinja {

// fmt % args: %s %r %d %i %f %F %e %E %g %G %x %X %o %c %% with flags, width, precision;
// `max_bytes` bounds the result.
absl::StatusOr<std::string> PyPercentFormat(const std::string& fmt, const std::vector<Value>& args,
                                            size_t max_bytes);

}  // namespace llmserve::chat::jinja
