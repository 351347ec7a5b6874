// The generator's dispatch, primitives (null, booleans, numbers), anyOf, $ref, any
// value, and arrays. Objects: json_schema_objects.cc; strings: json_schema_strings.cc.
#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "constraint/json_schema_gen.h"
#include "constraint/number_regex.h"

namespace llmserve::constraint::json_schema {
namespace {

using Kind = Schema::Kind;

// Past this many optional array items the bound is lowered to it (a subset: some valid
// huge arrays are refused, no invalid one accepted).
constexpr uint64_t kMaxExpandedItems = 2'000;

}  // namespace

Generator::Generator(Context& ctx, const JsonSchemaOptions& opts)
    : ctx_(ctx), opts_(opts), b_(opts.grammar) {
  ByteSet ws;
  for (char c : {' ', '\t', '\n', '\r'}) ws.Add(static_cast<uint8_t>(c));
  ws_ = opts.whitespace_flexible ? pool().Star(pool().Bytes(ws)) : pool().Empty();
}

Symbol Generator::Lex(RegexId re, bool first) {
  return b_.LexemeSymbol(first ? re : pool().Concat({ws_, re}));
}

Symbol Generator::Nothing() { return b_.LexemeSymbol(pool().Nothing()); }

Symbol Generator::Seq(std::vector<Symbol> rhs) {
  if (rhs.size() == 1) return rhs[0];
  return b_.Sequence("seq", std::move(rhs));
}

Symbol Generator::Opt(Symbol s) { return b_.Optional("opt", s); }

absl::StatusOr<Symbol> Generator::Gen(const SchemaPtr& s, bool first) { return GenInner(s, first, 0); }

absl::StatusOr<Symbol> Generator::GenInner(const SchemaPtr& s, bool first, uint32_t depth) {
  if (depth > 4 * ctx_.max_depth() + 100) {
    return absl::ResourceExhaustedError("the schema nests too deeply to generate a grammar");
  }
  if (auto st = ctx_.Tick(); !st.ok()) return st;
  if (!b_.status().ok()) return b_.status();
  auto prim = PrimitiveRegex(*s);
  if (!prim.ok()) return prim.status();
  if (prim->has_value()) return Lex(**prim, first);
  switch (s->kind) {
    case Kind::kAny:
      return GenAny(first);
    case Kind::kUnsat:
      if (unsat_reason_.empty()) unsat_reason_ = s->text;
      return Nothing();
    case Kind::kArray:
      return GenArray(s->array, first, depth);
    case Kind::kObject:
      return GenObject(s->object, first, depth);
    case Kind::kAnyOf:
      return GenAnyOf(*s, first, depth);
    case Kind::kOneOf:
      return absl::InvalidArgumentError(absl::StrCat(
          "unsupported keyword \"oneOf\" at ", PathText(s->path),
          ": the alternatives are not provably disjoint (only such a oneOf is an anyOf)"));
    case Kind::kRef:
      return GenRef(s->text, first);
    default:
      return absl::InternalError("unexpected schema kind");
  }
}

absl::StatusOr<std::optional<RegexId>> Generator::PrimitiveRegex(const Schema& s) {
  switch (s.kind) {
    case Kind::kNull:
      return pool().Literal("null");
    case Kind::kBoolean:
      if (s.boolean) return pool().Literal(*s.boolean ? "true" : "false");
      return pool().Alt({pool().Literal("true"), pool().Literal("false")});
    case Kind::kNumber: {
      auto r = NumberRegex(s.number);
      if (!r.ok()) return r.status();
      return *r;
    }
    case Kind::kString: {
      auto r = StringToken(s.string);
      if (!r.ok()) return r.status();
      return *r;
    }
    default:
      return std::optional<RegexId>();
  }
}

absl::StatusOr<RegexId> Generator::NumberRegex(const NumberSchema& n) {
  bool integer = n.integer;
  const bool single = n.min && n.max && !n.min->exclusive && !n.max->exclusive && n.min->value == n.max->value;
  for (const auto& [m, path] : n.multiple_of) {
    // Every integer is a multiple of m when 1/m is an integer (m = 1, 0.5, 0.25 ...).
    const double inv = 1.0 / m;
    const bool divides_one = std::round(inv) * m == 1.0;
    if (divides_one && integer) continue;
    if (m == 1.0) {  // a number that is a multiple of 1: an integer (written without ".0")
      integer = true;
      continue;
    }
    // A single value: check it.
    if (single) {
      auto v = ExactInt64(n.min->value);
      auto k = ExactInt64(m);
      if (v && k && *k != 0 && *v % *k == 0) continue;
      if (v && k) return pool().Nothing();
    }
    return absl::InvalidArgumentError(absl::StrCat("unsupported keyword \"multipleOf\" at ", PathText(path),
                                                   ": only multiples of 1 (integers) are supported"));
  }
  auto opt = [](const std::optional<Bound>& b) { return b ? std::optional<double>(b->value) : std::nullopt; };
  const bool min_x = n.min && n.min->exclusive, max_x = n.max && n.max->exclusive;
  if (integer) return IntegerRangeRegexFromNumbers(opt(n.min), min_x, opt(n.max), max_x, pool());
  return NumberRangeRegex(opt(n.min), min_x, opt(n.max), max_x, pool());
}

absl::StatusOr<Symbol> Generator::GenAnyOf(const Schema& s, bool first, uint32_t depth) {
  // Primitive alternatives become one lexeme (so no two of them compete as lexemes).
  std::vector<RegexId> tokens;
  std::vector<std::vector<Symbol>> alternatives;
  for (const SchemaPtr& o : s.options) {
    auto prim = PrimitiveRegex(*o);
    if (!prim.ok()) return prim.status();
    if (prim->has_value()) {
      tokens.push_back(**prim);
      continue;
    }
    auto sym = GenInner(o, first, depth + 1);
    if (!sym.ok()) return sym.status();
    alternatives.push_back({*sym});
  }
  if (!tokens.empty()) alternatives.push_back({Lex(pool().Alt(tokens), first)});
  if (alternatives.size() == 1) return alternatives[0][0];
  return b_.Choice("any_of", std::move(alternatives));
}

absl::StatusOr<Symbol> Generator::GenRef(const std::string& ref, bool first) {
  // Follow references that are only references; a cycle of them admits nothing.
  std::string target = ref;
  absl::flat_hash_set<std::string> seen;
  while (true) {
    auto def = ctx_.Resolve(target, 0);
    if (!def.ok()) return def.status();
    if ((*def)->kind != Kind::kRef) break;
    if (!seen.insert(target).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("recursive $ref with no progress: \"", ref, "\" refers only to itself"));
    }
    target = (*def)->text;
  }
  auto key = std::make_pair(target, first);
  if (auto it = ref_symbols_.find(key); it != ref_symbols_.end()) return it->second;
  Symbol sym = Symbol::Nonterminal(b_.NewNonterminal(target));
  ref_symbols_.emplace(key, sym);
  pending_refs_.push_back(key);
  return sym;
}

absl::StatusOr<Grammar> Generator::Finish(Symbol start) {
  while (!pending_refs_.empty()) {
    auto [ref, first] = pending_refs_.back();
    pending_refs_.pop_back();
    auto def = ctx_.Resolve(ref, 0);
    if (!def.ok()) return def.status();
    auto sym = Gen(*def, first);
    if (!sym.ok()) return sym.status();
    b_.AddRule(ref_symbols_.at({ref, first}).id(), {*sym});
  }
  NonterminalId root;
  if (start.is_nonterminal()) {
    root = start.id();
  } else {
    root = b_.NewNonterminal("root");
    b_.AddRule(root, {start});
  }
  auto g = std::move(b_).Build(root);
  if (!g.ok() && g.status().code() == absl::StatusCode::kInvalidArgument && !unsat_reason_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(g.status().message(), " (", unsat_reason_, ")"));
  }
  return g;
}

absl::StatusOr<Symbol> Generator::GenAny(bool first) {
  if (any_[first]) return *any_[first];
  NonterminalId nt = b_.NewNonterminal("json_any");
  any_[first] = Symbol::Nonterminal(nt);
  auto number = NumberRangeRegex(std::nullopt, false, std::nullopt, false, pool());
  if (!number.ok()) return number.status();
  RegexId scalars = pool().Alt({pool().Literal("null"), pool().Literal("true"), pool().Literal("false"),
                                *number, Quoted(pool().Star(JsonChar()))});
  b_.AddRule(nt, {Lex(scalars, first)});
  ArraySchema array;
  auto arr = GenArray(array, first, 0);
  if (!arr.ok()) return arr.status();
  b_.AddRule(nt, {*arr});
  ObjectSchema object;
  auto obj = GenObject(object, first, 0);
  if (!obj.ok()) return obj.status();
  b_.AddRule(nt, {*obj});
  return *any_[first];
}

absl::StatusOr<Symbol> Generator::Repeated(Symbol item, uint64_t min, std::optional<uint64_t> max) {
  if (max && (min > *max || *max == 0)) return Nothing();
  if (min > kMaxExpandedItems) {
    return absl::ResourceExhaustedError(absl::StrCat("a minimum count of ", min, " items is above the limit of ",
                                                     kMaxExpandedItems));
  }
  if (max) max = std::min(*max, min + kMaxExpandedItems);
  const Symbol comma = Punct(',', false);
  // After the first element every element comes with its comma.
  const Symbol comma_item = Seq({comma, item});
  // The optional tail after `count` elements: nested optionals (max) or a star.
  Symbol tail = b_.Sequence("empty", {});
  if (!max) {
    tail = b_.Star("more", comma_item);
  } else if (*max > std::max<uint64_t>(min, 1)) {
    for (uint64_t i = std::max<uint64_t>(min, 1); i < *max; ++i) tail = Opt(Seq({comma, item, tail}));
  }
  std::vector<Symbol> seq;
  for (uint64_t i = 0; i < std::max<uint64_t>(min, 1); ++i) {
    if (i > 0) seq.push_back(comma);
    seq.push_back(item);
  }
  seq.push_back(tail);
  return Seq(std::move(seq));
}

absl::StatusOr<Symbol> Generator::GenArray(const ArraySchema& a, bool first, uint32_t depth) {
  if (a.max_items && a.min_items > *a.max_items) return Nothing();
  if (a.min_items > kMaxExpandedItems || a.prefix_items.size() > kMaxExpandedItems) {
    return absl::ResourceExhaustedError(absl::StrCat("an array needs more than ", kMaxExpandedItems,
                                                     " items spelled out (minItems or prefixItems)"));
  }
  const Symbol open = Punct('[', first);
  const Symbol close = Punct(']', false);
  const Symbol comma = Punct(',', false);
  auto item = a.items ? GenInner(a.items, false, depth + 1) : GenAny(false);
  if (!item.ok()) return item.status();
  std::vector<Symbol> elements;
  const uint64_t fixed = std::max<uint64_t>(a.prefix_items.size(), a.min_items);
  uint64_t count = a.max_items ? std::min(*a.max_items, fixed) : fixed;
  for (uint64_t i = 0; i < count; ++i) {
    if (i < a.prefix_items.size()) {
      auto p = GenInner(a.prefix_items[i], false, depth + 1);
      if (!p.ok()) return p.status();
      elements.push_back(*p);
    } else {
      elements.push_back(*item);
    }
  }
  const uint64_t required = std::min<uint64_t>(a.min_items, count);
  // After the spelled-out elements: the repeated item, up to maxItems or without bound.
  uint64_t extra = 0;
  if (a.max_items && *a.max_items > count) extra = std::min(*a.max_items - count, kMaxExpandedItems);
  const bool unbounded = !a.max_items;
  auto rest = [&](uint64_t n) {  // ("," item)* or n nested ("," item)?
    if (unbounded) return b_.Star("items", Seq({comma, *item}));
    Symbol t = b_.Sequence("empty", {});
    for (uint64_t i = 0; i < n; ++i) t = Opt(Seq({comma, *item, t}));
    return t;
  };
  // tail(k): the optional elements from k on, each with its comma.
  auto tail_from = [&](uint64_t k, Symbol after) {
    for (uint64_t i = count; i-- > k;) after = Opt(Seq({comma, elements[i], after}));
    return after;
  };
  std::vector<Symbol> rhs{open};
  if (required > 0) {
    for (uint64_t i = 0; i < required; ++i) {
      if (i > 0) rhs.push_back(comma);
      rhs.push_back(elements[i]);
    }
    rhs.push_back(tail_from(required, rest(extra)));
  } else {
    // No element is required: the first one has no comma before it.
    std::vector<std::vector<Symbol>> alts;
    if (count > 0) {
      alts.push_back({elements[0], tail_from(1, rest(extra))});
    } else if (unbounded || extra > 0) {
      alts.push_back({*item, rest(extra - (unbounded ? 0 : 1))});
    }
    alts.push_back({});
    rhs.push_back(b_.Choice("elements", std::move(alts)));
  }
  rhs.push_back(close);
  return b_.Sequence("array", std::move(rhs));
}

}  // namespace llmserve::constraint::json_schema
