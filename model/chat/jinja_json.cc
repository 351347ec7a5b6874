#include "model/chat/jinja_json.h"

#include <algorithm>
#include <cstdio>

#include "model/chat/jinja_interp.h"

namespace llmserve::chat::jinja {
namespace {

void AppendJsonString(std::string_view s, bool ensure_ascii, std::string* out) {
  out->push_back('"');
  char buf[16];
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': *out += "\\\""; continue;
      case '\\': *out += "\\\\"; continue;
      case '\n': *out += "\\n"; continue;
      case '\r': *out += "\\r"; continue;
      case '\t': *out += "\\t"; continue;
      case '\b': *out += "\\b"; continue;
      case '\f': *out += "\\f"; continue;
      default: break;
    }
    if (c < 0x20) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      *out += buf;
    } else if (c < 0x80 || !ensure_ascii) {
      out->push_back(static_cast<char>(c));
    } else {
      size_t end = i + 1;
      while (end < s.size() && (static_cast<unsigned char>(s[end]) & 0xc0) == 0x80) ++end;
      for (char32_t cp : DecodeUtf8(s.substr(i, end - i))) {
        if (cp >= 0x10000) {
          const char32_t v = cp - 0x10000;
          std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", static_cast<unsigned>(0xd800 + (v >> 10)),
                        static_cast<unsigned>(0xdc00 + (v & 0x3ff)));
        } else {
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
        }
        *out += buf;
      }
      i = end - 1;
    }
  }
  out->push_back('"');
}

std::string FloatJson(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return PyFloatRepr(d);
}

absl::Status NotSerializable(const Value& v) {
  return TypeError(absl::StrCat("Object of type ", TypeName(v), " is not JSON serializable"));
}

absl::StatusOr<std::string> KeyString(const Value& k) {
  switch (k.kind()) {
    case Value::Kind::kString: return k.str();
    case Value::Kind::kBool: return std::string(k.as_bool() ? "true" : "false");
    case Value::Kind::kNone: return std::string("null");
    case Value::Kind::kInt: return std::to_string(k.as_int());
    case Value::Kind::kFloat: return FloatJson(k.as_float());
    default:
      return TypeError(absl::StrCat("keys must be str, int, float, bool or None, not ", TypeName(k)));
  }
}

void Newline(const JsonDumpOptions& o, int level, std::string* out) {
  out->push_back('\n');
  for (int i = 0; i < level; ++i) *out += o.indent;
}

absl::Status Dump(const Value& v, const JsonDumpOptions& o, int level, std::string* out) {
  if (out->size() > o.max_bytes) return absl::ResourceExhaustedError("tojson output exceeds max_string_bytes");
  if (level > 512) return ValueError("Circular reference detected");
  switch (v.kind()) {
    case Value::Kind::kNone: *out += "null"; return absl::OkStatus();
    case Value::Kind::kBool: *out += v.as_bool() ? "true" : "false"; return absl::OkStatus();
    case Value::Kind::kInt: *out += std::to_string(v.as_int()); return absl::OkStatus();
    case Value::Kind::kFloat: *out += FloatJson(v.as_float()); return absl::OkStatus();
    case Value::Kind::kString: AppendJsonString(v.str(), o.ensure_ascii, out); return absl::OkStatus();
    case Value::Kind::kList: {
      const ListObj& l = v.list();
      if (l.is_iter || l.view != nullptr) return NotSerializable(v);
      if (l.items.empty()) { *out += "[]"; return absl::OkStatus(); }
      out->push_back('[');
      for (size_t i = 0; i < l.items.size(); ++i) {
        if (i > 0) *out += o.item_sep;
        if (o.has_indent) Newline(o, level + 1, out);
        if (auto s = Dump(l.items[i], o, level + 1, out); !s.ok()) return s;
      }
      if (o.has_indent) Newline(o, level, out);
      out->push_back(']');
      return absl::OkStatus();
    }
    case Value::Kind::kDict: {
      const DictObj& d = v.dict();
      if (d.size() == 0) { *out += "{}"; return absl::OkStatus(); }
      std::vector<std::pair<std::string, const Value*>> entries;
      for (const auto& [k, x] : d.items()) {
        auto ks = KeyString(k);
        if (!ks.ok()) return ks.status();
        entries.emplace_back(std::move(*ks), &x);
      }
      if (o.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
      }
      out->push_back('{');
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) *out += o.item_sep;
        if (o.has_indent) Newline(o, level + 1, out);
        AppendJsonString(entries[i].first, o.ensure_ascii, out);
        *out += o.key_sep;
        if (auto s = Dump(*entries[i].second, o, level + 1, out); !s.ok()) return s;
      }
      if (o.has_indent) Newline(o, level, out);
      out->push_back('}');
      return absl::OkStatus();
    }
    default: return NotSerializable(v);
  }
}

}  // namespace

absl::Status DumpJson(const Value& v, const JsonDumpOptions& options, std::string* out) {
  return Dump(v, options, 0, out);
}

}  // namespace llmserve::chat::jinja
