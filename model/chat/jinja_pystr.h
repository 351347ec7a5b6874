// Python string semantics over UTF-8: code-point indexing, str.isspace() whitespace,
// str()/repr() of values and float formatting as CPython prints them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/chat/jinja_value.h"

namespace llmserve::chat::jinja {

// True if `s` is well-formed UTF-8.
bool ValidUtf8(std::string_view s);
// The code points of `s` (which must be valid UTF-8).
std::vector<char32_t> DecodeUtf8(std::string_view s);
// Appends code point `c` to `out` as UTF-8.
void AppendUtf8(char32_t c, std::string* out);
// Byte offsets of each code point of `s`, plus s.size() at the end.
std::vector<size_t> CodePointOffsets(std::string_view s);
// Python len(s): the number of code points.
size_t CodePointCount(std::string_view s);
// Python str.isspace() for one code point.
bool IsPySpace(char32_t c);
// Python str.strip/lstrip/rstrip: without `chars`, Unicode whitespace.
std::string PyStrip(std::string_view s, const std::string* chars, bool left, bool right);
// Python str.split(sep, maxsplit) (sep == nullptr: runs of whitespace).
std::vector<std::string> PySplit(std::string_view s, const std::string* sep, int64_t maxsplit);
// Python str.rsplit(sep, maxsplit).
std::vector<std::string> PyRSplit(std::string_view s, const std::string* sep, int64_t maxsplit);
// Python str.splitlines() (no keepends).
std::vector<std::string> PySplitLines(std::string_view s);
// Python str.replace(old, new, count) (count < 0: all).
std::string PyReplace(std::string_view s, std::string_view from, std::string_view to, int64_t count);
// Python str.upper() / lower() (simple case mapping).
std::string PyUpper(std::string_view s);
std::string PyLower(std::string_view s);
// Python str.capitalize() and str.title()-like jinja title filter.
std::string PyCapitalize(std::string_view s);
// Python str.islower() / isupper().
bool PyIsLower(std::string_view s);
bool PyIsUpper(std::string_view s);
// Python repr(float) ("1.0", "1e+16", "inf", "nan").
std::string PyFloatRepr(double d);
// Python repr(str) with its choice of quotes and escapes.
std::string PyStrRepr(std::string_view s);
// Python str(v) as jinja2 prints it (undefined prints as "").
std::string PyStr(const Value& v);
// Python repr(v).
std::string PyRepr(const Value& v);

}  // namespace llmserve::chat::jinja
