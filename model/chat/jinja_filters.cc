// Scalar and string filters, the filter table, and Interp::ApplyFilter.
#include "model/chat/jinja_filters.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "model/chat/jinja_format.h"
#include "model/chat/jinja_json.h"
#include "model/chat/jinja_methods.h"
#include "model/chat/jinja_pystr.h"

namespace llmserve::chat::jinja {
namespace {

using Result = absl::StatusOr<Value>;

Result Str(Interp& in, std::string s) {
  if (auto st = in.ChargeString(s.size()); !st.ok()) return st;
  return Value::String(std::move(s));
}

std::string SoftStr(const Value& v) { return PyStr(v); }

Result FTrim(Interp& in, const Value& v, CallArgs& a) {
  auto b = BindArgs("trim", a, {"chars"});
  if (!b.ok()) return b.status();
  if ((*b)[0] && (*b)[0]->is_string()) return Str(in, PyStrip(SoftStr(v), &(*b)[0]->str(), true, true));
  return Str(in, PyStrip(SoftStr(v), nullptr, true, true));
}

Result FUpper(Interp& in, const Value& v, CallArgs&) { return Str(in, PyUpper(SoftStr(v))); }
Result FLower(Interp& in, const Value& v, CallArgs&) { return Str(in, PyLower(SoftStr(v))); }
Result FCapitalize(Interp& in, const Value& v, CallArgs&) { return Str(in, PyCapitalize(SoftStr(v))); }

Result FTitle(Interp& in, const Value& v, CallArgs&) {
  // jinja2: words split at whitespace, '-', and opening brackets; first letter upper, rest lower.
  std::string out;
  bool start = true;
  for (char32_t c : DecodeUtf8(SoftStr(v))) {
    const bool sep = IsPySpace(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      AppendUtf8(c, &out);
      start = true;
      continue;
    }
    std::string one;
    AppendUtf8(c, &one);
    out += start ? PyUpper(one) : PyLower(one);
    start = false;
  }
  return Str(in, std::move(out));
}

Result FString(Interp& in, const Value& v, CallArgs&) {
  if (v.is_string()) return v;
  return Str(in, SoftStr(v));
}

Result FEscape(Interp& in, const Value& v, CallArgs&) {
  std::string out;
  for (char c : SoftStr(v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return Str(in, std::move(out));
}

Result FReplace(Interp& in, const Value& v, CallArgs& a) {
  auto b = BindArgs("replace", a, {"old", "new", "count"});
  if (!b.ok()) return b.status();
  if (!(*b)[0] || !(*b)[1]) return TypeError("replace() missing required arguments");
  const std::string s = SoftStr(v), from = SoftStr(*(*b)[0]), to = SoftStr(*(*b)[1]);
  const int64_t count = (*b)[2] && (*b)[2]->is_integral() ? (*b)[2]->as_int() : -1;
  if (auto st = in.ChargeString(ReplacedSize(s, from, to, count)); !st.ok()) return st;
  return Value::String(PyReplace(s, from, to, count));
}

Result FIndent(Interp& in, const Value& v, CallArgs& a) {
  auto b = BindArgs("indent", a, {"width", "first", "blank"});
  if (!b.ok()) return b.status();
  std::string ind = "    ";
  if ((*b)[0]) {
    if ((*b)[0]->is_string()) ind = (*b)[0]->str();
    else if ((*b)[0]->is_integral()) ind = std::string(std::clamp<int64_t>((*b)[0]->as_int(), 0, 4096), ' ');
    else return TypeError("indent width must be int or str");
  }
  const bool first = (*b)[1] && Truthy(*(*b)[1]);
  const bool blank = (*b)[2] && Truthy(*(*b)[2]);
  std::string s = SoftStr(v) + "\n";
  std::vector<std::string> lines = PySplitLines(s);
  size_t total = s.size() + (lines.size() + 1) * ind.size();
  if (auto st = in.ChargeString(total); !st.ok()) return st;
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) rv += "\n" + ind;
      rv += lines[i];
    }
  } else if (!lines.empty()) {
    rv = lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += "\n";
      if (!lines[i].empty()) rv += ind;
      rv += lines[i];
    }
  }
  if (first) rv = ind + rv;
  return Value::String(std::move(rv));
}

Result FCenter(Interp& in, const Value& v, CallArgs& a) {
  auto b = BindArgs("center", a, {"width"});
  if (!b.ok()) return b.status();
  const std::string s = SoftStr(v);
  const int64_t width = (*b)[0] && (*b)[0]->is_integral() ? (*b)[0]->as_int() : 80;
  const int64_t len = static_cast<int64_t>(CodePointCount(s));
  if (width <= len) return Value::String(s);
  if (auto st = in.ChargeString(s.size() + static_cast<size_t>(width - len)); !st.ok()) return st;
  const int64_t marg = width - len;
  const int64_t left = marg / 2 + (marg & width & 1);
  return Value::String(std::string(left, ' ') + s + std::string(marg - left, ' '));
}

Result FWordCount(Interp&, const Value& v, CallArgs&) {
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : DecodeUtf8(SoftStr(v))) {
    const bool w = c == '_' || (c < 0x80 ? std::isalnum(static_cast<int>(c)) != 0 : !IsPySpace(c));
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::Int(n);
}

Result FDefault(Interp&, const Value& v, CallArgs& a) {
  auto b = BindArgs("default", a, {"default_value", "boolean"});
  if (!b.ok()) return b.status();
  const bool boolean = (*b)[1] && Truthy(*(*b)[1]);
  if (v.is_undefined() || (boolean && !Truthy(v))) return (*b)[0] ? *(*b)[0] : Value::String("");
  return v;
}

Result FLength(Interp&, const Value& v, CallArgs&) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return Value::Int(0);
    case Value::Kind::kString: return Value::Int(static_cast<int64_t>(CodePointCount(v.str())));
    case Value::Kind::kList:
      if (v.list().is_iter) break;
      return Value::Int(static_cast<int64_t>(v.list().items.size()));
    case Value::Kind::kDict: return Value::Int(static_cast<int64_t>(v.dict().size()));
    default: break;
  }
  return TypeError(absl::StrCat("object of type '", TypeName(v), "' has no len()"));
}

Result FSafe(Interp& in, const Value& v, CallArgs& a) { return FString(in, v, a); }

Result FAbs(Interp&, const Value& v, CallArgs&) {
  if (v.is_float()) return Value::Float(std::fabs(v.as_float()));
  if (v.is_integral()) {
    if (v.as_int() == INT64_MIN) return absl::InvalidArgumentError("OverflowError: integer overflow");
    return Value::Int(std::llabs(v.as_int()));
  }
  if (v.is_undefined()) return UndefinedError(v);
  return TypeError(absl::StrCat("bad operand type for abs(): '", TypeName(v), "'"));
}

Result FRound(Interp&, const Value& v, CallArgs& a) {
  auto b = BindArgs("round", a, {"precision", "method"});
  if (!b.ok()) return b.status();
  if (v.is_undefined()) return UndefinedError(v);
  if (!v.is_number()) return TypeError(absl::StrCat("type ", TypeName(v), " doesn't define __round__ method"));
  const int64_t prec = (*b)[0] && (*b)[0]->is_integral() ? std::clamp<int64_t>((*b)[0]->as_int(), -300, 300) : 0;
  const std::string method = (*b)[1] && (*b)[1]->is_string() ? (*b)[1]->str() : "common";
  if (method != "common" && method != "ceil" && method != "floor") {
    return absl::InvalidArgumentError("FilterArgumentError: method must be common, ceil or floor");
  }
  const double x = v.as_float();
  const double scale = std::pow(10.0, static_cast<double>(prec));
  if (method == "ceil") return Value::Float(std::ceil(x * scale) / scale);
  if (method == "floor") return Value::Float(std::floor(x * scale) / scale);
  if (!std::isfinite(x)) return Value::Float(x);
  if (prec == 0) return Value::Float(std::nearbyint(x));
  if (prec > 0) {  // correctly rounded, half to even on the exact binary value (as CPython)
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(prec), x);
    return Value::Float(std::strtod(buf, nullptr));
  }
  return Value::Float(std::nearbyint(x * scale) / scale);
}

Result FInt(Interp&, const Value& v, CallArgs& a) {
  auto b = BindArgs("int", a, {"default", "base"});
  if (!b.ok()) return b.status();
  const Value dflt = (*b)[0] ? *(*b)[0] : Value::Int(0);
  const int base = (*b)[1] && (*b)[1]->is_integral() ? static_cast<int>((*b)[1]->as_int()) : 10;
  if (v.is_integral()) return Value::Int(v.as_int());
  if (v.is_float()) {
    const double d = v.as_float();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return dflt;
    return Value::Int(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    std::string s = PyStrip(v.str(), nullptr, true, true);
    std::string digits;
    for (char c : s) if (c != '_') digits.push_back(c);
    if (!digits.empty() && base >= 2 && base <= 36) {
      char* end = nullptr;
      errno = 0;
      long long r = std::strtoll(digits.c_str(), &end, base);
      if (errno == 0 && end != nullptr && *end == '\0') return Value::Int(r);
    }
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end != nullptr && *end == '\0' && std::isfinite(d) && std::fabs(d) < 9.2e18) {
      return Value::Int(static_cast<int64_t>(d));
    }
  }
  return dflt;
}

Result FFloat(Interp&, const Value& v, CallArgs& a) {
  auto b = BindArgs("float", a, {"default"});
  if (!b.ok()) return b.status();
  if (v.is_number()) return Value::Float(v.as_float());
  if (v.is_string()) {
    std::string s = PyStrip(v.str(), nullptr, true, true);
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end != nullptr && *end == '\0') return Value::Float(d);
  }
  return (*b)[0] ? *(*b)[0] : Value::Float(0.0);
}

Result FToJson(Interp& in, const Value& v, CallArgs& a) {
  auto b = BindArgs("tojson", a, {"ensure_ascii", "indent", "separators", "sort_keys"});
  if (!b.ok()) return b.status();
  JsonDumpOptions o;
  o.ensure_ascii = (*b)[0] && Truthy(*(*b)[0]);
  if ((*b)[1] && !(*b)[1]->is_none()) {
    o.has_indent = true;
    o.item_sep.assign(1, ',');  // (not = ",": GCC 12 -Wrestrict false positive)
    if ((*b)[1]->is_string()) o.indent = (*b)[1]->str();
    else if ((*b)[1]->is_integral()) o.indent = std::string(std::clamp<int64_t>((*b)[1]->as_int(), 0, 256), ' ');
    else return TypeError("indent must be int or str");
  }
  if ((*b)[2] && !(*b)[2]->is_none()) {
    const Value& sep = *(*b)[2];
    if (!sep.is_list() || sep.list().items.size() != 2 || !sep.list().items[0].is_string() ||
        !sep.list().items[1].is_string()) {
      return TypeError("separators must be a pair of strings");
    }
    o.item_sep = sep.list().items[0].str();
    o.key_sep = sep.list().items[1].str();
  }
  o.sort_keys = (*b)[3] && Truthy(*(*b)[3]);
  o.max_bytes = in.limits().max_string_bytes;
  std::string out;
  if (auto st = DumpJson(v, o, &out); !st.ok()) return st;
  return Str(in, std::move(out));
}

Result FAttr(Interp& in, const Value& v, CallArgs& a) {
  auto b = BindArgs("attr", a, {"name"});
  if (!b.ok()) return b.status();
  if (!(*b)[0] || !(*b)[0]->is_string()) return TypeError("attr() name must be a string");
  return in.GetAttr(v, (*b)[0]->str());
}

Result FFormat(Interp& in, const Value& v, CallArgs& a) {
  if (!a.kw.empty()) return TypeError("format() keyword arguments are not supported");
  auto s = PyPercentFormat(SoftStr(v), a.pos, in.limits().max_string_bytes);
  if (!s.ok()) return s.status();
  return Str(in, std::move(*s));
}

Result FTruncate(Interp& in, const Value& v, CallArgs& a) {
  auto b = BindArgs("truncate", a, {"length", "killwords", "end", "leeway"});
  if (!b.ok()) return b.status();
  const std::string s = SoftStr(v);
  const int64_t length = (*b)[0] && (*b)[0]->is_integral() ? (*b)[0]->as_int() : 255;
  const bool killwords = (*b)[1] && Truthy(*(*b)[1]);
  const std::string end = (*b)[2] ? SoftStr(*(*b)[2]) : "...";
  const int64_t leeway = (*b)[3] && (*b)[3]->is_integral() ? (*b)[3]->as_int() : 5;
  const int64_t end_len = static_cast<int64_t>(CodePointCount(end));
  if (length < end_len) return absl::InvalidArgumentError(absl::StrCat("AssertionError: expected length >= ", end_len, ", got ", length));
  if (leeway < 0) return absl::InvalidArgumentError(absl::StrCat("AssertionError: expected leeway >= 0, got ", leeway));
  std::vector<size_t> offs = CodePointOffsets(s);
  const int64_t n = static_cast<int64_t>(offs.size()) - 1;
  if (n <= length + leeway) return Value::String(s);
  std::string head = s.substr(0, offs[length - end_len]);
  if (!killwords) {
    size_t sp = head.rfind(' ');
    if (sp != std::string::npos) head.resize(sp);
  }
  return Str(in, head + end);
}

struct FilterEntry {
  std::string_view name;
  FilterFn fn;
};

constexpr FilterEntry kFilters[] = {
    {"trim", FTrim}, {"upper", FUpper}, {"lower", FLower}, {"capitalize", FCapitalize},
    {"title", FTitle}, {"string", FString}, {"e", FEscape}, {"escape", FEscape},
    {"forceescape", FEscape}, {"replace", FReplace}, {"indent", FIndent}, {"center", FCenter},
    {"wordcount", FWordCount}, {"default", FDefault}, {"d", FDefault}, {"length", FLength},
    {"count", FLength}, {"safe", FSafe}, {"abs", FAbs}, {"round", FRound}, {"int", FInt},
    {"float", FFloat}, {"tojson", FToJson}, {"attr", FAttr}, {"format", FFormat}, {"truncate", FTruncate},
};

FilterFn FindScalarFilter(std::string_view name) {
  for (const auto& f : kFilters) {
    if (f.name == name) return f.fn;
  }
  return nullptr;
}

}  // namespace

bool IsKnownFilter(std::string_view name) {
  return FindScalarFilter(name) != nullptr || FindSeqFilter(name) != nullptr;
}

Value IgnoreCase(const Value& v) { return v.is_string() ? Value::String(PyLower(v.str())) : v; }

absl::StatusOr<Value> GetAttrPath(Interp& in, const Value& item, const std::string& path) {
  Value cur = item;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos && part.size() < 18;
    auto next = in.GetItem(cur, digits ? Value::Int(std::stoll(part)) : Value::String(part));
    if (!next.ok()) return next.status();
    cur = std::move(*next);
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

absl::StatusOr<Value> Interp::ApplyFilter(const std::string& name, const Value& v, CallArgs args) {
  FilterFn fn = FindScalarFilter(name);
  if (fn == nullptr) fn = FindSeqFilter(name);
  if (fn == nullptr) return RuntimeError(absl::StrCat("No filter named '", name, "'."));
  return fn(*this, v, args);
}

}  // namespace llmserve::chat::jinja
