// Tests (`x is defined`, `x is string`, ...) and Interp::ApplyTest.
#include "absl/strings/str_cat.h"
#include "model/chat/jinja_filters.h"
#include "model/chat/jinja_pystr.h"

namespace llmserve::chat::jinja {
namespace {

using TestFn = absl::StatusOr<bool> (*)(Interp&, const Value&, CallArgs&);

absl::StatusOr<Value> Arg(std::string_view test, const CallArgs& a) {
  if (a.pos.empty()) return TypeError(absl::StrCat("test '", AV(test), "' takes one argument"));
  return a.pos[0];
}

absl::StatusOr<bool> Cmp(Interp& in, std::string_view op, const Value& v, CallArgs& a) {
  auto x = Arg(op, a);
  if (!x.ok()) return x.status();
  return in.CompareOp(op, v, *x);
}

#define SIMPLE_TEST(fname, expr) \
  absl::StatusOr<bool> fname(Interp&, const Value& v, CallArgs&) { return (expr); }

SIMPLE_TEST(TDefined, !v.is_undefined())
SIMPLE_TEST(TUndefined, v.is_undefined())
SIMPLE_TEST(TNone, v.is_none())
SIMPLE_TEST(TString, v.is_string())
SIMPLE_TEST(TNumber, v.is_number())
SIMPLE_TEST(TInteger, v.is_int())
SIMPLE_TEST(TFloat, v.is_float())
SIMPLE_TEST(TMapping, v.is_dict())
SIMPLE_TEST(TIterable, v.is_undefined() || v.is_string() || v.is_list() || v.is_dict())
SIMPLE_TEST(TSequence, v.is_undefined() || v.is_string() || v.is_dict() || (v.is_list() && !v.list().is_iter))
SIMPLE_TEST(TBoolean, v.is_bool())
SIMPLE_TEST(TTrue, v.is_bool() && v.as_bool())
SIMPLE_TEST(TFalse, v.is_bool() && !v.as_bool())
SIMPLE_TEST(TCallable, v.is_callable() || (v.is_undefined() && false))
SIMPLE_TEST(TLower, PyIsLower(PyStr(v)))
SIMPLE_TEST(TUpper, PyIsUpper(PyStr(v)))
SIMPLE_TEST(TEscaped, v.is_undefined() && false)

absl::StatusOr<bool> TOdd(Interp& in, const Value& v, CallArgs&) {
  auto r = in.BinaryOp("%", v, Value::Int(2));
  if (!r.ok()) return r.status();
  return PyEquals(*r, Value::Int(1));
}

absl::StatusOr<bool> TEven(Interp& in, const Value& v, CallArgs&) {
  auto r = in.BinaryOp("%", v, Value::Int(2));
  if (!r.ok()) return r.status();
  return PyEquals(*r, Value::Int(0));
}

absl::StatusOr<bool> TDivisibleBy(Interp& in, const Value& v, CallArgs& a) {
  auto x = Arg("divisibleby", a);
  if (!x.ok()) return x.status();
  auto r = in.BinaryOp("%", v, *x);
  if (!r.ok()) return r.status();
  return PyEquals(*r, Value::Int(0));
}

absl::StatusOr<bool> TSameAs(Interp&, const Value& v, CallArgs& a) {
  auto x = Arg("sameas", a);
  if (!x.ok()) return x.status();
  if (v.kind() != x->kind()) return false;
  if (v.identity() != nullptr || x->identity() != nullptr) return v.identity() == x->identity();
  return PyEquals(v, *x);
}

absl::StatusOr<bool> TEq(Interp& in, const Value& v, CallArgs& a) { return Cmp(in, "==", v, a); }
absl::StatusOr<bool> TNe(Interp& in, const Value& v, CallArgs& a) { return Cmp(in, "!=", v, a); }
absl::StatusOr<bool> TLt(Interp& in, const Value& v, CallArgs& a) { return Cmp(in, "<", v, a); }
absl::StatusOr<bool> TLe(Interp& in, const Value& v, CallArgs& a) { return Cmp(in, "<=", v, a); }
absl::StatusOr<bool> TGt(Interp& in, const Value& v, CallArgs& a) { return Cmp(in, ">", v, a); }
absl::StatusOr<bool> TGe(Interp& in, const Value& v, CallArgs& a) { return Cmp(in, ">=", v, a); }
absl::StatusOr<bool> TIn(Interp& in, const Value& v, CallArgs& a) { return Cmp(in, "in", v, a); }

absl::StatusOr<bool> TFilter(Interp&, const Value& v, CallArgs&) { return v.is_string() && IsKnownFilter(v.str()); }
absl::StatusOr<bool> TTest(Interp&, const Value& v, CallArgs&) { return v.is_string() && IsKnownTest(v.str()); }

struct TestEntry {
  std::string_view name;
  TestFn fn;
};

constexpr TestEntry kTests[] = {
    {"defined", TDefined}, {"undefined", TUndefined}, {"none", TNone}, {"string", TString},
    {"number", TNumber}, {"integer", TInteger}, {"float", TFloat}, {"mapping", TMapping},
    {"iterable", TIterable}, {"sequence", TSequence}, {"boolean", TBoolean}, {"true", TTrue},
    {"false", TFalse}, {"callable", TCallable}, {"lower", TLower}, {"upper", TUpper},
    {"escaped", TEscaped}, {"odd", TOdd}, {"even", TEven}, {"divisibleby", TDivisibleBy},
    {"sameas", TSameAs}, {"eq", TEq}, {"equalto", TEq}, {"==", TEq}, {"ne", TNe}, {"!=", TNe},
    {"lt", TLt}, {"lessthan", TLt}, {"<", TLt}, {"le", TLe}, {"<=", TLe}, {"gt", TGt},
    {"greaterthan", TGt}, {">", TGt}, {"ge", TGe}, {">=", TGe}, {"in", TIn}, {"filter", TFilter},
    {"test", TTest},
};

TestFn FindTest(std::string_view name) {
  for (const auto& t : kTests) {
    if (t.name == name) return t.fn;
  }
  return nullptr;
}

}  // namespace

bool IsKnownTest(std::string_view name) { return FindTest(name) != nullptr; }

absl::StatusOr<bool> Interp::ApplyTest(const std::string& name, const Value& v, CallArgs args) {
  TestFn fn = FindTest(name);
  if (fn == nullptr) return RuntimeError(absl::StrCat("No test named '", name, "'."));
  return fn(*this, v, args);
}

}  // namespace llmserve::chat::jinja
