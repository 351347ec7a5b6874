// Expression evaluation, attribute/item lookup as jinja2's sandbox does it, iteration.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "model/chat/jinja_interp.h"
#include "model/chat/jinja_methods.h"
#include "model/chat/jinja_pystr.h"

namespace llmserve::chat::jinja {
namespace {

Value NoAttribute(const Value& obj, std::string_view name) {
  return Value::Undefined(absl::StrCat("'", ObjectTypeRepr(obj), "' has no attribute '", AV(name), "'"));
}

Value NoElement(const Value& obj, const Value& key) {
  if (key.is_string()) return NoAttribute(obj, key.str());
  return Value::Undefined(absl::StrCat(ObjectTypeRepr(obj), " has no element ", PyRepr(key)));
}

// Python slice indices for a sequence of length n.
void SliceIndices(int64_t n, const std::optional<int64_t>& start, const std::optional<int64_t>& stop,
                  int64_t step, std::vector<int64_t>* out) {
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt, bool is_start) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) x += n;
    if (step > 0) return std::clamp<int64_t>(x, 0, n);
    (void)is_start;
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  int64_t b = clamp(start, step > 0 ? 0 : n - 1, true);
  int64_t e = clamp(stop, step > 0 ? n : -1, false);
  if (step > 0) {
    for (int64_t i = b; i < e; i += step) out->push_back(i);
  } else {
    for (int64_t i = b; i > e; i += step) out->push_back(i);
  }
}

}  // namespace

absl::StatusOr<Value> Interp::Eval(const Expr& e, const std::shared_ptr<Frame>& frame) {
  if (auto st = Step(); !st.ok()) return st;
  if (++depth_ > limits_.max_eval_depth) {
    --depth_;
    return absl::ResourceExhaustedError(absl::StrCat("template exceeded max_eval_depth (", limits_.max_eval_depth, ")"));
  }
  auto r = EvalImpl(e, frame);
  --depth_;
  if (!r.ok()) return Locate(r.status(), e.line, e.col);
  return r;
}

absl::StatusOr<CallArgs> Interp::EvalArgs(const Expr& e, size_t first, const std::shared_ptr<Frame>& frame) {
  CallArgs args;
  for (size_t i = first; i < e.children.size(); ++i) {
    auto v = Eval(*e.children[i], frame);
    if (!v.ok()) return v.status();
    args.pos.push_back(std::move(*v));
  }
  for (const auto& [k, x] : e.kwargs) {
    auto v = Eval(*x, frame);
    if (!v.ok()) return v.status();
    args.kw.emplace_back(k, std::move(*v));
  }
  return args;
}

absl::StatusOr<Value> Interp::EvalImpl(const Expr& e, const std::shared_ptr<Frame>& frame) {
  switch (e.kind) {
    case ExprKind::kLiteral: return e.literal;
    case ExprKind::kName: {
      const Value* v = frame->Lookup(e.name);
      if (v == nullptr) return Value::Undefined(absl::StrCat("'", e.name, "' is undefined"));
      return *v;
    }
    case ExprKind::kList:
    case ExprKind::kTuple: {
      std::vector<Value> items;
      for (const auto& c : e.children) {
        auto v = Eval(*c, frame);
        if (!v.ok()) return v.status();
        items.push_back(std::move(*v));
      }
      return MakeList(std::move(items), e.kind == ExprKind::kTuple);
    }
    case ExprKind::kDict: {
      DictObj d;
      for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
        auto k = Eval(*e.children[i], frame);
        if (!k.ok()) return k.status();
        auto v = Eval(*e.children[i + 1], frame);
        if (!v.ok()) return v.status();
        if (k->is_list() && !k->list().is_tuple) return TypeError("unhashable type: 'list'");
        if (k->is_dict()) return TypeError("unhashable type: 'dict'");
        d.Set(std::move(*k), std::move(*v));
      }
      return MakeDict(std::move(d));
    }
    case ExprKind::kGetAttr: {
      auto obj = Eval(*e.children[0], frame);
      if (!obj.ok()) return obj.status();
      return GetAttr(*obj, e.name);
    }
    case ExprKind::kGetItem: {
      auto obj = Eval(*e.children[0], frame);
      if (!obj.ok()) return obj.status();
      auto key = Eval(*e.children[1], frame);
      if (!key.ok()) return key.status();
      return GetItem(*obj, *key);
    }
    case ExprKind::kSlice: return EvalSlice(e, frame);
    case ExprKind::kCall: {
      auto fn = Eval(*e.children[0], frame);
      if (!fn.ok()) return fn.status();
      auto args = EvalArgs(e, 1, frame);
      if (!args.ok()) return args.status();
      return CallValue(*fn, std::move(*args));
    }
    case ExprKind::kFilter: {
      auto v = Eval(*e.children[0], frame);
      if (!v.ok()) return v.status();
      auto args = EvalArgs(e, 1, frame);
      if (!args.ok()) return args.status();
      return ApplyFilter(e.name, *v, std::move(*args));
    }
    case ExprKind::kTest: {
      auto v = Eval(*e.children[0], frame);
      if (!v.ok()) return v.status();
      auto args = EvalArgs(e, 1, frame);
      if (!args.ok()) return args.status();
      auto r = ApplyTest(e.name, *v, std::move(*args));
      if (!r.ok()) return r.status();
      return Value::Bool(*r != e.negated);
    }
    case ExprKind::kUnary: {
      auto v = Eval(*e.children[0], frame);
      if (!v.ok()) return v.status();
      if (e.name == "not") return Value::Bool(!Truthy(*v));
      if (v->is_undefined()) return UndefinedError(*v);
      if (!v->is_number()) {
        return TypeError(absl::StrCat("bad operand type for unary ", e.name, ": '", TypeName(*v), "'"));
      }
      if (e.name == "+") return v->is_float() ? *v : Value::Int(v->as_int());
      if (v->is_float()) return Value::Float(-v->as_float());
      if (v->as_int() == INT64_MIN) return ValueError("integer overflow");
      return Value::Int(-v->as_int());
    }
    case ExprKind::kBinary: {
      auto a = Eval(*e.children[0], frame);
      if (!a.ok()) return a.status();
      if (e.name == "and") return Truthy(*a) ? Eval(*e.children[1], frame) : a;
      if (e.name == "or") return Truthy(*a) ? a : Eval(*e.children[1], frame);
      auto b = Eval(*e.children[1], frame);
      if (!b.ok()) return b.status();
      return BinaryOp(e.name, *a, *b);
    }
    case ExprKind::kCompare: {
      auto left = Eval(*e.children[0], frame);
      if (!left.ok()) return left.status();
      Value a = std::move(*left);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        auto b = Eval(*e.children[i + 1], frame);
        if (!b.ok()) return b.status();
        auto r = CompareOp(e.ops[i], a, *b);
        if (!r.ok()) return r.status();
        if (!*r) return Value::Bool(false);
        a = std::move(*b);
      }
      return Value::Bool(true);
    }
    case ExprKind::kCond: {
      auto c = Eval(*e.children[0], frame);
      if (!c.ok()) return c.status();
      if (Truthy(*c)) return Eval(*e.children[1], frame);
      if (e.children[2]) return Eval(*e.children[2], frame);
      return Value::Undefined("the inline if-expression on line evaluated to false and no else section was defined.");
    }
  }
  return RuntimeError("unknown expression");
}

absl::StatusOr<Value> Interp::EvalSlice(const Expr& e, const std::shared_ptr<Frame>& frame) {
  auto obj = Eval(*e.children[0], frame);
  if (!obj.ok()) return obj.status();
  std::optional<int64_t> bounds[3];
  for (int i = 0; i < 3; ++i) {
    if (!e.children[i + 1]) continue;
    auto v = Eval(*e.children[i + 1], frame);
    if (!v.ok()) return v.status();
    if (v->is_none()) continue;
    if (!v->is_integral()) return TypeError("slice indices must be integers or None or have an __index__ method");
    bounds[i] = v->as_int();
  }
  const int64_t step = bounds[2].value_or(1);
  if (step == 0) return ValueError("slice step cannot be zero");
  if (obj->is_undefined()) return UndefinedError(*obj);
  std::vector<int64_t> idx;
  if (obj->is_list() && !obj->list().is_iter && obj->list().view == nullptr) {
    const auto& items = obj->list().items;
    SliceIndices(static_cast<int64_t>(items.size()), bounds[0], bounds[1], step, &idx);
    std::vector<Value> out;
    out.reserve(idx.size());
    for (int64_t i : idx) out.push_back(items[i]);
    return MakeList(std::move(out), obj->list().is_tuple);
  }
  if (obj->is_string()) {
    const std::string& s = obj->str();
    std::vector<size_t> offs = CodePointOffsets(s);
    SliceIndices(static_cast<int64_t>(offs.size() - 1), bounds[0], bounds[1], step, &idx);
    std::string out;
    if (step == 1 && !idx.empty()) {
      out = s.substr(offs[idx.front()], offs[idx.back() + 1] - offs[idx.front()]);
    } else {
      for (int64_t i : idx) out.append(s, offs[i], offs[i + 1] - offs[i]);
    }
    if (auto st = ChargeString(out.size()); !st.ok()) return st;
    return Value::String(std::move(out));
  }
  if (obj->is_dict()) return TypeError("unhashable type: 'slice'");
  return Value::Undefined(absl::StrCat(ObjectTypeRepr(*obj), " has no element slice"));
}

absl::StatusOr<Value> Interp::CallValue(const Value& fn, CallArgs args) {
  if (fn.is_undefined()) return UndefinedError(fn);
  if (!fn.is_callable()) return TypeError(absl::StrCat("'", TypeName(fn), "' object is not callable"));
  if (++depth_ > limits_.max_eval_depth) {
    --depth_;
    return absl::ResourceExhaustedError(absl::StrCat("template exceeded max_eval_depth (", limits_.max_eval_depth, ")"));
  }
  auto r = fn.callable().Call(*this, std::move(args));
  --depth_;
  return r;
}

absl::StatusOr<Value> Interp::GetAttr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) return UndefinedError(obj);
  if (name.rfind("__", 0) == 0) {
    return Value::Undefined(absl::StrCat("access to attribute '", name, "' of '", TypeName(obj),
                                         "' object is unsafe."), true);
  }
  std::optional<Value> method = LookupMethod(obj, name);
  if (method) return *method;
  if (obj.is_dict()) {
    const Value* v = obj.dict().FindStr(name);
    if (v != nullptr) return *v;
  } else if (obj.is_namespace()) {
    const Value* v = obj.ns().attrs.FindStr(name);
    if (v != nullptr) return *v;
  }
  return NoAttribute(obj, name);
}

absl::StatusOr<Value> Interp::GetItem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return UndefinedError(obj);
  if (obj.is_dict()) {
    const Value* v = obj.dict().Find(key);
    if (v != nullptr) return *v;
  } else if (((obj.is_list() && !obj.list().is_iter && obj.list().view == nullptr) || obj.is_string()) &&
             key.is_integral()) {
    int64_t i = key.as_int();
    if (obj.is_list()) {
      const auto& items = obj.list().items;
      const int64_t n = static_cast<int64_t>(items.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return items[i];
    } else {
      std::vector<size_t> offs = CodePointOffsets(obj.str());
      const int64_t n = static_cast<int64_t>(offs.size()) - 1;
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value::String(obj.str().substr(offs[i], offs[i + 1] - offs[i]));
    }
    return NoElement(obj, key);
  }
  if (key.is_string()) {
    if (key.str().empty() || key.str()[0] == '_') return NoElement(obj, key);
    std::optional<Value> method = LookupMethod(obj, key.str());
    if (method) return *method;
    if (obj.is_namespace()) {
      const Value* v = obj.ns().attrs.FindStr(key.str());
      if (v != nullptr) return *v;
    }
  }
  return NoElement(obj, key);
}

absl::StatusOr<std::vector<Value>> Interp::Iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return std::vector<Value>{};
    case Value::Kind::kList: return v.list().items;
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      keys.reserve(v.dict().size());
      for (const auto& [k, x] : v.dict().items()) keys.push_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      const std::string& s = v.str();
      std::vector<size_t> offs = CodePointOffsets(s);
      if (auto st = ChargeCollection(offs.size()); !st.ok()) return st;
      std::vector<Value> chars;
      chars.reserve(offs.size() - 1);
      for (size_t i = 0; i + 1 < offs.size(); ++i) chars.push_back(Value::String(s.substr(offs[i], offs[i + 1] - offs[i])));
      return chars;
    }
    default: return TypeError(absl::StrCat("'", TypeName(v), "' object is not iterable"));
  }
}

}  // namespace llmserve::chat::jinja
