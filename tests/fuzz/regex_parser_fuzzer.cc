// libFuzzer target: a regular expression (constraint/regex_parser.h). The input is parsed
// as a whole-text and as a search pattern; one that parses is lowered to UTF-8 and to
// JSON string contents in a pool with small bounds, and the reference matcher runs on a
// few strings. An error status is the expected answer to a malformed pattern or a bound.
// Checked: on text with no `"`, `\` or control byte the JSON form reads exactly as the
// UTF-8 form, so both encodings must agree there.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "constraint/regex_parser.h"

namespace {

bool JsonPlain(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == '"' || c == '\\') return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace llmserve::constraint;
  const std::string_view pattern(reinterpret_cast<const char*>(data), size);
  RegexParseOptions opts;
  opts.max_pattern_bytes = 4096;
  opts.max_depth = 64;
  const std::string_view texts[] = {"", "a", "abc", "0123456789", "a\"b\\n\n", "x\xc3\xa9\xf0\x9f\x98\x80/",
                                    "\\u000A\\\"", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", pattern.substr(0, 48)};
  for (bool search : {false, true}) {
    opts.search = search;
    absl::StatusOr<CharRegex> re = ParseRegex(pattern, opts);
    if (!re.ok()) continue;
    RegexPool pool(RegexLimits{.max_nodes = 20'000, .max_repeat = 64});
    absl::StatusOr<RegexId> utf8 = LowerRegex(*re, RegexEncoding::kUtf8, pool);
    absl::StatusOr<RegexId> json = LowerRegex(*re, RegexEncoding::kJsonString, pool);
    if (!utf8.ok() || !json.ok()) continue;
    for (std::string_view text : texts) {
      const bool a = RegexFullMatch(pool, *utf8, text);
      const bool b = RegexFullMatch(pool, *json, text);
      if (JsonPlain(text) && a != b) abort();
    }
  }
  return 0;
}
