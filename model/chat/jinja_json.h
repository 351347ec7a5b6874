// JSON <-> Value: template variables from nlohmann::json (ordered_json keeps the caller's key
// order, as Python's json.load does), and `tojson` formatted as Python's json.dumps.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "model/chat/jinja_pystr.h"
#include "model/chat/jinja_value.h"
#include "nlohmann/json.hpp"

namespace llmserve::chat::jinja {

// json.dumps options as the tojson filter takes them.
struct JsonDumpOptions {
  bool ensure_ascii = false;
  bool has_indent = false;
  std::string indent;                 // the unit of indentation when has_indent
  std::string item_sep = ", ";        // json.dumps' separators; ",", ": " with an indent
  std::string key_sep = ": ";
  bool sort_keys = false;
  size_t max_bytes = SIZE_MAX;        // fail once the output would exceed this
};

// Appends json.dumps(v) to *out; TypeError for values JSON cannot hold (undefined, ...).
absl::Status DumpJson(const Value& v, const JsonDumpOptions& options, std::string* out);

// Converts parsed JSON to a Value; nesting beyond `max_depth`, more than `max_items`
// elements in one container, or invalid UTF-8 in a string is an error.
template <typename Json>
absl::StatusOr<Value> FromJson(const Json& j, int max_depth, size_t max_items) {
  if (max_depth < 0) return absl::InvalidArgumentError("template variables nested too deeply");
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::None();
    case nlohmann::json::value_t::boolean: return Value::Bool(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::Int(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const uint64_t u = j.template get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::Float(static_cast<double>(u));
      return Value::Int(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float: return Value::Float(j.template get<double>());
    case nlohmann::json::value_t::string: {
      const auto& s = j.template get_ref<const std::string&>();
      if (!ValidUtf8(s)) return absl::InvalidArgumentError("template variable string is not valid UTF-8");
      return Value::String(s);
    }
    case nlohmann::json::value_t::array: {
      if (j.size() > max_items) return absl::InvalidArgumentError("template variable array too large");
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) {
        auto v = FromJson(e, max_depth - 1, max_items);
        if (!v.ok()) return v.status();
        items.push_back(std::move(*v));
      }
      return Value::List(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      if (j.size() > max_items) return absl::InvalidArgumentError("template variable object too large");
      DictObj d;
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (!ValidUtf8(it.key())) return absl::InvalidArgumentError("template variable key is not valid UTF-8");
        auto v = FromJson(it.value(), max_depth - 1, max_items);
        if (!v.ok()) return v.status();
        d.Set(Value::String(it.key()), std::move(*v));
      }
      return Value::Dict(std::move(d));
    }
    default: return absl::InvalidArgumentError("unsupported JSON value in template variables");
  }
}

}  // namespace llmserve::chat::jinja
