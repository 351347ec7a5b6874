// The value type of the Jinja evaluator: Python's none/bool/int/float/str/list/tuple/dict,
// jinja2's Undefined and Namespace, and callables (macros, builtins, bound methods).
//
// Strings, lists and dicts are immutable once built and shared by pointer, so copying a
// Value is cheap and a Value may be read from any thread. A Namespace is the one mutable
// object (`{% set ns.x = ... %}`); it belongs to one render.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace llmserve::chat::jinja {

// absl::StrCat and absl's hash maps take absl::string_view, which Debian's abseil does not
// alias to std::string_view.
inline absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }

class Value;
class Interp;
class DictObj;

// Why a value is undefined: the message jinja2's UndefinedError would carry.
struct UndefinedInfo {
  std::string message;
  bool unsafe = false;  // a sandbox-blocked attribute: calling it is a SecurityError
};

// A list (or tuple) of values; `depth` is 1 + the deepest element's depth.
struct ListObj {
  std::vector<Value> items;
  bool is_tuple = false;
  bool is_iter = false;  // a generator/iterator (map, select, ...): no len(), no index, no JSON
  const char* view = nullptr;  // "dict_keys"/"dict_values"/"dict_items": no index, no JSON
  int depth = 1;
};

// Positional and keyword arguments of a call.
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};

// Something `name(...)` can call: a macro, a global function or a bound method.
class Callable {
 public:
  virtual ~Callable() = default;
  // Calls it; errors are jinja2-style messages ("TypeError: ...").
  virtual absl::StatusOr<Value> Call(Interp& interp, CallArgs args) const = 0;
  // What str() prints for it.
  virtual std::string Repr() const = 0;
  // Nesting depth of the values it holds (a bound method holds its object).
  virtual int Depth() const { return 1; }
};

class NamespaceObj;

// One Jinja value. Kind order matches the variant's alternatives.
class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kCallable
  };

  // An undefined value with jinja2's default message ("undefined").
  Value() = default;
  // An undefined value carrying the message an error about it would give.
  static Value Undefined(std::string message, bool unsafe = false);
  // Python None.
  static Value None() { return Value(Rep(std::in_place_index<1>)); }
  // Python bool.
  static Value Bool(bool b) { return Value(Rep(std::in_place_index<2>, b)); }
  // Python int (64-bit here).
  static Value Int(int64_t i) { return Value(Rep(std::in_place_index<3>, i)); }
  // Python float.
  static Value Float(double d) { return Value(Rep(std::in_place_index<4>, d)); }
  // Python str (UTF-8).
  static Value String(std::string s);
  // A list or tuple (or, with is_iter, what a Python generator would be).
  static Value List(std::vector<Value> items, bool is_tuple = false, bool is_iter = false,
                    const char* view = nullptr);
  // A dict (insertion-ordered).
  static Value Dict(DictObj dict);
  // A namespace object (shared, mutable).
  static Value Namespace(std::shared_ptr<NamespaceObj> ns);
  // A callable.
  static Value Function(std::shared_ptr<const Callable> fn);

  // Which kind of value this is.
  Kind kind() const { return static_cast<Kind>(rep_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_namespace() const { return kind() == Kind::kNamespace; }
  bool is_callable() const { return kind() == Kind::kCallable; }
  // int or bool (Python's bool is an int).
  bool is_integral() const { return is_int() || is_bool(); }
  // int, bool or float.
  bool is_number() const { return is_integral() || is_float(); }

  // Accessors; each requires the matching kind.
  bool as_bool() const { return std::get<2>(rep_); }
  int64_t as_int() const { return is_bool() ? (as_bool() ? 1 : 0) : std::get<3>(rep_); }
  double as_float() const { return is_float() ? std::get<4>(rep_) : static_cast<double>(as_int()); }
  const std::string& str() const { return *std::get<5>(rep_); }
  const ListObj& list() const { return *std::get<6>(rep_); }
  const DictObj& dict() const { return *std::get<7>(rep_); }
  NamespaceObj& ns() const { return *std::get<8>(rep_); }
  const Callable& callable() const { return *std::get<9>(rep_); }
  // The undefined value's message ("'x' is undefined", ...).
  std::string undefined_message() const;
  // True for a sandbox-blocked attribute.
  bool undefined_unsafe() const;
  // Identity of the shared object behind a container/callable (for `is sameas`).
  const void* identity() const;
  // Nesting depth: 0 for scalars, 1 + deepest element for containers.
  int Depth() const;

 private:
  using Rep = std::variant<std::shared_ptr<const UndefinedInfo>, std::monostate, bool, int64_t,
                           double, std::shared_ptr<const std::string>,
                           std::shared_ptr<const ListObj>, std::shared_ptr<const DictObj>,
                           std::shared_ptr<NamespaceObj>, std::shared_ptr<const Callable>>;
  explicit Value(Rep rep) : rep_(std::move(rep)) {}
  Rep rep_;
};

// An insertion-ordered dict; string keys are indexed, other keys found by Python equality.
class DictObj {
 public:
  // The value under `key`, or nullptr.
  const Value* Find(const Value& key) const;
  // The value under string key `key`, or nullptr.
  const Value* FindStr(std::string_view key) const;
  // Inserts or replaces (keeping the first insertion's position, as Python does).
  void Set(Value key, Value value);
  // Number of entries.
  size_t size() const { return items_.size(); }
  // Entries in insertion order.
  const std::vector<std::pair<Value, Value>>& items() const { return items_; }
  // 1 + the deepest key/value depth.
  int depth() const { return depth_; }

 private:
  std::vector<std::pair<Value, Value>> items_;
  absl::flat_hash_map<std::string, size_t> str_index_;
  int depth_ = 1;
};

// jinja2's namespace(): attributes assignable with `{% set ns.attr = v %}`.
class NamespaceObj {
 public:
  DictObj attrs;
};

// A builtin callable wrapping a function object.
class BuiltinFunction : public Callable {
 public:
  using Fn = absl::StatusOr<Value> (*)(Interp&, const Value& self, CallArgs&);
  // `self` is the bound object for methods (undefined for plain functions).
  BuiltinFunction(std::string name, Value self, Fn fn)
      : name_(std::move(name)), self_(std::move(self)), fn_(fn) {}
  absl::StatusOr<Value> Call(Interp& interp, CallArgs args) const override {
    return fn_(interp, self_, args);
  }
  std::string Repr() const override;
  int Depth() const override { return 1 + self_.Depth(); }

 private:
  std::string name_;
  Value self_;
  Fn fn_;
};

// Python truthiness.
bool Truthy(const Value& v);

// Bounds the work of PyEquals on this thread while alive: lists may share elements, so a
// DAG of modest size can take exponential time to compare. Each element compared costs one
// unit; when `budget` runs out PyEquals answers false and exhausted() turns true.
class CompareBudget {
 public:
  explicit CompareBudget(uint64_t budget);
  ~CompareBudget();
  CompareBudget(const CompareBudget&) = delete;
  CompareBudget& operator=(const CompareBudget&) = delete;
  // True once some comparison ran out of budget.
  bool exhausted() const { return exhausted_; }

 private:
  friend bool PyEquals(const Value& a, const Value& b, int depth);
  uint64_t left_;
  bool exhausted_ = false;
  CompareBudget* saved_;
};

// Python ==, deep for containers (bounded by `depth`).
bool PyEquals(const Value& a, const Value& b, int depth = 0);
// Python's type name for messages ("int", "str", "NoneType", "dict", ...).
std::string TypeName(const Value& v);
// jinja2's object_type_repr: "None", "dict object", "str object", ...
std::string ObjectTypeRepr(const Value& v);

}  // namespace llmserve::chat::jinja
