#include "model/chat/jinja_methods.h"

#include <utf8proc.h>

#include "absl/strings/str_cat.h"
#include "model/chat/jinja_interp.h"
#include "model/chat/jinja_pystr.h"

namespace llmserve::chat::jinja {
namespace {

using Result = absl::StatusOr<Value>;

absl::StatusOr<std::optional<std::string>> OptStr(const std::optional<Value>& v, std::string_view what) {
  if (!v || v->is_none()) return std::optional<std::string>();
  if (!v->is_string()) return TypeError(absl::StrCat(AV(what), " arg must be None or str"));
  return std::optional<std::string>(v->str());
}

int64_t OptInt(const std::optional<Value>& v, int64_t dflt) {
  return v && v->is_integral() ? v->as_int() : dflt;
}

Result Str(Interp& in, std::string s) {
  if (auto st = in.ChargeString(s.size()); !st.ok()) return st;
  return Value::String(std::move(s));
}

Result StrList(Interp& in, const std::vector<std::string>& parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (const auto& p : parts) items.push_back(Value::String(p));
  return in.MakeList(std::move(items));
}

Result Strip(Interp& in, const Value& self, CallArgs& a, bool l, bool r) {
  auto b = BindArgs("strip", a, {"chars"});
  if (!b.ok()) return b.status();
  auto chars = OptStr((*b)[0], "strip");
  if (!chars.ok()) return chars.status();
  return Str(in, PyStrip(self.str(), chars->has_value() ? &**chars : nullptr, l, r));
}

Result MStrip(Interp& in, const Value& s, CallArgs& a) { return Strip(in, s, a, true, true); }
Result MLStrip(Interp& in, const Value& s, CallArgs& a) { return Strip(in, s, a, true, false); }
Result MRStrip(Interp& in, const Value& s, CallArgs& a) { return Strip(in, s, a, false, true); }

Result Split(Interp& in, const Value& self, CallArgs& a, bool right) {
  auto b = BindArgs("split", a, {"sep", "maxsplit"});
  if (!b.ok()) return b.status();
  auto sep = OptStr((*b)[0], "sep");
  if (!sep.ok()) return sep.status();
  if (sep->has_value() && (*sep)->empty()) return ValueError("empty separator");
  const std::string* p = sep->has_value() ? &**sep : nullptr;
  const int64_t maxsplit = OptInt((*b)[1], -1);
  if (auto st = in.Step(self.str().size() / 64); !st.ok()) return st;
  return StrList(in, right ? PyRSplit(self.str(), p, maxsplit) : PySplit(self.str(), p, maxsplit));
}

Result MSplit(Interp& in, const Value& s, CallArgs& a) { return Split(in, s, a, false); }
Result MRSplit(Interp& in, const Value& s, CallArgs& a) { return Split(in, s, a, true); }

Result MSplitLines(Interp& in, const Value& s, CallArgs& a) {
  auto b = BindArgs("splitlines", a, {"keepends"});
  if (!b.ok()) return b.status();
  return StrList(in, PySplitLines(s.str()));
}

Result Affix(const Value& self, CallArgs& a, bool start) {
  auto b = BindArgs(start ? "startswith" : "endswith", a, {"prefix"});
  if (!b.ok()) return b.status();
  if (!(*b)[0]) return TypeError("startswith() takes at least 1 argument (0 given)");
  std::vector<Value> options;
  if ((*b)[0]->is_list() && (*b)[0]->list().is_tuple) options = (*b)[0]->list().items;
  else options.push_back(*(*b)[0]);
  const std::string& s = self.str();
  for (const Value& o : options) {
    if (!o.is_string()) {
      return TypeError(absl::StrCat(start ? "startswith" : "endswith",
                                    " first arg must be str or a tuple of str, not ", TypeName(o)));
    }
    const std::string& x = o.str();
    if (x.size() <= s.size() && (start ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0)) {
      return Value::Bool(true);
    }
  }
  return Value::Bool(false);
}

Result MStartsWith(Interp&, const Value& s, CallArgs& a) { return Affix(s, a, true); }
Result MEndsWith(Interp&, const Value& s, CallArgs& a) { return Affix(s, a, false); }

}  // namespace

size_t ReplacedSize(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
  size_t hits = 0;
  if (from.empty()) {
    hits = CodePointCount(s) + 1;
  } else {
    for (size_t pos = s.find(from); pos != std::string_view::npos; pos = s.find(from, pos + from.size())) ++hits;
  }
  if (count >= 0) hits = std::min<size_t>(hits, static_cast<size_t>(count));
  return s.size() - hits * from.size() + hits * to.size();
}

namespace {

Result MReplace(Interp& in, const Value& s, CallArgs& a) {
  auto b = BindArgs("replace", a, {"old", "new", "count"});
  if (!b.ok()) return b.status();
  if (!(*b)[0] || !(*b)[1] || !(*b)[0]->is_string() || !(*b)[1]->is_string()) {
    return TypeError("replace() arguments must be str");
  }
  const std::string& from = (*b)[0]->str();
  const std::string& to = (*b)[1]->str();
  const int64_t count = OptInt((*b)[2], -1);
  if (auto st = in.ChargeString(ReplacedSize(s.str(), from, to, count)); !st.ok()) return st;
  return Str(in, PyReplace(s.str(), from, to, OptInt((*b)[2], -1)));
}

Result MUpper(Interp& in, const Value& s, CallArgs&) { return Str(in, PyUpper(s.str())); }
Result MLower(Interp& in, const Value& s, CallArgs&) { return Str(in, PyLower(s.str())); }
Result MTitle(Interp& in, const Value& s, CallArgs&) { return Str(in, PyTitle(s.str())); }
Result MCapitalize(Interp& in, const Value& s, CallArgs&) { return Str(in, PyCapitalize(s.str())); }

Result Find(const Value& self, CallArgs& a, bool reverse, bool raise) {
  auto b = BindArgs("find", a, {"sub"});
  if (!b.ok()) return b.status();
  if (!(*b)[0] || !(*b)[0]->is_string()) return TypeError("must be str");
  const std::string& s = self.str();
  size_t pos = reverse ? s.rfind((*b)[0]->str()) : s.find((*b)[0]->str());
  if (pos == std::string::npos) {
    if (raise) return ValueError("substring not found");
    return Value::Int(-1);
  }
  return Value::Int(static_cast<int64_t>(CodePointCount(std::string_view(s).substr(0, pos))));
}

Result MFind(Interp&, const Value& s, CallArgs& a) { return Find(s, a, false, false); }
Result MRFind(Interp&, const Value& s, CallArgs& a) { return Find(s, a, true, false); }
Result MIndex(Interp&, const Value& s, CallArgs& a) { return Find(s, a, false, true); }
Result MRIndex(Interp&, const Value& s, CallArgs& a) { return Find(s, a, true, true); }

Result MStrCount(Interp&, const Value& self, CallArgs& a) {
  auto b = BindArgs("count", a, {"sub"});
  if (!b.ok()) return b.status();
  if (!(*b)[0] || !(*b)[0]->is_string()) return TypeError("must be str");
  const std::string& s = self.str();
  const std::string& sub = (*b)[0]->str();
  if (sub.empty()) return Value::Int(static_cast<int64_t>(CodePointCount(s) + 1));
  int64_t n = 0;
  for (size_t pos = s.find(sub); pos != std::string::npos; pos = s.find(sub, pos + sub.size())) ++n;
  return Value::Int(n);
}

Result MJoin(Interp& in, const Value& self, CallArgs& a) {
  auto b = BindArgs("join", a, {"iterable"});
  if (!b.ok()) return b.status();
  if (!(*b)[0]) return TypeError("join() takes exactly one argument (0 given)");
  auto items = in.Iterate(*(*b)[0]);
  if (!items.ok()) return TypeError("can only join an iterable");
  std::string out;
  for (size_t i = 0; i < items->size(); ++i) {
    const Value& v = (*items)[i];
    if (!v.is_string()) {
      return TypeError(absl::StrCat("sequence item ", i, ": expected str instance, ", TypeName(v), " found"));
    }
    if (i > 0) out += self.str();
    out += v.str();
    if (out.size() > in.limits().max_string_bytes) return in.ChargeString(out.size());
  }
  return Str(in, std::move(out));
}

template <bool (*Pred)(char32_t)>
Result IsAll(Interp&, const Value& self, CallArgs&) {
  std::vector<char32_t> cps = DecodeUtf8(self.str());
  if (cps.empty()) return Value::Bool(false);
  for (char32_t c : cps) {
    if (!Pred(c)) return Value::Bool(false);
  }
  return Value::Bool(true);
}

bool CpDigit(char32_t c) { return utf8proc_category(c) == UTF8PROC_CATEGORY_ND; }
bool CpAlpha(char32_t c) {
  auto k = utf8proc_category(c);
  return k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO;
}
bool CpAlnum(char32_t c) { return CpDigit(c) || CpAlpha(c); }

Result MIsLower(Interp&, const Value& s, CallArgs&) { return Value::Bool(PyIsLower(s.str())); }
Result MIsUpper(Interp&, const Value& s, CallArgs&) { return Value::Bool(PyIsUpper(s.str())); }

Result MListCount(Interp&, const Value& self, CallArgs& a) {
  if (a.pos.size() != 1) return TypeError("count() takes exactly one argument");
  int64_t n = 0;
  for (const Value& v : self.list().items) n += PyEquals(v, a.pos[0]);
  return Value::Int(n);
}

Result MListIndex(Interp&, const Value& self, CallArgs& a) {
  if (a.pos.empty()) return TypeError("index expected at least 1 argument, got 0");
  const auto& items = self.list().items;
  for (size_t i = 0; i < items.size(); ++i) {
    if (PyEquals(items[i], a.pos[0])) return Value::Int(static_cast<int64_t>(i));
  }
  return ValueError(absl::StrCat(PyRepr(a.pos[0]), " is not in list"));
}

Result MCopy(Interp&, const Value& self, CallArgs&) { return self; }

// dict.keys()/values()/items(): a list that prints and serializes as Python's views do.
Result View(Interp& in, std::vector<Value> items, const char* view) {
  return in.MakeList(std::move(items), false, false, view);
}

Result MItems(Interp& in, const Value& self, CallArgs&) {
  std::vector<Value> out;
  for (const auto& [k, v] : self.dict().items()) out.push_back(Value::List({k, v}, true));
  return View(in, std::move(out), "dict_items");
}

Result MKeys(Interp& in, const Value& self, CallArgs&) {
  std::vector<Value> out;
  for (const auto& [k, v] : self.dict().items()) out.push_back(k);
  return View(in, std::move(out), "dict_keys");
}

Result MValues(Interp& in, const Value& self, CallArgs&) {
  std::vector<Value> out;
  for (const auto& [k, v] : self.dict().items()) out.push_back(v);
  return View(in, std::move(out), "dict_values");
}

Result MGet(Interp&, const Value& self, CallArgs& a) {
  auto b = BindArgs("get", a, {"key", "default"});
  if (!b.ok()) return b.status();
  if (!(*b)[0]) return TypeError("get expected at least 1 argument, got 0");
  const Value* v = self.dict().Find(*(*b)[0]);
  if (v != nullptr) return *v;
  return (*b)[1] ? *(*b)[1] : Value::None();
}

struct MethodEntry {
  std::string_view name;
  BuiltinFunction::Fn fn;  // nullptr: exists but blocked by the sandbox
};

constexpr MethodEntry kStrMethods[] = {
    {"strip", MStrip}, {"lstrip", MLStrip}, {"rstrip", MRStrip}, {"split", MSplit},
    {"rsplit", MRSplit}, {"splitlines", MSplitLines}, {"startswith", MStartsWith},
    {"endswith", MEndsWith}, {"replace", MReplace}, {"upper", MUpper}, {"lower", MLower},
    {"title", MTitle}, {"capitalize", MCapitalize}, {"find", MFind}, {"rfind", MRFind},
    {"index", MIndex}, {"rindex", MRIndex}, {"count", MStrCount}, {"join", MJoin},
    {"isdigit", IsAll<CpDigit>}, {"isnumeric", IsAll<CpDigit>}, {"isdecimal", IsAll<CpDigit>},
    {"isalpha", IsAll<CpAlpha>}, {"isalnum", IsAll<CpAlnum>}, {"isspace", IsAll<IsPySpace>},
    {"islower", MIsLower}, {"isupper", MIsUpper},
};
constexpr MethodEntry kListMethods[] = {
    {"count", MListCount}, {"index", MListIndex}, {"copy", MCopy},
    {"append", nullptr}, {"extend", nullptr}, {"insert", nullptr}, {"pop", nullptr},
    {"remove", nullptr}, {"reverse", nullptr}, {"sort", nullptr}, {"clear", nullptr},
};
constexpr MethodEntry kTupleMethods[] = {{"count", MListCount}, {"index", MListIndex}};
constexpr MethodEntry kDictMethods[] = {
    {"items", MItems}, {"keys", MKeys}, {"values", MValues}, {"get", MGet}, {"copy", MCopy},
    {"pop", nullptr}, {"popitem", nullptr}, {"setdefault", nullptr}, {"update", nullptr},
    {"clear", nullptr},
};

template <size_t N>
std::optional<Value> Find(const MethodEntry (&table)[N], const Value& obj, std::string_view name) {
  for (const MethodEntry& m : table) {
    if (m.name != name) continue;
    if (m.fn == nullptr) {
      return Value::Undefined(absl::StrCat("access to attribute '", AV(name), "' of '", TypeName(obj),
                                           "' object is unsafe."), true);
    }
    return Value::Function(std::make_shared<BuiltinFunction>(std::string(name), obj, m.fn));
  }
  return std::nullopt;
}

}  // namespace

std::string PyTitle(std::string_view s) {
  std::string out;
  bool prev_cased = false;
  for (char32_t c : DecodeUtf8(s)) {
    const bool cased = utf8proc_isupper(c) || utf8proc_islower(c);
    char32_t r = c;
    if (cased) r = static_cast<char32_t>(prev_cased ? utf8proc_tolower(c) : utf8proc_toupper(c));
    prev_cased = cased;
    AppendUtf8(r, &out);
  }
  return out;
}

std::optional<Value> LookupMethod(const Value& obj, std::string_view name) {
  switch (obj.kind()) {
    case Value::Kind::kString: return Find(kStrMethods, obj, name);
    case Value::Kind::kList:
      return obj.list().is_tuple ? Find(kTupleMethods, obj, name) : Find(kListMethods, obj, name);
    case Value::Kind::kDict: return Find(kDictMethods, obj, name);
    default: return std::nullopt;
  }
}

}  // namespace llmserve::chat::jinja
