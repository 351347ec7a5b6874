// The Jinja AST: expressions and statements as the parser builds them. Immutable once
// parsed, so one tree is shared by every render of a template (on any thread).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/chat/jinja_value.h"

namespace llmserve::chat::jinja {

// Expression kinds.
enum class ExprKind {
  kLiteral,   // value
  kName,      // name
  kList,      // children = items
  kTuple,     // children = items
  kDict,      // children = k0, v0, k1, v1, ...
  kGetAttr,   // children[0].name
  kGetItem,   // children[0][children[1]]
  kSlice,     // children[0][c1:c2:c3], absent bounds are nullptr
  kCall,      // children[0](children[1..], kwargs)
  kFilter,    // children[0] | name(children[1..], kwargs); children[0] null in filter blocks
  kTest,      // children[0] is [not] name(children[1..]); negated
  kUnary,     // op children[0]: "-", "+", "not"
  kBinary,    // children[0] op children[1]: + - * / // % ** ~ and or
  kCompare,   // children[0] ops[0] children[1] ops[1] children[2] ...
  kCond,      // children[1] if children[0] else children[2] (children[2] may be null)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// One expression node.
struct Expr {
  ExprKind kind;
  int line = 0;
  int col = 0;
  Value literal;                                       // kLiteral
  std::string name;                                    // kName, attr, filter/test, op
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> kwargs; // calls, filters, tests
  std::vector<std::string> ops;                        // kCompare
  bool negated = false;                                // kTest
  int depth = 1;                                       // height of this subtree
};

// Assignment target of for/set: one name, a tuple of names, or namespace.attr.
struct Target {
  std::vector<std::string> names;  // one or more
  bool is_tuple = false;
  std::string attr;                // non-empty: names[0].attr (namespace assignment)
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

// Statement kinds.
enum class StmtKind {
  kText,      // text
  kPrint,     // {{ expr }}
  kIf,        // branches, else_body
  kFor,       // target in expr [if cond] body [else else_body]
  kSet,       // set target = expr
  kSetBlock,  // set target [| filters] body endset
  kMacro,     // macro name(params) body
  kCallBlock, // call[(params)] expr body: `caller` in expr's macro renders body
  kFilter,    // filter filters body
  kBreak,
  kContinue,
};

// A macro (or call-block caller) parameter with its optional default.
struct Param {
  std::string name;
  ExprPtr default_value;  // may be null
};

// One statement node.
struct Stmt {
  StmtKind kind;
  int line = 0;
  int col = 0;
  std::string text;                                  // kText; macro name
  ExprPtr expr;                                      // print, for iterable, set value, call
  ExprPtr cond;                                      // for's `if` filter
  Target target;                                     // for, set
  std::vector<std::pair<ExprPtr, Body>> branches;    // if / elif
  Body body;
  Body else_body;
  std::vector<Param> params;                         // macro, call block
  std::vector<ExprPtr> filters;                      // kFilter / kSetBlock: kFilter nodes
  bool uses_caller = false;                          // macro body references `caller`
  bool uses_kwargs = false;                          // ... `kwargs` (takes extra keywords)
  bool uses_varargs = false;                         // ... `varargs` (takes extra positionals)
};

// A parsed template.
struct TemplateAst {
  Body body;
};

}  // namespace llmserve::chat::jinja
