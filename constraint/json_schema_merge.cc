// Intersection of schemas (allOf, siblings of $ref/anyOf/oneOf, const, enum), anyOf/oneOf
// normalization, and the disjointness proofs that let a oneOf be generated as an anyOf.
//
// The merge follows llguidance's (schema.rs `intersect`): properties of the left schema
// first, then the right's new ones, each merged with what the other side says of that
// name; required in order; bounds tightened; anyOf/oneOf distributed. What cannot be
// merged exactly (two different patterns are kept as a list and refused by the generator
// if they must both hold) is left for the generator to refuse with its path.
#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "constraint/json_schema_ir.h"

namespace llmserve::constraint::json_schema {
namespace {

using Kind = Schema::Kind;

std::optional<Bound> TighterMin(const std::optional<Bound>& a, const std::optional<Bound>& b) {
  if (!a) return b;
  if (!b) return a;
  if (a->value != b->value) return a->value > b->value ? a : b;
  return Bound{a->value, a->exclusive || b->exclusive};
}

std::optional<Bound> TighterMax(const std::optional<Bound>& a, const std::optional<Bound>& b) {
  if (!a) return b;
  if (!b) return a;
  if (a->value != b->value) return a->value < b->value ? a : b;
  return Bound{a->value, a->exclusive || b->exclusive};
}

template <typename T>
std::optional<T> OptMin(const std::optional<T>& a, const std::optional<T>& b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

SchemaPtr AnyIfNull(const SchemaPtr& s) { return s ? s : MakeAny(); }

}  // namespace

absl::StatusOr<SchemaPtr> PropertySchema(Context& ctx, const ObjectSchema& obj, const std::string& name,
                                         uint32_t depth) {
  if (const SchemaPtr* p = obj.FindProperty(name)) return *p;
  SchemaPtr result;
  for (const PatternProperty& pp : obj.pattern_properties) {
    auto m = ctx.PatternMatches(pp.pattern, name, pp.path);
    if (!m.ok()) return m.status();
    if (!*m) continue;
    if (!result) {
      result = pp.schema;
    } else {
      auto merged = Intersect(ctx, result, pp.schema, depth + 1);
      if (!merged.ok()) return merged.status();
      result = *merged;
    }
  }
  if (result) return result;
  return AnyIfNull(obj.additional);
}

absl::StatusOr<SchemaPtr> Intersect(Context& ctx, const SchemaPtr& a, const SchemaPtr& b, uint32_t depth) {
  if (auto s = ctx.Tick(); !s.ok()) return s;
  if (depth > ctx.max_depth()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("merging schemas (allOf, $ref) nests deeper than ", ctx.max_depth(), " levels"));
  }
  if (a->kind == Kind::kAny) return b;
  if (b->kind == Kind::kAny) return a;
  if (a->kind == Kind::kUnsat) return a;
  if (b->kind == Kind::kUnsat) return b;
  if (a.get() == b.get()) return a;
  if (a->kind == Kind::kRef && b->kind == Kind::kRef && a->text == b->text) return a;
  if (a->kind == Kind::kRef || b->kind == Kind::kRef) {
    const bool left = a->kind == Kind::kRef;
    auto resolved = ctx.Resolve(left ? a->text : b->text, depth);
    if (!resolved.ok()) return resolved.status();
    return left ? Intersect(ctx, *resolved, b, depth + 1) : Intersect(ctx, a, *resolved, depth + 1);
  }
  // Distributed in llguidance's order (oneOf before anyOf, left before right): the
  // shape decides which oneOfs are provably disjoint and the order of properties.
  for (int step = 0; step < 4; ++step) {
    const int side = step % 2;
    const Kind kind = step < 2 ? Kind::kOneOf : Kind::kAnyOf;
    const SchemaPtr& alt = side == 0 ? a : b;
    const SchemaPtr& other = side == 0 ? b : a;
    if (alt->kind != kind) continue;
    Schema out;
    out.kind = alt->kind;
    out.path = alt->path;
    for (const SchemaPtr& opt : alt->options) {
      auto m = side == 0 ? Intersect(ctx, opt, other, depth + 1) : Intersect(ctx, other, opt, depth + 1);
      if (!m.ok()) return m.status();
      out.options.push_back(*m);
    }
    return Normalize(ctx, Make(std::move(out)));
  }
  if (a->kind != b->kind) return MakeUnsat("incompatible types");
  Schema out;
  out.kind = a->kind;
  switch (a->kind) {
    case Kind::kNull:
      return a;
    case Kind::kBoolean:
      if (!a->boolean) return b;
      if (!b->boolean || *a->boolean == *b->boolean) return a;
      return MakeUnsat("incompatible boolean values");
    case Kind::kNumber: {
      NumberSchema& n = out.number;
      n.min = TighterMin(a->number.min, b->number.min);
      n.max = TighterMax(a->number.max, b->number.max);
      n.integer = a->number.integer || b->number.integer;
      n.multiple_of = a->number.multiple_of;
      for (const auto& m : b->number.multiple_of) {
        if (std::none_of(n.multiple_of.begin(), n.multiple_of.end(),
                         [&](const auto& x) { return x.first == m.first; })) {
          n.multiple_of.push_back(m);
        }
      }
      break;
    }
    case Kind::kString: {
      StringSchema& s = out.string;
      s.min_length = std::max(a->string.min_length, b->string.min_length);
      s.max_length = OptMin(a->string.max_length, b->string.max_length);
      s.length_path = a->string.length_path.empty() ? b->string.length_path : a->string.length_path;
      s.regexes = a->string.regexes;
      for (const StringRegex& r : b->string.regexes) {
        if (std::find(s.regexes.begin(), s.regexes.end(), r) == s.regexes.end()) s.regexes.push_back(r);
      }
      if (a->string.literals && b->string.literals) {
        absl::flat_hash_set<std::string> right(b->string.literals->begin(), b->string.literals->end());
        s.literals.emplace();
        for (const std::string& l : *a->string.literals) {
          if (right.contains(l)) s.literals->push_back(l);
        }
        if (s.literals->empty()) return MakeUnsat("no common value of const/enum");
        s.literals_merged = true;
      } else {
        s.literals = a->string.literals ? a->string.literals : b->string.literals;
      }
      break;
    }
    case Kind::kArray: {
      const ArraySchema& x = a->array;
      const ArraySchema& y = b->array;
      ArraySchema& r = out.array;
      r.min_items = std::max(x.min_items, y.min_items);
      r.max_items = OptMin(x.max_items, y.max_items);
      const size_t n = std::max(x.prefix_items.size(), y.prefix_items.size());
      for (size_t i = 0; i < n; ++i) {
        SchemaPtr p = i < x.prefix_items.size() ? x.prefix_items[i] : AnyIfNull(x.items);
        SchemaPtr q = i < y.prefix_items.size() ? y.prefix_items[i] : AnyIfNull(y.items);
        auto m = Intersect(ctx, p, q, depth + 1);
        if (!m.ok()) return m.status();
        r.prefix_items.push_back(*m);
      }
      if (!x.items || !y.items) {
        r.items = x.items ? x.items : y.items;
      } else {
        auto m = Intersect(ctx, x.items, y.items, depth + 1);
        if (!m.ok()) return m.status();
        r.items = *m;
      }
      if (r.max_items && r.min_items > *r.max_items) return MakeUnsat("minItems > maxItems");
      break;
    }
    case Kind::kObject: {
      const ObjectSchema& x = a->object;
      const ObjectSchema& y = b->object;
      ObjectSchema& r = out.object;
      r.path = x.path.empty() ? y.path : x.path;
      for (const auto& [name, p] : x.properties) {
        auto q = PropertySchema(ctx, y, name, depth);
        if (!q.ok()) return q.status();
        auto m = Intersect(ctx, p, *q, depth + 1);
        if (!m.ok()) return m.status();
        r.properties.push_back({name, *m});
      }
      for (const auto& [name, q] : y.properties) {
        if (x.FindProperty(name) != nullptr) continue;
        auto p = PropertySchema(ctx, x, name, depth);
        if (!p.ok()) return p.status();
        auto m = Intersect(ctx, *p, q, depth + 1);
        if (!m.ok()) return m.status();
        r.properties.push_back({name, *m});
      }
      r.required = x.required;
      for (const std::string& name : y.required) {
        if (!r.IsRequired(name)) r.required.push_back(name);
      }
      // A pattern on one side only: its keys are additional properties on the other.
      for (const PatternProperty& pp : x.pattern_properties) {
        auto same = std::find_if(y.pattern_properties.begin(), y.pattern_properties.end(),
                                 [&](const PatternProperty& o) { return o.pattern == pp.pattern; });
        SchemaPtr other = same != y.pattern_properties.end() ? same->schema : AnyIfNull(y.additional);
        auto m = Intersect(ctx, pp.schema, other, depth + 1);
        if (!m.ok()) return m.status();
        r.pattern_properties.push_back({pp.pattern, *m, pp.path});
      }
      for (const PatternProperty& pp : y.pattern_properties) {
        if (std::any_of(x.pattern_properties.begin(), x.pattern_properties.end(),
                        [&](const PatternProperty& o) { return o.pattern == pp.pattern; })) {
          continue;
        }
        auto m = Intersect(ctx, AnyIfNull(x.additional), pp.schema, depth + 1);
        if (!m.ok()) return m.status();
        r.pattern_properties.push_back({pp.pattern, *m, pp.path});
      }
      if (!x.additional || !y.additional) {
        r.additional = x.additional ? x.additional : y.additional;
      } else {
        auto m = Intersect(ctx, x.additional, y.additional, depth + 1);
        if (!m.ok()) return m.status();
        r.additional = *m;
      }
      r.min_properties = std::max(x.min_properties, y.min_properties);
      r.max_properties = OptMin(x.max_properties, y.max_properties);
      if (r.max_properties && (r.min_properties > *r.max_properties || r.required.size() > *r.max_properties)) {
        return MakeUnsat("minProperties or required exceed maxProperties");
      }
      break;
    }
    default:
      return MakeUnsat("incompatible schemas");
  }
  return Make(std::move(out));
}

SchemaPtr Normalize(Context& ctx, SchemaPtr s) {
  if (s->kind != Kind::kAnyOf && s->kind != Kind::kOneOf) return s;
  std::vector<SchemaPtr> valid;
  SchemaPtr first_unsat;
  for (const SchemaPtr& o : s->options) {
    if (o->kind == Kind::kAny && s->kind == Kind::kAnyOf) return o;
    if (o->kind == Kind::kUnsat) {
      if (!first_unsat) first_unsat = o;
    } else if (o->kind == s->kind) {
      valid.insert(valid.end(), o->options.begin(), o->options.end());
    } else {
      valid.push_back(o);
    }
  }
  if (valid.empty()) return first_unsat ? first_unsat : MakeUnsat("no alternative");
  if (valid.size() == 1) return valid[0];
  Schema out;
  out.kind = s->kind;
  out.path = s->path;
  if (s->kind == Kind::kOneOf) {
    bool disjoint = true;
    for (size_t i = 0; i < valid.size() && disjoint; ++i) {
      for (size_t j = i + 1; j < valid.size() && disjoint; ++j) {
        disjoint = Disjoint(ctx, *valid[i], *valid[j], 0);
      }
    }
    if (disjoint) out.kind = Kind::kAnyOf;
  }
  out.options = std::move(valid);
  return Make(std::move(out));
}

namespace {

// The value range [min, max] of two number schemas do not meet.
bool RangesDisjoint(const NumberSchema& a, const NumberSchema& b) {
  auto below = [](const std::optional<Bound>& max, const std::optional<Bound>& min) {
    if (!max || !min) return false;
    return max->value < min->value || (max->value == min->value && (max->exclusive || min->exclusive));
  };
  if (below(a.max, b.min) || below(b.max, a.min)) return true;
  // An integer schema and a single non-integral value.
  auto single_fraction = [](const NumberSchema& n) {
    return n.min && n.max && n.min->value == n.max->value && n.min->value != std::floor(n.min->value);
  };
  return (a.integer && single_fraction(b)) || (b.integer && single_fraction(a));
}

// Every literal of `lit` fails one of `other`'s length bounds or patterns.
bool LiteralsExcluded(Context& ctx, const StringSchema& lit, const StringSchema& other) {
  for (const std::string& l : *lit.literals) {
    // Length in code points: count the bytes that do not continue a UTF-8 sequence.
    uint64_t n = std::count_if(l.begin(), l.end(), [](char c) { return (static_cast<uint8_t>(c) & 0xC0) != 0x80; });
    bool excluded = n < other.min_length || (other.max_length && n > *other.max_length);
    for (const StringRegex& r : other.regexes) {
      if (excluded || r.is_format) continue;
      auto m = ctx.PatternMatches(r.source, l, r.path);
      if (m.ok() && !*m) excluded = true;
    }
    if (!excluded) return false;
  }
  return true;
}

}  // namespace

bool Disjoint(Context& ctx, const Schema& a, const Schema& b, uint32_t depth) {
  if (depth > 20 || !ctx.Tick().ok()) return false;
  if (a.kind == Kind::kUnsat || b.kind == Kind::kUnsat) return true;
  if (a.kind == Kind::kAny || b.kind == Kind::kAny) return false;
  // References are not followed (as llguidance): MaskBench's instances put properties in
  // llguidance's order only where llguidance compiles the schema, and following them
  // accepts oneOfs whose instances are in another order.
  if (a.kind == Kind::kRef || b.kind == Kind::kRef) return false;
  if (a.kind == Kind::kAnyOf || a.kind == Kind::kOneOf) {
    return std::all_of(a.options.begin(), a.options.end(),
                       [&](const SchemaPtr& o) { return Disjoint(ctx, *o, b, depth + 1); });
  }
  if (b.kind == Kind::kAnyOf || b.kind == Kind::kOneOf) {
    return std::all_of(b.options.begin(), b.options.end(),
                       [&](const SchemaPtr& o) { return Disjoint(ctx, a, *o, depth + 1); });
  }
  if (a.kind != b.kind) return true;
  switch (a.kind) {
    case Kind::kBoolean:
      return a.boolean && b.boolean && *a.boolean != *b.boolean;
    case Kind::kNumber:
      return RangesDisjoint(a.number, b.number);
    case Kind::kString:
      // Two const/enum lists with no common value. Not for lists that are themselves
      // intersections: llguidance cannot prove those disjoint, so MaskBench's instances of
      // such oneOfs do not follow its property order, and accepting them costs more
      // validation errors than it gains.
      if (a.string.literals && b.string.literals && !a.string.literals_merged && !b.string.literals_merged) {
        absl::flat_hash_set<std::string> left(a.string.literals->begin(), a.string.literals->end());
        if (std::none_of(b.string.literals->begin(), b.string.literals->end(),
                         [&](const std::string& l) { return left.contains(l); })) {
          return true;
        }
      }
      if (a.string.literals && LiteralsExcluded(ctx, a.string, b.string)) return true;
      if (b.string.literals && LiteralsExcluded(ctx, b.string, a.string)) return true;
      return false;
    case Kind::kArray: {
      const ArraySchema& x = a.array;
      const ArraySchema& y = b.array;
      if ((x.max_items && *x.max_items < y.min_items) || (y.max_items && *y.max_items < x.min_items)) return true;
      const uint64_t both = std::min(x.min_items, y.min_items);
      for (uint64_t i = 0; i < both && i < 64; ++i) {
        const SchemaPtr p = i < x.prefix_items.size() ? x.prefix_items[i] : AnyIfNull(x.items);
        const SchemaPtr q = i < y.prefix_items.size() ? y.prefix_items[i] : AnyIfNull(y.items);
        if (Disjoint(ctx, *p, *q, depth + 1)) return true;
      }
      return false;
    }
    case Kind::kObject: {
      auto check = [&](const std::string& key) {
        auto p = PropertySchema(ctx, a.object, key, depth);
        auto q = PropertySchema(ctx, b.object, key, depth);
        return p.ok() && q.ok() && Disjoint(ctx, **p, **q, depth + 1);
      };
      for (const std::string& k : a.object.required) {
        if (check(k)) return true;
      }
      for (const std::string& k : b.object.required) {
        if (check(k)) return true;
      }
      return false;
    }
    default:
      return false;
  }
}

}  // namespace llmserve::constraint::json_schema
