// Python binary operators and comparisons over Values (int64 ints with overflow errors).
#include <cmath>

#include "absl/strings/str_cat.h"
#include "model/chat/jinja_format.h"
#include "model/chat/jinja_interp.h"
#include "model/chat/jinja_pystr.h"

namespace llmserve::chat::jinja {
namespace {

absl::Status Unsupported(std::string_view op, const Value& a, const Value& b) {
  return TypeError(absl::StrCat("unsupported operand type(s) for ", AV(op), ": '", TypeName(a), "' and '",
                                TypeName(b), "'"));
}

absl::Status Overflow() { return absl::InvalidArgumentError("OverflowError: integer overflow"); }

double PyFloorMod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

}  // namespace

absl::StatusOr<Value> Interp::BinaryOp(std::string_view op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string s = PyStr(a) + PyStr(b);
    if (auto st = ChargeString(s.size()); !st.ok()) return st;
    return Value::String(std::move(s));
  }
  if (a.is_undefined()) return UndefinedError(a);
  if (b.is_undefined()) return UndefinedError(b);
  if (a.is_number() && b.is_number()) {
    const bool fl = a.is_float() || b.is_float();
    const int64_t x = fl ? 0 : a.as_int(), y = fl ? 0 : b.as_int();
    const double fx = a.as_float(), fy = b.as_float();
    int64_t r = 0;
    if (op == "+") {
      if (fl) return Value::Float(fx + fy);
      if (__builtin_add_overflow(x, y, &r)) return Overflow();
      return Value::Int(r);
    }
    if (op == "-") {
      if (fl) return Value::Float(fx - fy);
      if (__builtin_sub_overflow(x, y, &r)) return Overflow();
      return Value::Int(r);
    }
    if (op == "*") {
      if (fl) return Value::Float(fx * fy);
      if (__builtin_mul_overflow(x, y, &r)) return Overflow();
      return Value::Int(r);
    }
    if (op == "/") {
      if (fy == 0) return absl::InvalidArgumentError("ZeroDivisionError: division by zero");
      return Value::Float(fx / fy);
    }
    if (op == "//" || op == "%") {
      if (fl ? fy == 0 : y == 0) {
        return absl::InvalidArgumentError(op == "%" ? "ZeroDivisionError: modulo by zero"
                                                    : "ZeroDivisionError: integer division or modulo by zero");
      }
      if (fl) {
        if (op == "%") return Value::Float(PyFloorMod(fx, fy));
        return Value::Float(std::floor(fx / fy));
      }
      if (x == INT64_MIN && y == -1) return op == "%" ? Value::Int(0) : absl::StatusOr<Value>(Overflow());
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {
        --q;
        m += y;
      }
      return Value::Int(op == "%" ? m : q);
    }
    if (op == "**") {
      if (!fl && y >= 0) {
        int64_t result = 1, base = x;
        for (int64_t e = y; e > 0; e >>= 1) {
          if (e & 1) {
            if (__builtin_mul_overflow(result, base, &result)) return Overflow();
          }
          if (e > 1 && __builtin_mul_overflow(base, base, &base)) return Overflow();
        }
        return Value::Int(result);
      }
      if (fx == 0 && fy < 0) {
        return absl::InvalidArgumentError("ZeroDivisionError: 0.0 cannot be raised to a negative power");
      }
      double p = std::pow(fx, fy);
      if (std::isnan(p) && !std::isnan(fx) && !std::isnan(fy)) {
        return ValueError("math domain error (complex result)");
      }
      return Value::Float(p);
    }
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      if (auto st = ChargeString(a.str().size() + b.str().size()); !st.ok()) return st;
      return Value::String(a.str() + b.str());
    }
    if (a.is_list() && b.is_list() && a.list().is_tuple == b.list().is_tuple && !a.list().is_iter &&
        !b.list().is_iter) {
      std::vector<Value> items = a.list().items;
      items.insert(items.end(), b.list().items.begin(), b.list().items.end());
      return MakeList(std::move(items), a.list().is_tuple);
    }
    if (a.is_string()) {
      return TypeError(absl::StrCat("can only concatenate str (not \"", TypeName(b), "\") to str"));
    }
    if (a.is_list() && !a.list().is_tuple) {
      return TypeError(absl::StrCat("can only concatenate list (not \"", TypeName(b), "\") to list"));
    }
  }
  if (op == "*") {
    const Value* seq = (a.is_string() || a.is_list()) ? &a : (b.is_string() || b.is_list()) ? &b : nullptr;
    const Value* count = seq == &a ? &b : &a;
    if (seq != nullptr && count->is_integral()) {
      const int64_t n = std::max<int64_t>(0, count->as_int());
      if (seq->is_string()) {
        const size_t unit = seq->str().size();
        if (unit != 0 && static_cast<uint64_t>(n) > limits_.max_string_bytes / unit + 1) {
          return ChargeString(limits_.max_string_bytes + 1);
        }
        if (auto st = ChargeString(unit * n); !st.ok()) return st;
        std::string out;
        out.reserve(unit * n);
        for (int64_t i = 0; i < n; ++i) out += seq->str();
        return Value::String(std::move(out));
      }
      const size_t unit = seq->list().items.size();
      if (unit != 0 && static_cast<uint64_t>(n) > limits_.max_collection_size / unit + 1) {
        return ChargeCollection(limits_.max_collection_size + 1);
      }
      if (auto st = ChargeCollection(unit * n); !st.ok()) return st;
      std::vector<Value> items;
      items.reserve(unit * n);
      for (int64_t i = 0; i < n; ++i) items.insert(items.end(), seq->list().items.begin(), seq->list().items.end());
      return MakeList(std::move(items), seq->list().is_tuple);
    }
  }
  if (op == "%" && a.is_string()) {
    std::vector<Value> args;
    if (b.is_list() && b.list().is_tuple) args = b.list().items;
    else args.push_back(b);
    auto s = PyPercentFormat(a.str(), args, limits_.max_string_bytes);
    if (!s.ok()) return s.status();
    if (auto st = ChargeString(s->size()); !st.ok()) return st;
    return Value::String(std::move(*s));
  }
  return Unsupported(op, a, b);
}

absl::StatusOr<bool> Interp::Less(const Value& a, const Value& b) {
  if (a.is_undefined()) return UndefinedError(a);
  if (b.is_undefined()) return UndefinedError(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() < b.as_float();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 order == code point order
  if (a.is_list() && b.is_list() && a.list().is_tuple == b.list().is_tuple) {
    const auto& x = a.list().items;
    const auto& y = b.list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (PyEquals(x[i], y[i])) continue;
      return Less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  return TypeError(absl::StrCat("'<' not supported between instances of '", TypeName(a), "' and '",
                                TypeName(b), "'"));
}

absl::StatusOr<bool> Interp::CompareOp(std::string_view op, const Value& a, const Value& b) {
  if (op == "==") return PyEquals(a, b);
  if (op == "!=") return !PyEquals(a, b);
  if (op == "in" || op == "notin") {
    bool found = false;
    if (b.is_undefined()) {
      found = false;
    } else if (b.is_string()) {
      if (!a.is_string()) {
        return TypeError(absl::StrCat("'in <string>' requires string as left operand, not ", TypeName(a)));
      }
      found = b.str().find(a.str()) != std::string::npos;
    } else if (b.is_list()) {
      for (const Value& x : b.list().items) {
        if (PyEquals(x, a)) { found = true; break; }
      }
      if (auto st = Step(b.list().items.size() / 16); !st.ok()) return st;
    } else if (b.is_dict()) {
      found = b.dict().Find(a) != nullptr;
    } else {
      return TypeError(absl::StrCat("argument of type '", TypeName(b), "' is not iterable"));
    }
    return op == "in" ? found : !found;
  }
  if (op == "<") return Less(a, b);
  if (op == ">") return Less(b, a);
  if (op == "<=" || op == ">=") {
    const Value& x = op == "<=" ? a : b;
    const Value& y = op == "<=" ? b : a;
    if (PyEquals(x, y) && !x.is_undefined()) {
      auto lt = Less(x, y);  // still type-checks ('<=' between str and int fails)
      if (!lt.ok()) return lt;
      return true;
    }
    return Less(x, y);
  }
  return RuntimeError(absl::StrCat("unknown comparison ", AV(op)));
}

}  // namespace llmserve::chat::jinja
