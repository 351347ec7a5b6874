// Internal: the recursive-descent parser shared by jinja_parser.cc (statements) and
// jinja_parse_expr.cc (expressions).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/chat/jinja_ast.h"
#include "model/chat/jinja_lexer.h"

namespace llmserve::chat::jinja {

class Parser {
 public:
  Parser(std::vector<Token> tokens, int max_depth) : toks_(std::move(tokens)), max_depth_(max_depth) {}

  // The whole template.
  absl::StatusOr<Body> ParseAll();

 private:
  // --- statements (jinja_parser.cc)
  absl::Status ParseBody(Body* out, std::initializer_list<std::string_view> ends, std::string* found);
  absl::Status ParseStatement(Body* out);
  absl::Status ParseFor(Stmt* s);
  absl::Status ParseIf(Stmt* s);
  absl::Status ParseSet(Stmt* s);
  absl::Status ParseMacro(Stmt* s);
  absl::Status ParseCallBlock(Stmt* s);
  absl::Status ParseFilterBlock(Stmt* s);
  absl::Status ParseParams(std::vector<Param>* params);
  absl::Status ParseTarget(Target* t, bool with_namespace, std::string_view end_name);
  absl::Status ParseFilterChain(std::vector<ExprPtr>* filters);
  absl::Status ExpectBlockEnd();

  // --- expressions (jinja_parse_expr.cc)
 public:
  absl::StatusOr<ExprPtr> ParseTuple(bool with_condexpr, std::string_view extra_end, bool explicit_parens);
  absl::StatusOr<ExprPtr> ParseExpression(bool with_condexpr = true);

 private:
  absl::StatusOr<ExprPtr> ParseCondExpr();
  absl::StatusOr<ExprPtr> ParseOr();
  absl::StatusOr<ExprPtr> ParseAnd();
  absl::StatusOr<ExprPtr> ParseNot();
  absl::StatusOr<ExprPtr> ParseCompare();
  absl::StatusOr<ExprPtr> ParseMath1();
  absl::StatusOr<ExprPtr> ParseConcat();
  absl::StatusOr<ExprPtr> ParseMath2();
  absl::StatusOr<ExprPtr> ParsePow();
  absl::StatusOr<ExprPtr> ParseUnary(bool with_filter);
  absl::StatusOr<ExprPtr> ParsePrimary();
  absl::StatusOr<ExprPtr> ParsePostfix(ExprPtr node);
  absl::StatusOr<ExprPtr> ParseFilterExpr(ExprPtr node);
  absl::StatusOr<ExprPtr> ParseSubscript(ExprPtr node);
  // A call of `node` (at "("), reported at the callee's position.
  absl::StatusOr<ExprPtr> ParseCall(ExprPtr node);
  absl::StatusOr<ExprPtr> ParseSubscribed();
  absl::StatusOr<ExprPtr> ParseFilter(ExprPtr node);
  absl::StatusOr<ExprPtr> ParseTest(ExprPtr node);
  absl::Status ParseCallArgs(Expr* call);
  absl::StatusOr<ExprPtr> Make(ExprKind kind, const Token& at, std::vector<ExprPtr> children);
  absl::StatusOr<ExprPtr> Binary(std::string op, const Token& at, ExprPtr a, ExprPtr b);

  // --- token stream
  const Token& Cur() const { return toks_[pos_]; }
  const Token& Look(size_t k = 1) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  void Next() { if (pos_ + 1 < toks_.size()) ++pos_; }
  bool IsOp(std::string_view op) const { return Cur().kind == Tok::kOp && Cur().value == op; }
  bool IsName(std::string_view n) const { return Cur().kind == Tok::kName && Cur().value == n; }
  bool SkipOp(std::string_view op) { if (!IsOp(op)) return false; Next(); return true; }
  bool SkipName(std::string_view n) { if (!IsName(n)) return false; Next(); return true; }
  absl::Status ExpectOp(std::string_view op);
  absl::StatusOr<std::string> ExpectName();
  absl::Status Error(const Token& at, std::string_view message) const;
  absl::Status Unexpected(const Token& at) const;
  absl::Status Enter(const Token& at);
  void Leave() { --depth_; }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int max_depth_;
  int depth_ = 0;
  int loop_depth_ = 0;
};

// Describes a token as jinja2 does in errors ("'endfor'", "end of print statement").
std::string DescribeToken(const Token& t);

}  // namespace llmserve::chat::jinja
