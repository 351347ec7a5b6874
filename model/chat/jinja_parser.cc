// Statement parsing ({% for %}, {% if %}, {% set %}, {% macro %}, ...) and the token helpers.
#include "model/chat/jinja_parser.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/chat/jinja_filters.h"
#include "model/chat/jinja_parser_impl.h"

namespace llmserve::chat::jinja {
namespace {

// True if the subtree references `name` as a variable.
bool References(const Expr* e, std::string_view name) {
  if (e == nullptr) return false;
  if (e->kind == ExprKind::kName && e->name == name) return true;
  for (const auto& c : e->children) {
    if (References(c.get(), name)) return true;
  }
  for (const auto& [k, v] : e->kwargs) {
    if (References(v.get(), name)) return true;
  }
  return false;
}

bool BodyReferences(const Body& body, std::string_view name) {
  for (const auto& s : body) {
    if (References(s->expr.get(), name) || References(s->cond.get(), name)) return true;
    for (const auto& [c, b] : s->branches) {
      if (References(c.get(), name) || BodyReferences(b, name)) return true;
    }
    for (const auto& f : s->filters) {
      if (References(f.get(), name)) return true;
    }
    for (const auto& p : s->params) {
      if (References(p.default_value.get(), name)) return true;
    }
    if (BodyReferences(s->body, name) || BodyReferences(s->else_body, name)) return true;
  }
  return false;
}

}  // namespace

std::string DescribeToken(const Token& t) {
  switch (t.kind) {
    case Tok::kVarEnd: return "end of print statement";
    case Tok::kBlockEnd: return "end of statement block";
    case Tok::kEof: return "end of template";
    case Tok::kString: return "string";
    case Tok::kData: return "template data";
    case Tok::kVarBegin: return "begin of print statement";
    case Tok::kBlockBegin: return "begin of statement block";
    default: return absl::StrCat("'", t.value, "'");
  }
}

absl::Status Parser::Error(const Token& at, std::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat("line ", at.line, " col ", at.col, ": ", AV(message)));
}

absl::Status Parser::Unexpected(const Token& at) const {
  return Error(at, absl::StrCat("unexpected ", DescribeToken(at)));
}

absl::Status Parser::Enter(const Token& at) {
  if (++depth_ > max_depth_) return Error(at, "template nested too deeply");
  return absl::OkStatus();
}

absl::Status Parser::ExpectOp(std::string_view op) {
  if (SkipOp(op)) return absl::OkStatus();
  return Error(Cur(), absl::StrCat("expected '", AV(op), "', got ", DescribeToken(Cur())));
}

absl::StatusOr<std::string> Parser::ExpectName() {
  if (Cur().kind != Tok::kName) {
    return Error(Cur(), absl::StrCat("expected a name, got ", DescribeToken(Cur())));
  }
  std::string n = Cur().value;
  Next();
  return n;
}

absl::Status Parser::ExpectBlockEnd() {
  if (Cur().kind == Tok::kBlockEnd) {
    Next();
    return absl::OkStatus();
  }
  return Error(Cur(), absl::StrCat("expected end of statement block, got ", DescribeToken(Cur())));
}

absl::StatusOr<Body> Parser::ParseAll() {
  Body body;
  if (auto s = ParseBody(&body, {}, nullptr); !s.ok()) return s;
  return body;
}

// Parses statements until a {% tag %} named in `ends` (its name is consumed and stored in
// *found; the block end is not) or, with no `ends`, the end of the template.
absl::Status Parser::ParseBody(Body* out, std::initializer_list<std::string_view> ends,
                               std::string* found) {
  if (auto s = Enter(Cur()); !s.ok()) return s;
  while (true) {
    const Token& t = Cur();
    if (t.kind == Tok::kEof) {
      if (ends.size() == 0) break;
      std::vector<std::string> names;
      for (auto e : ends) names.push_back(absl::StrCat("'", AV(e), "'"));
      return Error(t, absl::StrCat("unexpected end of template, expected ", absl::StrJoin(names, " or ")));
    }
    if (t.kind == Tok::kData) {
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kText;
      s->line = t.line;
      s->col = t.col;
      s->text = t.value;
      out->push_back(std::move(s));
      Next();
      continue;
    }
    if (t.kind == Tok::kVarBegin) {
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kPrint;
      s->line = t.line;
      s->col = t.col;
      Next();
      auto e = ParseTuple(true, "", false);
      if (!e.ok()) return e.status();
      s->expr = std::move(*e);
      if (Cur().kind != Tok::kVarEnd) {
        return Error(Cur(), absl::StrCat("expected end of print statement, got ", DescribeToken(Cur())));
      }
      Next();
      out->push_back(std::move(s));
      continue;
    }
    if (t.kind != Tok::kBlockBegin) return Unexpected(t);
    const Token& name = Look();
    if (name.kind == Tok::kName) {
      for (auto e : ends) {
        if (name.value == e) {
          Next();
          Next();
          *found = name.value;
          Leave();
          return absl::OkStatus();
        }
      }
    }
    Next();
    if (auto s = ParseStatement(out); !s.ok()) return s;
  }
  Leave();
  return absl::OkStatus();
}

absl::Status Parser::ParseStatement(Body* out) {
  const Token t = Cur();
  if (t.kind != Tok::kName) return Error(t, "tag name expected");
  auto s = std::make_unique<Stmt>();
  s->line = t.line;
  s->col = t.col;
  Next();
  absl::Status st;
  if (t.value == "for") st = ParseFor(s.get());
  else if (t.value == "if") st = ParseIf(s.get());
  else if (t.value == "set") st = ParseSet(s.get());
  else if (t.value == "macro") st = ParseMacro(s.get());
  else if (t.value == "call") st = ParseCallBlock(s.get());
  else if (t.value == "filter") st = ParseFilterBlock(s.get());
  else if (t.value == "break" || t.value == "continue") {
    if (loop_depth_ == 0) return Error(t, absl::StrCat("'", t.value, "' outside of a loop"));
    s->kind = t.value == "break" ? StmtKind::kBreak : StmtKind::kContinue;
    st = ExpectBlockEnd();
  } else if (t.value.rfind("end", 0) == 0 || t.value == "else" || t.value == "elif") {
    return Error(t, absl::StrCat("unexpected '", t.value, "'"));
  } else {
    return Error(t, absl::StrCat("Encountered unknown tag '", t.value, "'."));
  }
  if (!st.ok()) return st;
  out->push_back(std::move(s));
  return absl::OkStatus();
}

absl::Status Parser::ParseTarget(Target* t, bool with_namespace, std::string_view end_name) {
  if (with_namespace && Cur().kind == Tok::kName && Look().kind == Tok::kOp && Look().value == ".") {
    t->names.push_back(Cur().value);
    Next();
    Next();
    auto attr = ExpectName();
    if (!attr.ok()) return attr.status();
    t->attr = *attr;
    return absl::OkStatus();
  }
  const bool parens = SkipOp("(");
  while (true) {
    if (Cur().kind != Tok::kName) return Error(Cur(), absl::StrCat("can't assign to ", DescribeToken(Cur())));
    const std::string& n = Cur().value;
    if (n == "true" || n == "false" || n == "none" || n == "True" || n == "False" || n == "None") {
      return Error(Cur(), "can't assign to 'const'");
    }
    t->names.push_back(n);
    Next();
    if (!SkipOp(",")) break;
    t->is_tuple = true;
    if (IsOp(")") || IsOp("=") || Cur().kind == Tok::kBlockEnd || (!end_name.empty() && IsName(end_name))) {
      break;
    }
  }
  if (parens) {
    t->is_tuple = true;
    return ExpectOp(")");
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseFor(Stmt* s) {
  s->kind = StmtKind::kFor;
  if (auto st = ParseTarget(&s->target, false, "in"); !st.ok()) return st;
  if (!SkipName("in")) return Error(Cur(), absl::StrCat("expected 'in', got ", DescribeToken(Cur())));
  auto iter = ParseTuple(false, "recursive", false);
  if (!iter.ok()) return iter.status();
  s->expr = std::move(*iter);
  if (SkipName("if")) {
    auto c = ParseExpression();
    if (!c.ok()) return c.status();
    s->cond = std::move(*c);
  }
  if (IsName("recursive")) return Error(Cur(), "recursive loops are not supported");
  if (auto st = ExpectBlockEnd(); !st.ok()) return st;
  std::string found;
  ++loop_depth_;
  absl::Status st = ParseBody(&s->body, {"endfor", "else"}, &found);
  --loop_depth_;
  if (!st.ok()) return st;
  if (found == "else") {
    if (auto e = ExpectBlockEnd(); !e.ok()) return e;
    if (auto e = ParseBody(&s->else_body, {"endfor"}, &found); !e.ok()) return e;
  }
  return ExpectBlockEnd();
}

absl::Status Parser::ParseIf(Stmt* s) {
  s->kind = StmtKind::kIf;
  while (true) {
    auto cond = ParseTuple(false, "", false);
    if (!cond.ok()) return cond.status();
    if (auto st = ExpectBlockEnd(); !st.ok()) return st;
    Body body;
    std::string found;
    if (auto st = ParseBody(&body, {"elif", "else", "endif"}, &found); !st.ok()) return st;
    s->branches.emplace_back(std::move(*cond), std::move(body));
    if (found == "elif") continue;
    if (found == "else") {
      if (auto st = ExpectBlockEnd(); !st.ok()) return st;
      if (auto st = ParseBody(&s->else_body, {"endif"}, &found); !st.ok()) return st;
    }
    return ExpectBlockEnd();
  }
}

absl::Status Parser::ParseSet(Stmt* s) {
  if (auto st = ParseTarget(&s->target, true, ""); !st.ok()) return st;
  if (SkipOp("=")) {
    s->kind = StmtKind::kSet;
    auto e = ParseTuple(true, "", false);
    if (!e.ok()) return e.status();
    s->expr = std::move(*e);
    return ExpectBlockEnd();
  }
  s->kind = StmtKind::kSetBlock;
  if (IsOp("|")) {
    if (auto st = ParseFilterChain(&s->filters); !st.ok()) return st;
  }
  if (auto st = ExpectBlockEnd(); !st.ok()) return st;
  std::string found;
  if (auto st = ParseBody(&s->body, {"endset"}, &found); !st.ok()) return st;
  return ExpectBlockEnd();
}

absl::Status Parser::ParseFilterChain(std::vector<ExprPtr>* filters) {
  bool first = !IsOp("|");
  while (first || SkipOp("|")) {
    first = false;
    const Token at = Cur();
    auto name = ExpectName();
    if (!name.ok()) return name.status();
    if (!IsKnownFilter(*name)) return Error(at, absl::StrCat("No filter named '", *name, "'."));
    auto f = std::make_unique<Expr>();
    f->kind = ExprKind::kFilter;
    f->line = at.line;
    f->col = at.col;
    f->name = *name;
    f->children.push_back(nullptr);
    if (IsOp("(")) {
      if (auto st = ParseCallArgs(f.get()); !st.ok()) return st;
    }
    filters->push_back(std::move(f));
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseParams(std::vector<Param>* params) {
  if (auto st = ExpectOp("("); !st.ok()) return st;
  while (!IsOp(")")) {
    if (!params->empty()) {
      if (auto st = ExpectOp(","); !st.ok()) return st;
    }
    Param p;
    auto name = ExpectName();
    if (!name.ok()) return name.status();
    p.name = *name;
    if (SkipOp("=")) {
      auto d = ParseExpression();
      if (!d.ok()) return d.status();
      p.default_value = std::move(*d);
    } else if (!params->empty() && params->back().default_value) {
      return Error(Cur(), "non-default argument follows default argument");
    }
    params->push_back(std::move(p));
  }
  return ExpectOp(")");
}

absl::Status Parser::ParseMacro(Stmt* s) {
  s->kind = StmtKind::kMacro;
  auto name = ExpectName();
  if (!name.ok()) return name.status();
  s->text = *name;
  if (auto st = ParseParams(&s->params); !st.ok()) return st;
  if (auto st = ExpectBlockEnd(); !st.ok()) return st;
  std::string found;
  const int saved_loops = loop_depth_;
  loop_depth_ = 0;
  absl::Status st = ParseBody(&s->body, {"endmacro"}, &found);
  loop_depth_ = saved_loops;
  if (!st.ok()) return st;
  s->uses_caller = BodyReferences(s->body, "caller");
  s->uses_kwargs = BodyReferences(s->body, "kwargs");
  s->uses_varargs = BodyReferences(s->body, "varargs");
  return ExpectBlockEnd();
}

absl::Status Parser::ParseCallBlock(Stmt* s) {
  s->kind = StmtKind::kCallBlock;
  if (IsOp("(")) {
    if (auto st = ParseParams(&s->params); !st.ok()) return st;
  }
  const Token at = Cur();
  auto e = ParseExpression();
  if (!e.ok()) return e.status();
  if ((*e)->kind != ExprKind::kCall) return Error(at, "expected call");
  s->expr = std::move(*e);
  if (auto st = ExpectBlockEnd(); !st.ok()) return st;
  std::string found;
  const int saved_loops = loop_depth_;
  loop_depth_ = 0;
  absl::Status st = ParseBody(&s->body, {"endcall"}, &found);
  loop_depth_ = saved_loops;
  if (!st.ok()) return st;
  return ExpectBlockEnd();
}

absl::Status Parser::ParseFilterBlock(Stmt* s) {
  s->kind = StmtKind::kFilter;
  if (auto st = ParseFilterChain(&s->filters); !st.ok()) return st;
  if (auto st = ExpectBlockEnd(); !st.ok()) return st;
  std::string found;
  if (auto st = ParseBody(&s->body, {"endfilter"}, &found); !st.ok()) return st;
  return ExpectBlockEnd();
}

absl::StatusOr<std::unique_ptr<TemplateAst>> ParseTemplate(std::string_view source, int max_depth) {
  auto tokens = Lex(source);
  if (!tokens.ok()) return tokens.status();
  Parser parser(std::move(*tokens), max_depth);
  auto body = parser.ParseAll();
  if (!body.ok()) return body.status();
  auto ast = std::make_unique<TemplateAst>();
  ast->body = std::move(*body);
  return ast;
}

}  // namespace llmserve::chat::jinja
