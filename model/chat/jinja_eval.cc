// Statement execution, scoping, macros and the resource accounting of Interp.
#include <utility>

#include "absl/strings/str_cat.h"
#include "model/chat/jinja_interp.h"
#include "model/chat/jinja_pystr.h"

namespace llmserve::chat::jinja {
namespace {

// A {% macro %} (or a call block's `caller`), closing over the frame it was defined in.
// The closure is weak: frames own values, values own macros, so a strong pointer would
// make a cycle.
class MacroCallable : public Callable {
 public:
  MacroCallable(const Stmt* def, std::weak_ptr<Frame> closure, Value caller)
      : def_(def), closure_(std::move(closure)), caller_(std::move(caller)) {}
  absl::StatusOr<Value> Call(Interp& interp, CallArgs args) const override {
    return interp.CallMacro(*def_, closure_.lock(), caller_, std::move(args));
  }
  std::string Repr() const override {
    return absl::StrCat("<Macro '", def_->kind == StmtKind::kMacro ? def_->text : "caller", "'>");
  }
  int Depth() const override { return 1 + caller_.Depth(); }

 private:
  const Stmt* def_;
  std::weak_ptr<Frame> closure_;
  Value caller_;
};

}  // namespace

const Value* Frame::Lookup(std::string_view name) const {
  for (const Frame* f = this; f != nullptr; f = f->parent.get()) {
    auto it = f->vars.find(AV(name));
    if (it != f->vars.end()) return &it->second;
  }
  return nullptr;
}

absl::Status TypeError(std::string_view m) { return absl::InvalidArgumentError(absl::StrCat("TypeError: ", AV(m))); }
absl::Status ValueError(std::string_view m) { return absl::InvalidArgumentError(absl::StrCat("ValueError: ", AV(m))); }
absl::Status RuntimeError(std::string_view m) {
  return absl::InvalidArgumentError(absl::StrCat("TemplateRuntimeError: ", AV(m)));
}
absl::Status UndefinedError(const Value& u) {
  return absl::InvalidArgumentError(absl::StrCat(u.undefined_unsafe() ? "SecurityError: " : "UndefinedError: ",
                                                 u.undefined_message()));
}

absl::StatusOr<BoundArgs> BindArgs(std::string_view fn, CallArgs& args,
                                   std::initializer_list<std::string_view> names) {
  BoundArgs out(names.size());
  if (args.pos.size() > names.size()) {
    return TypeError(absl::StrCat(AV(fn), "() takes at most ", names.size(), " argument(s) (",
                                  args.pos.size(), " given)"));
  }
  for (size_t i = 0; i < args.pos.size(); ++i) out[i] = std::move(args.pos[i]);
  for (auto& [k, v] : args.kw) {
    size_t i = 0;
    for (auto n : names) {
      if (n == k) break;
      ++i;
    }
    if (i == names.size()) return TypeError(absl::StrCat(AV(fn), "() got an unexpected keyword argument '", k, "'"));
    if (out[i].has_value()) return TypeError(absl::StrCat(AV(fn), "() got multiple values for argument '", k, "'"));
    out[i] = std::move(v);
  }
  return out;
}

Interp::Interp(const TemplateLimits& limits, const RenderOptions& options)
    : limits_(limits), options_(options), compare_budget_(limits.max_steps) {}

Interp::~Interp() {
  // Namespaces are the only mutable objects, so the only way to make reference cycles
  // (ns.self = ns) or chains deeper than the nesting checks saw. Clearing every one while
  // all are still held breaks both without recursion.
  for (auto& ns : namespaces_) ns->attrs = DictObj();
  namespaces_.clear();
}

absl::Status Interp::Run(const TemplateAst& ast, std::shared_ptr<Frame> globals, std::string* out) {
  root_ = std::make_shared<Frame>();
  root_->parent = std::move(globals);
  out_ = out;
  Flow flow = Flow::kNormal;
  return ExecBody(ast.body, root_, &flow);
}

absl::Status Interp::Step(uint64_t n) {
  steps_ += n;
  if (steps_ > limits_.max_steps || compare_budget_.exhausted()) {
    return absl::ResourceExhaustedError(absl::StrCat("template exceeded max_steps (", limits_.max_steps, ")"));
  }
  return absl::OkStatus();
}

absl::Status Interp::ChargeString(size_t bytes) {
  if (bytes > limits_.max_string_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("string of ", bytes, " bytes exceeds max_string_bytes (", limits_.max_string_bytes, ")"));
  }
  allocated_ += bytes;
  if (allocated_ > limits_.max_alloc_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("template exceeded max_alloc_bytes (", limits_.max_alloc_bytes, ")"));
  }
  return Step(1 + bytes / 4096);
}

absl::Status Interp::ChargeCollection(size_t count) {
  if (count > limits_.max_collection_size) {
    return absl::ResourceExhaustedError(absl::StrCat("collection of ", count, " items exceeds max_collection_size (",
                                                     limits_.max_collection_size, ")"));
  }
  allocated_ += count * sizeof(Value);
  if (allocated_ > limits_.max_alloc_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("template exceeded max_alloc_bytes (", limits_.max_alloc_bytes, ")"));
  }
  return Step(1 + count / 64);
}

absl::StatusOr<Value> Interp::MakeList(std::vector<Value> items, bool is_tuple, bool is_iter,
                                       const char* view) {
  if (auto s = ChargeCollection(items.size()); !s.ok()) return s;
  Value v = Value::List(std::move(items), is_tuple, is_iter, view);
  if (v.Depth() > limits_.max_value_depth) {
    return absl::ResourceExhaustedError(absl::StrCat("value nested deeper than max_value_depth (", limits_.max_value_depth, ")"));
  }
  return v;
}

absl::StatusOr<Value> Interp::MakeDict(DictObj dict) {
  if (auto s = ChargeCollection(dict.size() * 2); !s.ok()) return s;
  if (dict.depth() > limits_.max_value_depth) {
    return absl::ResourceExhaustedError(absl::StrCat("value nested deeper than max_value_depth (", limits_.max_value_depth, ")"));
  }
  return Value::Dict(std::move(dict));
}

absl::StatusOr<Value> Interp::MakeNamespace(DictObj attrs) {
  if (auto s = ChargeCollection(namespaces_.size() + 1 + attrs.size()); !s.ok()) return s;
  auto ns = std::make_shared<NamespaceObj>();
  ns->attrs = std::move(attrs);
  namespaces_.push_back(ns);
  return Value::Namespace(std::move(ns));
}

absl::Status Interp::Write(std::string_view text) {
  if (out_->size() + text.size() > limits_.max_output_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("output exceeds max_output_bytes (", limits_.max_output_bytes, ")"));
  }
  out_->append(text);
  return absl::OkStatus();
}

absl::Status Interp::Locate(absl::Status st, int line, int col) {
  if (st.ok() || located_) return st;
  located_ = true;
  return absl::Status(st.code(), absl::StrCat("line ", line, " col ", col, ": ", st.message()));
}

absl::StatusOr<std::string> Interp::Capture(const Body& body, const std::shared_ptr<Frame>& frame) {
  std::string buf;
  std::string* saved = out_;
  out_ = &buf;
  Flow flow = Flow::kNormal;
  absl::Status st = ExecBody(body, frame, &flow);
  out_ = saved;
  if (!st.ok()) return st;
  if (auto s = ChargeString(buf.size()); !s.ok()) return s;
  return buf;
}

absl::Status Interp::ExecBody(const Body& body, const std::shared_ptr<Frame>& frame, Flow* flow) {
  for (const auto& s : body) {
    if (auto st = ExecStmt(*s, frame, flow); !st.ok()) return Locate(st, s->line, s->col);
    if (*flow != Flow::kNormal) return absl::OkStatus();
  }
  return absl::OkStatus();
}

absl::Status Interp::ExecStmt(const Stmt& s, const std::shared_ptr<Frame>& frame, Flow* flow) {
  if (auto st = Step(); !st.ok()) return st;
  if (++depth_ > limits_.max_eval_depth) {
    --depth_;
    return absl::ResourceExhaustedError(absl::StrCat("template exceeded max_eval_depth (", limits_.max_eval_depth, ")"));
  }
  absl::Status st;
  switch (s.kind) {
    case StmtKind::kText: st = Write(s.text); break;
    case StmtKind::kPrint: {
      auto v = Eval(*s.expr, frame);
      if (!v.ok()) { st = v.status(); break; }
      if (v->is_string()) { st = Write(v->str()); break; }
      std::string text = PyStr(*v);
      st = ChargeString(text.size());
      if (st.ok()) st = Write(text);
      break;
    }
    case StmtKind::kIf: {
      const Body* chosen = &s.else_body;
      for (const auto& [cond, body] : s.branches) {
        auto c = Eval(*cond, frame);
        if (!c.ok()) { st = c.status(); break; }
        if (Truthy(*c)) { chosen = &body; break; }
      }
      if (st.ok()) st = ExecBody(*chosen, frame, flow);
      break;
    }
    case StmtKind::kFor: st = ExecFor(s, frame, flow); break;
    case StmtKind::kSet:
    case StmtKind::kSetBlock: st = ExecSet(s, frame); break;
    case StmtKind::kMacro:
      frame->vars[s.text] = Value::Function(std::make_shared<MacroCallable>(&s, frame, Value()));
      break;
    case StmtKind::kCallBlock: {
      const Expr& call = *s.expr;
      auto fn = Eval(*call.children[0], frame);
      if (!fn.ok()) { st = fn.status(); break; }
      auto args = EvalArgs(call, 1, frame);
      if (!args.ok()) { st = args.status(); break; }
      args->kw.emplace_back("caller", Value::Function(std::make_shared<MacroCallable>(&s, frame, Value())));
      auto r = CallValue(*fn, std::move(*args));
      if (!r.ok()) { st = r.status(); break; }
      std::string text = PyStr(*r);
      st = Write(text);
      break;
    }
    case StmtKind::kFilter: {
      auto text = Capture(s.body, std::make_shared<Frame>(Frame{{}, frame}));
      if (!text.ok()) { st = text.status(); break; }
      auto v = ApplyFilterChain(s.filters, Value::String(std::move(*text)), frame);
      if (!v.ok()) { st = v.status(); break; }
      std::string out = PyStr(*v);
      st = Write(out);
      break;
    }
    case StmtKind::kBreak: *flow = Flow::kBreak; break;
    case StmtKind::kContinue: *flow = Flow::kContinue; break;
  }
  --depth_;
  return st;
}

absl::StatusOr<Value> Interp::ApplyFilterChain(const std::vector<ExprPtr>& filters, Value v,
                                               const std::shared_ptr<Frame>& frame) {
  for (const auto& f : filters) {
    auto args = EvalArgs(*f, 1, frame);
    if (!args.ok()) return args.status();
    auto r = ApplyFilter(f->name, v, std::move(*args));
    if (!r.ok()) return Locate(r.status(), f->line, f->col);
    v = std::move(*r);
  }
  return v;
}

absl::Status Interp::ExecFor(const Stmt& s, const std::shared_ptr<Frame>& frame, Flow* flow) {
  auto iterable = Eval(*s.expr, frame);
  if (!iterable.ok()) return iterable.status();
  auto items_or = Iterate(*iterable);
  if (!items_or.ok()) return items_or.status();
  std::vector<Value> items = std::move(*items_or);
  if (s.cond) {  // `for x in xs if cond`: filter first, so loop.length counts the kept ones
    std::vector<Value> kept;
    for (Value& item : items) {
      auto f = std::make_shared<Frame>(Frame{{}, frame});
      if (auto st = Assign(s.target, item, f); !st.ok()) return st;
      auto c = Eval(*s.cond, f);
      if (!c.ok()) return c.status();
      if (Truthy(*c)) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) return ExecBody(s.else_body, frame, flow);
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    if (auto st = Step(); !st.ok()) return st;
    auto f = std::make_shared<Frame>(Frame{{}, frame});
    if (auto st = Assign(s.target, items[i], f); !st.ok()) return st;
    DictObj loop;
    loop.Set(Value::String("index"), Value::Int(i + 1));
    loop.Set(Value::String("index0"), Value::Int(i));
    loop.Set(Value::String("revindex"), Value::Int(n - i));
    loop.Set(Value::String("revindex0"), Value::Int(n - i - 1));
    loop.Set(Value::String("first"), Value::Bool(i == 0));
    loop.Set(Value::String("last"), Value::Bool(i == n - 1));
    loop.Set(Value::String("length"), Value::Int(n));
    loop.Set(Value::String("depth"), Value::Int(1));
    loop.Set(Value::String("depth0"), Value::Int(0));
    loop.Set(Value::String("previtem"), i > 0 ? items[i - 1] : Value::Undefined("there is no previous item"));
    loop.Set(Value::String("nextitem"), i + 1 < n ? items[i + 1] : Value::Undefined("there is no next item"));
    loop.Set(Value::String("cycle"), Value::Function(std::make_shared<BuiltinFunction>(
        "cycle", Value::Int(i), [](Interp&, const Value& self, CallArgs& args) -> absl::StatusOr<Value> {
          if (args.pos.empty()) return TypeError("no items for cycling given");
          return args.pos[static_cast<size_t>(self.as_int()) % args.pos.size()];
        })));
    f->vars["loop"] = Value::Dict(std::move(loop));
    Flow inner = Flow::kNormal;
    if (auto st = ExecBody(s.body, f, &inner); !st.ok()) return st;
    if (inner == Flow::kBreak) break;
  }
  (void)flow;
  return absl::OkStatus();
}

absl::Status Interp::Assign(const Target& t, const Value& v, const std::shared_ptr<Frame>& frame) {
  if (!t.attr.empty()) {
    const Value* ns = frame->Lookup(t.names[0]);
    if (ns == nullptr || !ns->is_namespace()) return RuntimeError("cannot assign attribute on non-namespace object");
    if (v.Depth() + 1 > limits_.max_value_depth) {
      return absl::ResourceExhaustedError("value nested deeper than max_value_depth");
    }
    if (auto st = ChargeCollection(ns->ns().attrs.size() + 1); !st.ok()) return st;
    ns->ns().attrs.Set(Value::String(t.attr), v);
    return absl::OkStatus();
  }
  if (!t.is_tuple) {
    frame->vars[t.names[0]] = v;
    return absl::OkStatus();
  }
  auto parts = Iterate(v);
  if (!parts.ok()) return TypeError(absl::StrCat("cannot unpack non-iterable ", TypeName(v), " object"));
  if (parts->size() != t.names.size()) {
    if (parts->size() > t.names.size()) {
      return ValueError(absl::StrCat("too many values to unpack (expected ", t.names.size(), ")"));
    }
    return ValueError(absl::StrCat("not enough values to unpack (expected ", t.names.size(), ", got ",
                                   parts->size(), ")"));
  }
  for (size_t i = 0; i < parts->size(); ++i) frame->vars[t.names[i]] = (*parts)[i];
  return absl::OkStatus();
}

absl::Status Interp::ExecSet(const Stmt& s, const std::shared_ptr<Frame>& frame) {
  if (s.kind == StmtKind::kSet) {
    auto v = Eval(*s.expr, frame);
    if (!v.ok()) return v.status();
    return Assign(s.target, *v, frame);
  }
  auto text = Capture(s.body, frame);
  if (!text.ok()) return text.status();
  auto v = ApplyFilterChain(s.filters, Value::String(std::move(*text)), frame);
  if (!v.ok()) return v.status();
  return Assign(s.target, *v, frame);
}

absl::StatusOr<Value> Interp::CallMacro(const Stmt& def, const std::shared_ptr<Frame>& closure,
                                        const Value& caller, CallArgs args) {
  const std::string name = def.kind == StmtKind::kMacro ? def.text : "caller";
  if (call_depth_ >= limits_.max_call_depth) {
    return absl::ResourceExhaustedError(absl::StrCat("macro calls nested deeper than max_call_depth (",
                                                     limits_.max_call_depth, ")"));
  }
  auto f = std::make_shared<Frame>(Frame{{}, closure ? closure : root_});
  const size_t np = def.params.size();
  if (args.pos.size() > np && !def.uses_varargs) {
    return TypeError(absl::StrCat("macro '", name, "' takes not more than ", np, " argument(s)"));
  }
  std::vector<bool> bound(np, false);
  for (size_t i = 0; i < args.pos.size() && i < np; ++i) {
    f->vars[def.params[i].name] = args.pos[i];
    bound[i] = true;
  }
  DictObj extra_kw;
  for (auto& [k, v] : args.kw) {
    if (k == "caller" && def.uses_caller) {
      f->vars["caller"] = v;
      continue;
    }
    size_t i = 0;
    while (i < np && def.params[i].name != k) ++i;
    if (i < np) {
      if (bound[i]) return TypeError(absl::StrCat("macro '", name, "' got multiple values for argument '", k, "'"));
      f->vars[k] = v;
      bound[i] = true;
    } else if (def.uses_kwargs) {
      extra_kw.Set(Value::String(k), v);
    } else {
      return TypeError(absl::StrCat("macro '", name, "' takes no keyword argument '", k, "'"));
    }
  }
  for (size_t i = 0; i < np; ++i) {
    if (bound[i]) continue;
    if (def.params[i].default_value) {
      auto d = Eval(*def.params[i].default_value, f);
      if (!d.ok()) return d.status();
      f->vars[def.params[i].name] = *d;
    } else {
      f->vars[def.params[i].name] = Value::Undefined(absl::StrCat("parameter '", def.params[i].name, "' was not provided"));
    }
  }
  if (def.uses_kwargs) f->vars["kwargs"] = Value::Dict(std::move(extra_kw));
  if (def.uses_varargs) {
    std::vector<Value> rest;
    for (size_t i = np; i < args.pos.size(); ++i) rest.push_back(args.pos[i]);
    f->vars["varargs"] = Value::List(std::move(rest), true);
  }
  if (!f->vars.contains("caller") && def.uses_caller && !caller.is_undefined()) f->vars["caller"] = caller;
  ++call_depth_;
  auto text = Capture(def.body, f);
  --call_depth_;
  if (!text.ok()) return text.status();
  return Value::String(std::move(*text));
}

}  // namespace llmserve::chat::jinja
