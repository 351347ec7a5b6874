#include "model/chat/jinja_value.h"

#include <algorithm>

namespace llmserve::chat::jinja {

Value Value::Undefined(std::string message, bool unsafe) {
  auto info = std::make_shared<UndefinedInfo>();
  info->message = std::move(message);
  info->unsafe = unsafe;
  return Value(Rep(std::in_place_index<0>, std::move(info)));
}

Value Value::String(std::string s) {
  return Value(Rep(std::in_place_index<5>, std::make_shared<const std::string>(std::move(s))));
}

Value Value::List(std::vector<Value> items, bool is_tuple, bool is_iter, const char* view) {
  auto list = std::make_shared<ListObj>();
  int depth = 0;
  for (const Value& v : items) depth = std::max(depth, v.Depth());
  list->items = std::move(items);
  list->is_tuple = is_tuple;
  list->is_iter = is_iter;
  list->view = view;
  list->depth = depth + 1;
  return Value(Rep(std::in_place_index<6>, std::shared_ptr<const ListObj>(std::move(list))));
}

Value Value::Dict(DictObj dict) {
  return Value(Rep(std::in_place_index<7>, std::make_shared<const DictObj>(std::move(dict))));
}

Value Value::Namespace(std::shared_ptr<NamespaceObj> ns) {
  return Value(Rep(std::in_place_index<8>, std::move(ns)));
}

Value Value::Function(std::shared_ptr<const Callable> fn) {
  return Value(Rep(std::in_place_index<9>, std::move(fn)));
}

std::string Value::undefined_message() const {
  const auto& info = std::get<0>(rep_);
  return info ? info->message : std::string("undefined");
}

bool Value::undefined_unsafe() const {
  const auto& info = std::get<0>(rep_);
  return info && info->unsafe;
}

const void* Value::identity() const {
  switch (kind()) {
    case Kind::kString: return std::get<5>(rep_).get();
    case Kind::kList: return std::get<6>(rep_).get();
    case Kind::kDict: return std::get<7>(rep_).get();
    case Kind::kNamespace: return std::get<8>(rep_).get();
    case Kind::kCallable: return std::get<9>(rep_).get();
    default: return nullptr;
  }
}

int Value::Depth() const {
  switch (kind()) {
    case Kind::kList: return list().depth;
    case Kind::kDict: return dict().depth();
    case Kind::kNamespace: return 1;  // namespaces are kept alive by the render, see Interp
    case Kind::kCallable: return callable().Depth();
    default: return 0;
  }
}

const Value* DictObj::Find(const Value& key) const {
  if (key.is_string()) return FindStr(key.str());
  for (const auto& [k, v] : items_) {
    if (!k.is_string() && PyEquals(k, key)) return &v;
  }
  return nullptr;
}

const Value* DictObj::FindStr(std::string_view key) const {
  auto it = str_index_.find(AV(key));
  return it == str_index_.end() ? nullptr : &items_[it->second].second;
}

void DictObj::Set(Value key, Value value) {
  depth_ = std::max({depth_, key.Depth() + 1, value.Depth() + 1});
  if (key.is_string()) {
    auto [it, inserted] = str_index_.try_emplace(key.str(), items_.size());
    if (!inserted) {
      items_[it->second].second = std::move(value);
      return;
    }
    items_.emplace_back(std::move(key), std::move(value));
    return;
  }
  for (auto& [k, v] : items_) {
    if (!k.is_string() && PyEquals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items_.emplace_back(std::move(key), std::move(value));
}

std::string BuiltinFunction::Repr() const {
  if (self_.is_undefined()) return "<built-in function " + name_ + ">";
  return "<built-in method " + name_ + " of " + TypeName(self_) + " object>";
}

bool Truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return false;
    case Value::Kind::kBool: return v.as_bool();
    case Value::Kind::kInt: return v.as_int() != 0;
    case Value::Kind::kFloat: return v.as_float() != 0.0;
    case Value::Kind::kString: return !v.str().empty();
    case Value::Kind::kList: return v.list().is_iter || !v.list().items.empty();
    case Value::Kind::kDict: return v.dict().size() != 0;
    default: return true;
  }
}

namespace {
thread_local CompareBudget* tl_budget = nullptr;
}  // namespace

CompareBudget::CompareBudget(uint64_t budget) : left_(budget), saved_(tl_budget) { tl_budget = this; }
CompareBudget::~CompareBudget() { tl_budget = saved_; }

bool PyEquals(const Value& a, const Value& b, int depth) {
  if (depth > 200) return false;
  if (tl_budget != nullptr) {
    if (tl_budget->left_ == 0) {
      tl_budget->exhausted_ = true;
      return false;
    }
    --tl_budget->left_;
  }
  if (a.identity() != nullptr && a.identity() == b.identity()) return true;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kString: return a.str() == b.str();
    case Value::Kind::kList: {
      const ListObj& x = a.list();
      const ListObj& y = b.list();
      if (x.is_iter || y.is_iter || x.view != y.view) return &x == &y;
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i) {
        if (!PyEquals(x.items[i], y.items[i], depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      const DictObj& x = a.dict();
      const DictObj& y = b.dict();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.items()) {
        const Value* other = y.Find(k);
        if (other == nullptr || !PyEquals(v, *other, depth + 1)) return false;
      }
      return true;
    }
    default: return a.identity() == b.identity();
  }
}

std::string TypeName(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return "Undefined";
    case Value::Kind::kNone: return "NoneType";
    case Value::Kind::kBool: return "bool";
    case Value::Kind::kInt: return "int";
    case Value::Kind::kFloat: return "float";
    case Value::Kind::kString: return "str";
    case Value::Kind::kList:
      if (v.list().view != nullptr) return v.list().view;
      return v.list().is_iter ? "generator" : v.list().is_tuple ? "tuple" : "list";
    case Value::Kind::kDict: return "dict";
    case Value::Kind::kNamespace: return "Namespace";
    case Value::Kind::kCallable: return "function";
  }
  return "object";
}

std::string ObjectTypeRepr(const Value& v) {
  if (v.is_none()) return "None";
  if (v.is_namespace()) return "jinja2.utils.Namespace object";
  return TypeName(v) + " object";
}

}  // namespace llmserve::chat::jinja
