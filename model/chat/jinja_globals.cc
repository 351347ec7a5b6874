// Global functions: range, namespace, dict, and transformers' raise_exception / strftime_now.
#include <ctime>

#include "absl/strings/str_cat.h"
#include "model/chat/jinja_filters.h"
#include "model/chat/jinja_pystr.h"

namespace llmserve::chat::jinja {
namespace {

using Result = absl::StatusOr<Value>;

Result GRange(Interp& in, const Value&, CallArgs& a) {
  if (!a.kw.empty()) return TypeError("range() takes no keyword arguments");
  if (a.pos.empty() || a.pos.size() > 3) return TypeError("range expected 1 to 3 arguments");
  int64_t v[3] = {0, 0, 1};
  for (size_t i = 0; i < a.pos.size(); ++i) {
    if (!a.pos[i].is_integral()) {
      return TypeError(absl::StrCat("'", TypeName(a.pos[i]), "' object cannot be interpreted as an integer"));
    }
  }
  if (a.pos.size() == 1) {
    v[1] = a.pos[0].as_int();
  } else {
    v[0] = a.pos[0].as_int();
    v[1] = a.pos[1].as_int();
    if (a.pos.size() == 3) v[2] = a.pos[2].as_int();
  }
  if (v[2] == 0) return ValueError("range() arg 3 must not be zero");
  const __int128 span = v[2] > 0 ? static_cast<__int128>(v[1]) - v[0] : static_cast<__int128>(v[0]) - v[1];
  const __int128 step = v[2] > 0 ? v[2] : -static_cast<__int128>(v[2]);
  const __int128 count = span <= 0 ? 0 : (span + step - 1) / step;
  if (count > static_cast<__int128>(in.limits().max_collection_size)) {
    return in.ChargeCollection(in.limits().max_collection_size + 1);
  }
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(count));
  for (__int128 i = 0; i < count; ++i) items.push_back(Value::Int(static_cast<int64_t>(v[0] + i * v[2])));
  return in.MakeList(std::move(items));
}

Result GDict(Interp& in, const Value&, CallArgs& a) {
  DictObj d;
  if (!a.pos.empty()) {
    if (a.pos.size() > 1 || !a.pos[0].is_dict()) return TypeError("dict() takes a mapping");
    d = a.pos[0].dict();
  }
  for (auto& [k, v] : a.kw) d.Set(Value::String(k), v);
  return in.MakeDict(std::move(d));
}

Result GNamespace(Interp& in, const Value&, CallArgs& a) {
  DictObj d;
  if (!a.pos.empty()) {
    if (a.pos.size() > 1 || !a.pos[0].is_dict()) return TypeError("namespace() takes a mapping");
    d = a.pos[0].dict();
  }
  for (auto& [k, v] : a.kw) d.Set(Value::String(k), v);
  if (d.depth() > in.limits().max_value_depth) return absl::ResourceExhaustedError("value nested too deeply");
  return in.MakeNamespace(std::move(d));
}

Result GRaise(Interp&, const Value&, CallArgs& a) {
  std::string msg = a.pos.empty() ? "" : PyStr(a.pos[0]);
  return absl::InvalidArgumentError(absl::StrCat("TemplateError: ", msg));
}

Result GStrftime(Interp& in, const Value&, CallArgs& a) {
  if (a.pos.size() != 1 || !a.pos[0].is_string()) return TypeError("strftime_now() takes one string argument");
  const std::string& fmt = a.pos[0].str();
  if (fmt.size() > 1024) return ValueError("strftime format too long");
  const std::time_t t = std::chrono::system_clock::to_time_t(in.options().now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  if (fmt.empty()) return Value::String("");
  std::string buf(256 + fmt.size() * 16, '\0');
  size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
  if (n == 0) return Value::String("");
  buf.resize(n);
  return Value::String(std::move(buf));
}

void Add(Frame* f, const char* name, BuiltinFunction::Fn fn) {
  f->vars[name] = Value::Function(std::make_shared<BuiltinFunction>(name, Value(), fn));
}

}  // namespace

void AddGlobals(Frame* frame) {
  Add(frame, "range", GRange);
  Add(frame, "dict", GDict);
  Add(frame, "namespace", GNamespace);
  Add(frame, "raise_exception", GRaise);
  Add(frame, "strftime_now", GStrftime);
}

}  // namespace llmserve::chat::jinja
