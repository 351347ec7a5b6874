// Sequence filters: list, first, last, join, items, map, select/reject(attr), sort, unique,
// reverse, sum, min, max, batch, dictsort.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "model/chat/jinja_filters.h"
#include "model/chat/jinja_pystr.h"

namespace llmserve::chat::jinja {
namespace {

using Result = absl::StatusOr<Value>;

Result FList(Interp& in, const Value& v, CallArgs&) {
  auto items = in.Iterate(v);
  if (!items.ok()) return items.status();
  return in.MakeList(std::move(*items));
}

Result FFirst(Interp& in, const Value& v, CallArgs&) {
  auto items = in.Iterate(v);
  if (!items.ok()) return items.status();
  if (items->empty()) return Value::Undefined("No first item, sequence was empty.");
  return (*items)[0];
}

Result FLast(Interp& in, const Value& v, CallArgs&) {
  if (v.is_list() && v.list().is_iter) return TypeError("'generator' object is not reversible");
  auto items = in.Iterate(v);
  if (!items.ok()) return items.status();
  if (items->empty()) return Value::Undefined("No last item, sequence was empty.");
  return items->back();
}

Result FItems(Interp& in, const Value& v, CallArgs&) {
  if (v.is_undefined()) return in.MakeList({}, false, true);
  if (!v.is_dict()) return TypeError("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, x] : v.dict().items()) out.push_back(Value::List({k, x}, true));
  return in.MakeList(std::move(out), false, true);
}

// The elements, mapped through `attribute` when given (jinja2's attribute= argument).
absl::StatusOr<std::vector<Value>> Keys(Interp& in, const std::vector<Value>& items,
                                        const std::optional<Value>& attribute, bool ignore_case) {
  std::vector<Value> keys;
  keys.reserve(items.size());
  for (const Value& item : items) {
    Value k = item;
    if (attribute && !attribute->is_none()) {
      auto a = GetAttrPath(in, item, PyStr(*attribute));
      if (!a.ok()) return a.status();
      k = std::move(*a);
    }
    keys.push_back(ignore_case ? IgnoreCase(k) : k);
  }
  return keys;
}

Result FJoin(Interp& in, const Value& v, CallArgs& a) {
  auto b = BindArgs("join", a, {"d", "attribute"});
  if (!b.ok()) return b.status();
  auto items = in.Iterate(v);
  if (!items.ok()) return items.status();
  auto keys = Keys(in, *items, (*b)[1], false);
  if (!keys.ok()) return keys.status();
  const std::string sep = (*b)[0] ? PyStr(*(*b)[0]) : "";
  std::string out;
  for (size_t i = 0; i < keys->size(); ++i) {
    if (i > 0) out += sep;
    out += PyStr((*keys)[i]);
    if (out.size() > in.limits().max_string_bytes) return in.ChargeString(out.size());
  }
  if (auto st = in.ChargeString(out.size()); !st.ok()) return st;
  return Value::String(std::move(out));
}

Result FMap(Interp& in, const Value& v, CallArgs& a) {
  auto items = in.Iterate(v);
  if (!items.ok()) return items.status();
  std::vector<Value> out;
  std::optional<Value> attribute, dflt;
  for (auto& [k, x] : a.kw) {
    if (k == "attribute") attribute = x;
    else if (k == "default") dflt = x;
  }
  if (attribute) {
    if (!a.pos.empty()) return absl::InvalidArgumentError("FilterArgumentError: map() with attribute takes no positional arguments");
    for (const Value& item : *items) {
      auto r = GetAttrPath(in, item, PyStr(*attribute));
      if (!r.ok()) return r.status();
      out.push_back(r->is_undefined() && dflt ? *dflt : *r);
    }
    return in.MakeList(std::move(out), false, true);
  }
  if (a.pos.empty() || !a.pos[0].is_string()) return absl::InvalidArgumentError("FilterArgumentError: map requires a filter argument");
  const std::string name = a.pos[0].str();
  if (!IsKnownFilter(name)) return RuntimeError(absl::StrCat("No filter named '", name, "'."));
  for (const Value& item : *items) {
    CallArgs fa;
    fa.pos.assign(a.pos.begin() + 1, a.pos.end());
    fa.kw = a.kw;
    auto r = in.ApplyFilter(name, item, std::move(fa));
    if (!r.ok()) return r.status();
    out.push_back(std::move(*r));
  }
  return in.MakeList(std::move(out), false, true);
}

// select / reject / selectattr / rejectattr.
Result Select(Interp& in, const Value& v, CallArgs& a, bool want, bool by_attr) {
  auto items = in.Iterate(v);
  if (!items.ok()) return items.status();
  size_t next = 0;
  std::string attr;
  if (by_attr) {
    if (a.pos.empty()) return TypeError("selectattr requires an attribute name");
    attr = PyStr(a.pos[next++]);
  }
  std::string test;
  if (next < a.pos.size()) {
    if (!a.pos[next].is_string()) return TypeError("test name must be a string");
    test = a.pos[next++].str();
    if (!IsKnownTest(test)) return RuntimeError(absl::StrCat("No test named '", test, "'."));
  }
  std::vector<Value> out;
  for (const Value& item : *items) {
    Value subject = item;
    if (by_attr) {
      auto s = GetAttrPath(in, item, attr);
      if (!s.ok()) return s.status();
      subject = std::move(*s);
    }
    bool ok;
    if (test.empty()) {
      ok = Truthy(subject);
    } else {
      CallArgs ta;
      ta.pos.assign(a.pos.begin() + next, a.pos.end());
      ta.kw = a.kw;
      auto r = in.ApplyTest(test, subject, std::move(ta));
      if (!r.ok()) return r.status();
      ok = *r;
    }
    if (ok == want) out.push_back(item);
  }
  return in.MakeList(std::move(out), false, true);
}

Result FSelect(Interp& in, const Value& v, CallArgs& a) { return Select(in, v, a, true, false); }
Result FReject(Interp& in, const Value& v, CallArgs& a) { return Select(in, v, a, false, false); }
Result FSelectAttr(Interp& in, const Value& v, CallArgs& a) { return Select(in, v, a, true, true); }
Result FRejectAttr(Interp& in, const Value& v, CallArgs& a) { return Select(in, v, a, false, true); }

// Stable sort of indices by keys; the first comparison error is returned.
absl::Status SortIndices(Interp& in, const std::vector<Value>& keys, bool reverse, std::vector<size_t>* idx) {
  idx->resize(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) (*idx)[i] = i;
  absl::Status err;
  const size_t n = keys.size();
  if (auto st = in.Step(n * (1 + static_cast<uint64_t>(std::log2(n + 1)))); !st.ok()) return st;
  std::stable_sort(idx->begin(), idx->end(), [&](size_t x, size_t y) {
    if (!err.ok()) return false;
    auto lt = reverse ? in.Less(keys[y], keys[x]) : in.Less(keys[x], keys[y]);
    if (!lt.ok()) {
      err = lt.status();
      return false;
    }
    return *lt;
  });
  return err;
}

Result FSort(Interp& in, const Value& v, CallArgs& a) {
  auto b = BindArgs("sort", a, {"reverse", "case_sensitive", "attribute"});
  if (!b.ok()) return b.status();
  auto items = in.Iterate(v);
  if (!items.ok()) return items.status();
  auto keys = Keys(in, *items, (*b)[2], !((*b)[1] && Truthy(*(*b)[1])));
  if (!keys.ok()) return keys.status();
  std::vector<size_t> idx;
  if (auto st = SortIndices(in, *keys, (*b)[0] && Truthy(*(*b)[0]), &idx); !st.ok()) return st;
  std::vector<Value> out;
  for (size_t i : idx) out.push_back((*items)[i]);
  return in.MakeList(std::move(out));
}

Result FUnique(Interp& in, const Value& v, CallArgs& a) {
  auto b = BindArgs("unique", a, {"case_sensitive", "attribute"});
  if (!b.ok()) return b.status();
  auto items = in.Iterate(v);
  if (!items.ok()) return items.status();
  auto keys = Keys(in, *items, (*b)[1], !((*b)[0] && Truthy(*(*b)[0])));
  if (!keys.ok()) return keys.status();
  std::vector<Value> out, seen;
  if (auto st = in.Step(items->size() * items->size() / 64); !st.ok()) return st;
  for (size_t i = 0; i < items->size(); ++i) {
    bool dup = false;
    for (const Value& s : seen) {
      if (PyEquals(s, (*keys)[i])) { dup = true; break; }
    }
    if (dup) continue;
    seen.push_back((*keys)[i]);
    out.push_back((*items)[i]);
  }
  return in.MakeList(std::move(out), false, true);
}

Result FReverse(Interp& in, const Value& v, CallArgs&) {
  if (v.is_string()) {
    std::vector<char32_t> cps = DecodeUtf8(v.str());
    std::string out;
    for (auto it = cps.rbegin(); it != cps.rend(); ++it) AppendUtf8(*it, &out);
    return Value::String(std::move(out));
  }
  auto items = in.Iterate(v);
  if (!items.ok()) return items.status();
  std::reverse(items->begin(), items->end());
  return in.MakeList(std::move(*items), false, true);
}

Result FSum(Interp& in, const Value& v, CallArgs& a) {
  auto b = BindArgs("sum", a, {"attribute", "start"});
  if (!b.ok()) return b.status();
  auto items = in.Iterate(v);
  if (!items.ok()) return items.status();
  auto keys = Keys(in, *items, (*b)[0], false);
  if (!keys.ok()) return keys.status();
  Value total = (*b)[1] ? *(*b)[1] : Value::Int(0);
  for (const Value& k : *keys) {
    auto r = in.BinaryOp("+", total, k);
    if (!r.ok()) return r.status();
    total = std::move(*r);
  }
  return total;
}

Result MinMax(Interp& in, const Value& v, CallArgs& a, bool max) {
  auto b = BindArgs(max ? "max" : "min", a, {"case_sensitive", "attribute"});
  if (!b.ok()) return b.status();
  auto items = in.Iterate(v);
  if (!items.ok()) return items.status();
  if (items->empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  auto keys = Keys(in, *items, (*b)[1], !((*b)[0] && Truthy(*(*b)[0])));
  if (!keys.ok()) return keys.status();
  size_t best = 0;
  for (size_t i = 1; i < keys->size(); ++i) {
    auto lt = max ? in.Less((*keys)[best], (*keys)[i]) : in.Less((*keys)[i], (*keys)[best]);
    if (!lt.ok()) return lt.status();
    if (*lt) best = i;
  }
  return (*items)[best];
}

Result FMin(Interp& in, const Value& v, CallArgs& a) { return MinMax(in, v, a, false); }
Result FMax(Interp& in, const Value& v, CallArgs& a) { return MinMax(in, v, a, true); }

Result FBatch(Interp& in, const Value& v, CallArgs& a) {
  auto b = BindArgs("batch", a, {"linecount", "fill_with"});
  if (!b.ok()) return b.status();
  if (!(*b)[0] || !(*b)[0]->is_integral() || (*b)[0]->as_int() <= 0) {
    return absl::InvalidArgumentError("FilterArgumentError: batch linecount must be a positive int");
  }
  const size_t n = static_cast<size_t>(std::min<int64_t>((*b)[0]->as_int(), in.limits().max_collection_size));
  auto items = in.Iterate(v);
  if (!items.ok()) return items.status();
  std::vector<Value> out, cur;
  for (const Value& x : *items) {
    cur.push_back(x);
    if (cur.size() == n) {
      auto l = in.MakeList(std::move(cur));
      if (!l.ok()) return l;
      out.push_back(std::move(*l));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    if ((*b)[1] && !(*b)[1]->is_none()) {
      if (auto st = in.ChargeCollection(n); !st.ok()) return st;
      while (cur.size() < n) cur.push_back(*(*b)[1]);
    }
    auto l = in.MakeList(std::move(cur));
    if (!l.ok()) return l;
    out.push_back(std::move(*l));
  }
  return in.MakeList(std::move(out), false, true);
}

Result FDictSort(Interp& in, const Value& v, CallArgs& a) {
  auto b = BindArgs("dictsort", a, {"case_sensitive", "by", "reverse"});
  if (!b.ok()) return b.status();
  if (!v.is_dict()) return TypeError("dictsort expects a mapping");
  const bool by_value = (*b)[1] && (*b)[1]->is_string() && (*b)[1]->str() == "value";
  const bool cs = (*b)[0] && Truthy(*(*b)[0]);
  std::vector<Value> pairs, keys;
  for (const auto& [k, x] : v.dict().items()) {
    pairs.push_back(Value::List({k, x}, true));
    keys.push_back(cs ? (by_value ? x : k) : IgnoreCase(by_value ? x : k));
  }
  std::vector<size_t> idx;
  if (auto st = SortIndices(in, keys, (*b)[2] && Truthy(*(*b)[2]), &idx); !st.ok()) return st;
  std::vector<Value> out;
  for (size_t i : idx) out.push_back(pairs[i]);
  return in.MakeList(std::move(out));
}

struct SeqEntry {
  std::string_view name;
  FilterFn fn;
};

constexpr SeqEntry kSeqFilters[] = {
    {"list", FList}, {"first", FFirst}, {"last", FLast}, {"items", FItems}, {"join", FJoin},
    {"map", FMap}, {"select", FSelect}, {"reject", FReject}, {"selectattr", FSelectAttr},
    {"rejectattr", FRejectAttr}, {"sort", FSort}, {"unique", FUnique}, {"reverse", FReverse},
    {"sum", FSum}, {"min", FMin}, {"max", FMax}, {"batch", FBatch}, {"dictsort", FDictSort},
};

}  // namespace

FilterFn FindSeqFilter(std::string_view name) {
  for (const auto& f : kSeqFilters) {
    if (f.name == name) return f.fn;
  }
  return nullptr;
}

}  // namespace llmserve::chat::jinja
