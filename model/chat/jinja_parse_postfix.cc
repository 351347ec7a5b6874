// Postfix expressions: attribute and item access, slices, calls, filters and tests.
#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "model/chat/jinja_filters.h"
#include "model/chat/jinja_parser_impl.h"

namespace llmserve::chat::jinja {

absl::StatusOr<ExprPtr> Parser::ParsePostfix(ExprPtr node) {
  while (true) {
    if (IsOp(".") || IsOp("[")) {
      auto s = ParseSubscript(std::move(node));
      if (!s.ok()) return s;
      node = std::move(*s);
    } else if (IsOp("(")) {
      auto call = ParseCall(std::move(node));
      if (!call.ok()) return call;
      node = std::move(*call);
    } else {
      return node;
    }
  }
}

absl::StatusOr<ExprPtr> Parser::ParseFilterExpr(ExprPtr node) {
  while (true) {
    if (IsOp("|")) {
      auto f = ParseFilter(std::move(node));
      if (!f.ok()) return f;
      node = std::move(*f);
    } else if (IsName("is")) {
      auto t = ParseTest(std::move(node));
      if (!t.ok()) return t;
      node = std::move(*t);
    } else if (IsOp("(")) {
      auto call = ParseCall(std::move(node));
      if (!call.ok()) return call;
      node = std::move(*call);
    } else {
      return node;
    }
  }
}

absl::StatusOr<ExprPtr> Parser::ParseCall(ExprPtr node) {
  Token at = Cur();  // a call is reported at its callee
  at.line = node->line;
  at.col = node->col;
  std::vector<ExprPtr> kids;
  kids.push_back(std::move(node));
  auto call = Make(ExprKind::kCall, at, std::move(kids));
  if (!call.ok()) return call;
  if (auto s = ParseCallArgs(call->get()); !s.ok()) return s;
  return call;
}

absl::StatusOr<ExprPtr> Parser::ParseSubscript(ExprPtr node) {
  const Token at = Cur();
  Next();
  if (at.value == ".") {
    const Token attr = Cur();
    Next();
    std::vector<ExprPtr> kids;
    kids.push_back(std::move(node));
    if (attr.kind == Tok::kName) {
      auto e = Make(ExprKind::kGetAttr, at, std::move(kids));
      if (e.ok()) (*e)->name = attr.value;
      return e;
    }
    if (attr.kind != Tok::kInt) return Error(attr, "expected name or number");
    auto idx = Make(ExprKind::kLiteral, attr, {});
    if (!idx.ok()) return idx;
    (*idx)->literal = Value::Int(std::strtoll(attr.value.c_str(), nullptr, 10));
    kids.push_back(std::move(*idx));
    return Make(ExprKind::kGetItem, at, std::move(kids));
  }
  std::vector<ExprPtr> args;
  while (!IsOp("]")) {
    if (!args.empty()) {
      if (auto s = ExpectOp(","); !s.ok()) return s;
    }
    auto a = ParseSubscribed();
    if (!a.ok()) return a;
    args.push_back(std::move(*a));
  }
  if (auto s = ExpectOp("]"); !s.ok()) return s;
  if (args.empty()) return Error(at, "expected an index");
  ExprPtr arg;
  if (args.size() == 1) {
    arg = std::move(args[0]);
  } else {
    auto tup = Make(ExprKind::kTuple, at, std::move(args));
    if (!tup.ok()) return tup;
    arg = std::move(*tup);
  }
  std::vector<ExprPtr> kids;
  kids.push_back(std::move(node));
  if (arg->kind == ExprKind::kSlice) {
    for (auto& c : arg->children) kids.push_back(std::move(c));
    return Make(ExprKind::kSlice, at, std::move(kids));
  }
  kids.push_back(std::move(arg));
  return Make(ExprKind::kGetItem, at, std::move(kids));
}

absl::StatusOr<ExprPtr> Parser::ParseSubscribed() {
  const Token at = Cur();
  std::vector<ExprPtr> parts;  // start, stop, step (null = absent)
  if (IsOp(":")) {
    Next();
    parts.push_back(nullptr);
  } else {
    auto e = ParseExpression();
    if (!e.ok() || !IsOp(":")) return e;
    Next();
    parts.push_back(std::move(*e));
  }
  if (IsOp(":") || IsOp("]") || IsOp(",")) {
    parts.push_back(nullptr);
  } else {
    auto e = ParseExpression();
    if (!e.ok()) return e;
    parts.push_back(std::move(*e));
  }
  if (SkipOp(":") && !IsOp("]") && !IsOp(",")) {
    auto e = ParseExpression();
    if (!e.ok()) return e;
    parts.push_back(std::move(*e));
  } else {
    parts.push_back(nullptr);
  }
  return Make(ExprKind::kSlice, at, std::move(parts));
}

absl::Status Parser::ParseCallArgs(Expr* call) {
  const Token open = Cur();
  if (auto s = ExpectOp("("); !s.ok()) return s;
  bool need_comma = false;
  while (!IsOp(")")) {
    if (need_comma) {
      if (auto s = ExpectOp(","); !s.ok()) return s;
      if (IsOp(")")) break;
    }
    if (IsOp("*") || IsOp("**")) return Error(Cur(), "*args and **kwargs calls are not supported");
    if (Cur().kind == Tok::kName && Look().kind == Tok::kOp && Look().value == "=") {
      std::string key = Cur().value;
      Next();
      Next();
      auto v = ParseExpression();
      if (!v.ok()) return v.status();
      call->depth = std::max(call->depth, (*v)->depth + 1);
      call->kwargs.emplace_back(std::move(key), std::move(*v));
    } else {
      if (!call->kwargs.empty()) return Error(open, "invalid syntax for function call expression");
      auto v = ParseExpression();
      if (!v.ok()) return v.status();
      call->depth = std::max(call->depth, (*v)->depth + 1);
      call->children.push_back(std::move(*v));
    }
    need_comma = true;
  }
  if (call->depth > max_depth_) return Error(open, "expression nested too deeply");
  return ExpectOp(")");
}

absl::StatusOr<ExprPtr> Parser::ParseFilter(ExprPtr node) {
  while (SkipOp("|")) {
    const Token at = Cur();
    auto name = ExpectName();
    if (!name.ok()) return name.status();
    if (!IsKnownFilter(*name)) return Error(at, absl::StrCat("No filter named '", *name, "'."));
    std::vector<ExprPtr> kids;
    kids.push_back(std::move(node));
    auto f = Make(ExprKind::kFilter, at, std::move(kids));
    if (!f.ok()) return f;
    (*f)->name = *name;
    if (IsOp("(")) {
      if (auto s = ParseCallArgs(f->get()); !s.ok()) return s;
    }
    node = std::move(*f);
  }
  return node;
}

absl::StatusOr<ExprPtr> Parser::ParseTest(ExprPtr node) {
  Next();  // 'is'
  const bool negated = SkipName("not");
  const Token at = Cur();
  auto name = ExpectName();
  if (!name.ok()) return name.status();
  if (!IsKnownTest(*name)) return Error(at, absl::StrCat("No test named '", *name, "'."));
  std::vector<ExprPtr> kids;
  kids.push_back(std::move(node));
  auto t = Make(ExprKind::kTest, at, std::move(kids));
  if (!t.ok()) return t;
  (*t)->name = *name;
  (*t)->negated = negated;
  if (IsOp("(")) {
    if (auto s = ParseCallArgs(t->get()); !s.ok()) return s;
  } else {
    const Tok k = Cur().kind;
    const bool starts = k == Tok::kName || k == Tok::kString || k == Tok::kInt || k == Tok::kFloat ||
                        IsOp("(") || IsOp("[") || IsOp("{");
    if (starts && !IsName("else") && !IsName("or") && !IsName("and")) {
      if (IsName("is")) return Error(Cur(), "You cannot chain multiple tests with is");
      auto arg = ParsePrimary();
      if (!arg.ok()) return arg;
      auto post = ParsePostfix(std::move(*arg));
      if (!post.ok()) return post;
      (*t)->depth = std::max((*t)->depth, (*post)->depth + 1);
      (*t)->children.push_back(std::move(*post));
    }
  }
  return t;
}

}  // namespace llmserve::chat::jinja
