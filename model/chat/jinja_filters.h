// Filters, tests and globals of jinja2 3.1 that chat templates use, plus transformers'
// tojson/raise_exception/strftime_now. Names are checked at parse time (an unknown filter
// or test is a template error, as in jinja2).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "model/chat/jinja_interp.h"

namespace llmserve::chat::jinja {

// A filter: value | name(args).
using FilterFn = absl::StatusOr<Value> (*)(Interp&, const Value&, CallArgs&);

// True if `name` is a filter / test this engine implements.
bool IsKnownFilter(std::string_view name);
bool IsKnownTest(std::string_view name);
// The sequence filters (jinja_filters_seq.cc), or nullptr.
FilterFn FindSeqFilter(std::string_view name);
// Adds range, namespace, dict, raise_exception and strftime_now to `frame`.
void AddGlobals(Frame* frame);
// jinja2's make_attrgetter: item lookups along a dotted path ("a.0.b").
absl::StatusOr<Value> GetAttrPath(Interp& in, const Value& item, const std::string& path);
// Python str.lower() for strings (case-insensitive sort keys), other values unchanged.
Value IgnoreCase(const Value& v);

}  // namespace llmserve::chat::jinja
