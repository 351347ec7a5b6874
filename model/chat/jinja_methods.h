// Methods of str, list and dict that templates call (`s.strip()`, `d.items()`), with the
// immutable sandbox's rule: methods that mutate a list or dict are blocked (calling one is
// a SecurityError, as in jinja2's ImmutableSandboxedEnvironment).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "model/chat/jinja_value.h"

namespace llmserve::chat::jinja {

// The bound method `obj.name`, an unsafe undefined for a blocked one, or nullopt.
std::optional<Value> LookupMethod(const Value& obj, std::string_view name);

// Size of s.replace(from, to, count) without building it (to check caps first).
size_t ReplacedSize(std::string_view s, std::string_view from, std::string_view to, int64_t count);

// Python str.title().
std::string PyTitle(std::string_view s);

}  // namespace llmserve::chat::jinja
