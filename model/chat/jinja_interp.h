// The Jinja evaluator: runs a parsed template over a frame of variables, with jinja2's
// scoping (a fresh scope per loop iteration and per macro call, lexical macro closures),
// Python operator semantics and the caps of TemplateLimits. One Interp per render.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/chat/chat_template_options.h"
#include "model/chat/jinja_ast.h"
#include "model/chat/jinja_value.h"

namespace llmserve::chat::jinja {

// One variable scope; lookups fall through to the parent.
struct Frame {
  absl::flat_hash_map<std::string, Value> vars;
  std::shared_ptr<Frame> parent;
  // The innermost binding of `name`, or nullptr.
  const Value* Lookup(std::string_view name) const;
};

// Control flow out of a statement.
enum class Flow { kNormal, kBreak, kContinue };

// jinja2-style runtime errors ("TypeError: ..."), all INVALID_ARGUMENT: bad templates or input.
absl::Status TypeError(std::string_view message);
absl::Status ValueError(std::string_view message);
absl::Status UndefinedError(const Value& undefined);
absl::Status RuntimeError(std::string_view message);

// Arguments bound to parameter names: nullopt where the caller passed nothing.
using BoundArgs = std::vector<std::optional<Value>>;
// Binds `args` to `names` (positional first, then keywords), failing on extras.
absl::StatusOr<BoundArgs> BindArgs(std::string_view fn, CallArgs& args,
                                   std::initializer_list<std::string_view> names);

class Interp {
 public:
  Interp(const TemplateLimits& limits, const RenderOptions& options);
  ~Interp();
  Interp(const Interp&) = delete;
  Interp& operator=(const Interp&) = delete;

  // Renders `ast` with `globals` as the outermost scope, into *out.
  absl::Status Run(const TemplateAst& ast, std::shared_ptr<Frame> globals, std::string* out);

  // --- services for filters, tests and callables
  // Charges `n` evaluation steps.
  absl::Status Step(uint64_t n = 1);
  // Charges `bytes` of allocation and checks one string's size.
  absl::Status ChargeString(size_t bytes);
  // Checks a collection's element count and charges its allocation.
  absl::Status ChargeCollection(size_t count);
  // A list/tuple after the size and nesting checks.
  absl::StatusOr<Value> MakeList(std::vector<Value> items, bool is_tuple = false, bool is_iter = false,
                                 const char* view = nullptr);
  // A dict after the size and nesting checks.
  absl::StatusOr<Value> MakeDict(DictObj dict);
  // A new namespace (kept alive by this Interp; see the destructor).
  absl::StatusOr<Value> MakeNamespace(DictObj attrs);
  // Calls a callable value.
  absl::StatusOr<Value> CallValue(const Value& fn, CallArgs args);
  // jinja2 sandbox getattr: attribute, then item; methods; unsafe ones blocked.
  absl::StatusOr<Value> GetAttr(const Value& obj, const std::string& name);
  // jinja2 sandbox getitem: item, then attribute for string keys.
  absl::StatusOr<Value> GetItem(const Value& obj, const Value& key);
  // The elements `for` would visit (dict: keys, str: characters, undefined: none).
  absl::StatusOr<std::vector<Value>> Iterate(const Value& v);
  // Applies filter `name`.
  absl::StatusOr<Value> ApplyFilter(const std::string& name, const Value& v, CallArgs args);
  // Applies test `name`.
  absl::StatusOr<bool> ApplyTest(const std::string& name, const Value& v, CallArgs args);
  // Calls a macro body (also `caller` of a call block).
  absl::StatusOr<Value> CallMacro(const Stmt& def, const std::shared_ptr<Frame>& closure,
                                  const Value& caller, CallArgs args);
  const TemplateLimits& limits() const { return limits_; }
  const RenderOptions& options() const { return options_; }

  // Python binary operators (+ - * / // % ** ~) and comparisons (== != < <= > >= in notin).
  absl::StatusOr<Value> BinaryOp(std::string_view op, const Value& a, const Value& b);
  absl::StatusOr<bool> CompareOp(std::string_view op, const Value& a, const Value& b);
  // Python a < b (for sort/min/max); errors on unorderable types.
  absl::StatusOr<bool> Less(const Value& a, const Value& b);

 private:
  absl::Status ExecBody(const Body& body, const std::shared_ptr<Frame>& frame, Flow* flow);
  absl::Status ExecStmt(const Stmt& s, const std::shared_ptr<Frame>& frame, Flow* flow);
  absl::Status ExecFor(const Stmt& s, const std::shared_ptr<Frame>& frame, Flow* flow);
  absl::Status ExecSet(const Stmt& s, const std::shared_ptr<Frame>& frame);
  absl::Status Assign(const Target& t, const Value& v, const std::shared_ptr<Frame>& frame);
  absl::StatusOr<std::string> Capture(const Body& body, const std::shared_ptr<Frame>& frame);
  absl::StatusOr<Value> ApplyFilterChain(const std::vector<ExprPtr>& filters, Value v,
                                         const std::shared_ptr<Frame>& frame);
  absl::Status Write(std::string_view text);
  absl::Status Locate(absl::Status st, int line, int col);

  absl::StatusOr<Value> Eval(const Expr& e, const std::shared_ptr<Frame>& frame);
  absl::StatusOr<Value> EvalImpl(const Expr& e, const std::shared_ptr<Frame>& frame);
  absl::StatusOr<CallArgs> EvalArgs(const Expr& e, size_t first, const std::shared_ptr<Frame>& frame);
  absl::StatusOr<Value> EvalSlice(const Expr& e, const std::shared_ptr<Frame>& frame);

  const TemplateLimits& limits_;
  const RenderOptions& options_;
  std::shared_ptr<Frame> root_;
  std::string* out_ = nullptr;
  uint64_t steps_ = 0;
  size_t allocated_ = 0;
  int depth_ = 0;
  int call_depth_ = 0;
  bool located_ = false;
  std::vector<std::shared_ptr<NamespaceObj>> namespaces_;
  CompareBudget compare_budget_;
};

}  // namespace llmserve::chat::jinja
