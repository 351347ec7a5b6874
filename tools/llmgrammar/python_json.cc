#include "tools/llmgrammar/python_json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string_view>

namespace llmserve::llmgrammar {
namespace {

void DumpString(const std::string& s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
          *out += buf;
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

// repr(float): the shortest digits that round-trip; fixed notation when the decimal
// exponent is in [-4, 16), else d.ddde[+-]XX.
void DumpFloat(double v, std::string* out) {
  if (std::isnan(v)) { *out += "NaN"; return; }
  if (std::isinf(v)) { *out += v > 0 ? "Infinity" : "-Infinity"; return; }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string_view sci(buf, r.ptr - buf);  // [-]d[.ddd]e[+-]XX
  std::string sign;
  if (!sci.empty() && sci[0] == '-') { sign = "-"; sci.remove_prefix(1); }
  size_t e = sci.find('e');
  std::string digits(sci.substr(0, e));
  if (digits.size() > 1) digits.erase(1, 1);  // drop the point
  int exp = std::stoi(std::string(sci.substr(e + 1)));
  *out += sign;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      *out += "0." + std::string(-exp - 1, '0') + digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      *out += digits + std::string(exp + 1 - digits.size(), '0') + ".0";
    } else {
      *out += digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
    }
  } else {
    *out += digits.substr(0, 1);
    if (digits.size() > 1) *out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    *out += eb;
  }
}

void Dump(const nlohmann::ordered_json& v, std::string* out) {
  switch (v.type()) {
    case nlohmann::ordered_json::value_t::null: *out += "null"; break;
    case nlohmann::ordered_json::value_t::boolean: *out += v.get<bool>() ? "true" : "false"; break;
    case nlohmann::ordered_json::value_t::number_integer: *out += std::to_string(v.get<int64_t>()); break;
    case nlohmann::ordered_json::value_t::number_unsigned: *out += std::to_string(v.get<uint64_t>()); break;
    case nlohmann::ordered_json::value_t::number_float: DumpFloat(v.get<double>(), out); break;
    case nlohmann::ordered_json::value_t::string: DumpString(v.get_ref<const std::string&>(), out); break;
    case nlohmann::ordered_json::value_t::array: {
      out->push_back('[');
      bool first = true;
      for (const auto& x : v) {
        if (!first) *out += ", ";
        first = false;
        Dump(x, out);
      }
      out->push_back(']');
      break;
    }
    case nlohmann::ordered_json::value_t::object: {
      out->push_back('{');
      bool first = true;
      for (const auto& [k, x] : v.items()) {
        if (!first) *out += ", ";
        first = false;
        DumpString(k, out);
        *out += ": ";
        Dump(x, out);
      }
      out->push_back('}');
      break;
    }
    default: *out += "null"; break;
  }
}

}  // namespace

std::string PythonJsonDumps(const nlohmann::ordered_json& value) {
  std::string out;
  Dump(value, &out);
  return out;
}

}  // namespace llmserve::llmgrammar
