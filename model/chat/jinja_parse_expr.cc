// Expression parsing, one function per jinja2 precedence level (parser.py's parse_*).
#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "model/chat/jinja_filters.h"
#include "model/chat/jinja_parser_impl.h"

namespace llmserve::chat::jinja {

#define ASSIGN_OR_RETURN_EXPR(lhs, rexpr) \
  auto lhs##_or = (rexpr);                \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  ExprPtr lhs = std::move(*lhs##_or)

absl::StatusOr<ExprPtr> Parser::Make(ExprKind kind, const Token& at, std::vector<ExprPtr> children) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = at.line;
  e->col = at.col;
  int depth = 0;
  for (const auto& c : children) {
    if (c) depth = std::max(depth, c->depth);
  }
  e->depth = depth + 1;
  if (e->depth > max_depth_) return Error(at, "expression nested too deeply");
  e->children = std::move(children);
  return e;
}

absl::StatusOr<ExprPtr> Parser::Binary(std::string op, const Token& at, ExprPtr a, ExprPtr b) {
  std::vector<ExprPtr> kids;
  kids.push_back(std::move(a));
  kids.push_back(std::move(b));
  auto e = Make(ExprKind::kBinary, at, std::move(kids));
  if (e.ok()) (*e)->name = std::move(op);
  return e;
}

absl::StatusOr<ExprPtr> Parser::ParseTuple(bool with_condexpr, std::string_view extra_end,
                                           bool explicit_parens) {
  const Token start = Cur();
  std::vector<ExprPtr> args;
  bool is_tuple = false;
  while (true) {
    if (!args.empty()) {
      if (auto s = ExpectOp(","); !s.ok()) return s;
    }
    const bool at_end = Cur().kind == Tok::kVarEnd || Cur().kind == Tok::kBlockEnd || IsOp(")") ||
                        (!extra_end.empty() && IsName(extra_end));
    if (at_end) break;
    ASSIGN_OR_RETURN_EXPR(e, ParseExpression(with_condexpr));
    args.push_back(std::move(e));
    if (IsOp(",")) is_tuple = true; else break;
  }
  if (!is_tuple) {
    if (!args.empty()) return std::move(args[0]);
    if (!explicit_parens) {
      return Error(Cur(), absl::StrCat("Expected an expression, got ", DescribeToken(Cur())));
    }
  }
  return Make(ExprKind::kTuple, start, std::move(args));
}

absl::StatusOr<ExprPtr> Parser::ParseExpression(bool with_condexpr) {
  if (auto s = Enter(Cur()); !s.ok()) return s;
  auto r = with_condexpr ? ParseCondExpr() : ParseOr();
  Leave();
  return r;
}

absl::StatusOr<ExprPtr> Parser::ParseCondExpr() {
  ASSIGN_OR_RETURN_EXPR(expr1, ParseOr());
  while (IsName("if")) {
    const Token at = Cur();
    Next();
    ASSIGN_OR_RETURN_EXPR(expr2, ParseOr());
    ExprPtr expr3;
    if (SkipName("else")) {
      if (auto s = Enter(at); !s.ok()) return s;
      auto e3 = ParseCondExpr();
      Leave();
      if (!e3.ok()) return e3.status();
      expr3 = std::move(*e3);
    }
    std::vector<ExprPtr> kids;
    kids.push_back(std::move(expr2));
    kids.push_back(std::move(expr1));
    kids.push_back(std::move(expr3));
    auto c = Make(ExprKind::kCond, at, std::move(kids));
    if (!c.ok()) return c.status();
    expr1 = std::move(*c);
  }
  return expr1;
}

absl::StatusOr<ExprPtr> Parser::ParseOr() {
  ASSIGN_OR_RETURN_EXPR(left, ParseAnd());
  while (IsName("or")) {
    const Token at = Cur();
    Next();
    ASSIGN_OR_RETURN_EXPR(right, ParseAnd());
    auto b = Binary("or", at, std::move(left), std::move(right));
    if (!b.ok()) return b.status();
    left = std::move(*b);
  }
  return left;
}

absl::StatusOr<ExprPtr> Parser::ParseAnd() {
  ASSIGN_OR_RETURN_EXPR(left, ParseNot());
  while (IsName("and")) {
    const Token at = Cur();
    Next();
    ASSIGN_OR_RETURN_EXPR(right, ParseNot());
    auto b = Binary("and", at, std::move(left), std::move(right));
    if (!b.ok()) return b.status();
    left = std::move(*b);
  }
  return left;
}

absl::StatusOr<ExprPtr> Parser::ParseNot() {
  if (IsName("not")) {
    const Token at = Cur();
    Next();
    if (auto s = Enter(at); !s.ok()) return s;
    auto inner = ParseNot();
    Leave();
    if (!inner.ok()) return inner.status();
    std::vector<ExprPtr> kids;
    kids.push_back(std::move(*inner));
    auto e = Make(ExprKind::kUnary, at, std::move(kids));
    if (e.ok()) (*e)->name = "not";
    return e;
  }
  return ParseCompare();
}

absl::StatusOr<ExprPtr> Parser::ParseCompare() {
  const Token at = Cur();
  ASSIGN_OR_RETURN_EXPR(first, ParseMath1());
  std::vector<ExprPtr> kids;
  std::vector<std::string> ops;
  kids.push_back(std::move(first));
  while (true) {
    std::string op;
    if (Cur().kind == Tok::kOp && (Cur().value == "==" || Cur().value == "!=" || Cur().value == "<" ||
                                   Cur().value == "<=" || Cur().value == ">" || Cur().value == ">=")) {
      op = Cur().value;
      Next();
    } else if (IsName("in")) {
      op = "in";
      Next();
    } else if (IsName("not") && Look().kind == Tok::kName && Look().value == "in") {
      op = "notin";
      Next();
      Next();
    } else {
      break;
    }
    ASSIGN_OR_RETURN_EXPR(rhs, ParseMath1());
    kids.push_back(std::move(rhs));
    ops.push_back(std::move(op));
  }
  if (ops.empty()) return std::move(kids[0]);
  auto e = Make(ExprKind::kCompare, at, std::move(kids));
  if (e.ok()) (*e)->ops = std::move(ops);
  return e;
}

absl::StatusOr<ExprPtr> Parser::ParseMath1() {
  ASSIGN_OR_RETURN_EXPR(left, ParseConcat());
  while (IsOp("+") || IsOp("-")) {
    const Token at = Cur();
    Next();
    ASSIGN_OR_RETURN_EXPR(right, ParseConcat());
    auto b = Binary(at.value, at, std::move(left), std::move(right));
    if (!b.ok()) return b.status();
    left = std::move(*b);
  }
  return left;
}

absl::StatusOr<ExprPtr> Parser::ParseConcat() {
  ASSIGN_OR_RETURN_EXPR(left, ParseMath2());
  while (IsOp("~")) {
    const Token at = Cur();
    Next();
    ASSIGN_OR_RETURN_EXPR(right, ParseMath2());
    auto b = Binary("~", at, std::move(left), std::move(right));
    if (!b.ok()) return b.status();
    left = std::move(*b);
  }
  return left;
}

absl::StatusOr<ExprPtr> Parser::ParseMath2() {
  ASSIGN_OR_RETURN_EXPR(left, ParsePow());
  while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
    const Token at = Cur();
    Next();
    ASSIGN_OR_RETURN_EXPR(right, ParsePow());
    auto b = Binary(at.value, at, std::move(left), std::move(right));
    if (!b.ok()) return b.status();
    left = std::move(*b);
  }
  return left;
}

absl::StatusOr<ExprPtr> Parser::ParsePow() {
  ASSIGN_OR_RETURN_EXPR(left, ParseUnary(true));
  while (IsOp("**")) {
    const Token at = Cur();
    Next();
    ASSIGN_OR_RETURN_EXPR(right, ParseUnary(true));
    auto b = Binary("**", at, std::move(left), std::move(right));
    if (!b.ok()) return b.status();
    left = std::move(*b);
  }
  return left;
}

absl::StatusOr<ExprPtr> Parser::ParseUnary(bool with_filter) {
  ExprPtr node;
  if (IsOp("-") || IsOp("+")) {
    const Token at = Cur();
    Next();
    if (auto s = Enter(at); !s.ok()) return s;
    auto inner = ParseUnary(false);
    Leave();
    if (!inner.ok()) return inner.status();
    std::vector<ExprPtr> kids;
    kids.push_back(std::move(*inner));
    auto e = Make(ExprKind::kUnary, at, std::move(kids));
    if (!e.ok()) return e.status();
    (*e)->name = at.value;
    node = std::move(*e);
  } else {
    auto p = ParsePrimary();
    if (!p.ok()) return p.status();
    node = std::move(*p);
  }
  auto post = ParsePostfix(std::move(node));
  if (!post.ok() || !with_filter) return post;
  return ParseFilterExpr(std::move(*post));
}

absl::StatusOr<ExprPtr> Parser::ParsePrimary() {
  const Token t = Cur();
  if (t.kind == Tok::kName) {
    Next();
    auto e = Make(t.value == "true" || t.value == "false" || t.value == "True" || t.value == "False" ||
                          t.value == "none" || t.value == "None"
                      ? ExprKind::kLiteral : ExprKind::kName, t, {});
    if (!e.ok()) return e;
    if (t.value == "true" || t.value == "True") (*e)->literal = Value::Bool(true);
    else if (t.value == "false" || t.value == "False") (*e)->literal = Value::Bool(false);
    else if (t.value == "none" || t.value == "None") (*e)->literal = Value::None();
    else (*e)->name = t.value;
    return e;
  }
  if (t.kind == Tok::kString) {
    std::string buf;
    while (Cur().kind == Tok::kString) {
      buf += Cur().value;
      Next();
    }
    auto e = Make(ExprKind::kLiteral, t, {});
    if (e.ok()) (*e)->literal = Value::String(std::move(buf));
    return e;
  }
  if (t.kind == Tok::kInt || t.kind == Tok::kFloat) {
    Next();
    auto e = Make(ExprKind::kLiteral, t, {});
    if (!e.ok()) return e;
    if (t.kind == Tok::kFloat) {
      (*e)->literal = Value::Float(std::strtod(t.value.c_str(), nullptr));
    } else {
      int64_t v = 0;
      auto res = std::from_chars(t.value.data(), t.value.data() + t.value.size(), v);
      if (res.ec != std::errc()) return Error(t, "integer literal out of range");
      (*e)->literal = Value::Int(v);
    }
    return e;
  }
  if (t.kind == Tok::kOp && (t.value == "(" || t.value == "[" || t.value == "{")) {
    Next();
    if (auto s = Enter(t); !s.ok()) return s;
    absl::StatusOr<ExprPtr> r;
    if (t.value == "(") {
      r = ParseTuple(true, "", true);
      if (r.ok()) {
        if (auto s = ExpectOp(")"); !s.ok()) r = s;
      }
    } else {
      const bool dict = t.value == "{";
      const std::string close = dict ? "}" : "]";
      std::vector<ExprPtr> items;
      absl::Status st;
      while (st.ok() && !IsOp(close)) {
        if (!items.empty()) {
          st = ExpectOp(",");
          if (!st.ok() || IsOp(close)) break;
        }
        auto k = ParseExpression();
        if (!k.ok()) { st = k.status(); break; }
        items.push_back(std::move(*k));
        if (dict) {
          st = ExpectOp(":");
          if (!st.ok()) break;
          auto v = ParseExpression();
          if (!v.ok()) { st = v.status(); break; }
          items.push_back(std::move(*v));
        }
      }
      if (st.ok()) st = ExpectOp(close);
      if (st.ok()) r = Make(dict ? ExprKind::kDict : ExprKind::kList, t, std::move(items));
      else r = st;
    }
    Leave();
    return r;
  }
  return Unexpected(t);
}

}  // namespace llmserve::chat::jinja
