// JSON Schema document -> the intermediate form (json_schema_ir.h).
//
// Keywords fall in four groups:
//  - implemented: type, enum, const, anyOf, oneOf, allOf, $ref, and the type-specific
//    ones handled in CompileType;
//  - annotations, always ignored: title, description, default, examples, $comment,
//    $schema, $id/id, $anchor, $defs/definitions (only reached through $ref), readOnly,
//    writeOnly, deprecated, contentMediaType, contentEncoding, $vocabulary,
//    $dynamicAnchor, $recursiveAnchor;
//  - names that are not keywords of the schema's draft (x-..., _format, javaType, and for
//    a draft-4 schema also const, contains, ...): they do not constrain, so ignored, as
//    validators do;
//  - keywords that constrain but cannot be expressed exactly (if/then/else, contains,
//    propertyNames, dependencies, uniqueItems: true, `not` other than of types or of
//    required, ...): an error naming the keyword and its path, but only where they apply
//    (uniqueItems on a schema whose type excludes arrays constrains nothing).
// As llguidance does, keywords are taken in order and the in-place applicators (const,
// enum, allOf, anyOf, oneOf, $ref, not) intersect with what came before them, which fixes the
// order of properties merged from several places.
#include <algorithm>
#include <cmath>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "constraint/json_schema_ir.h"

namespace llmserve::constraint::json_schema {
namespace {

constexpr std::string_view kTypes[] = {"null", "boolean", "object", "array", "number", "string"};

bool IsAnnotation(std::string_view k) {
  static constexpr std::string_view kNames[] = {
      "$anchor", "$defs", "definitions", "$schema", "$id", "id", "$comment", "title",
      "description", "default", "readOnly", "writeOnly", "examples", "contentMediaType",
      "contentEncoding", "deprecated", "$vocabulary", "$dynamicAnchor", "$recursiveAnchor",
      "contentSchema"};
  for (auto n : kNames) {
    if (n == k) return true;
  }
  return false;
}

// Keywords of JSON Schema in `draft` (after jsonschema-referencing's list, as llguidance).
bool IsKnownKeyword(Draft d, std::string_view k) {
  static constexpr std::string_view kAll[] = {
      "$ref", "$schema", "additionalItems", "additionalProperties", "allOf", "anyOf",
      "dependencies", "enum", "exclusiveMaximum", "exclusiveMinimum", "format", "items",
      "maxItems", "maxLength", "maxProperties", "maximum", "minItems", "minLength",
      "minProperties", "minimum", "multipleOf", "not", "oneOf", "pattern",
      "patternProperties", "properties", "required", "type", "uniqueItems"};
  for (auto n : kAll) {
    if (n == k) return true;
  }
  if (k == "$id" || k == "const" || k == "contains" || k == "propertyNames") return d >= Draft::k6;
  if (k == "if" || k == "then" || k == "else") return d >= Draft::k7;
  static constexpr std::string_view k2019[] = {
      "$anchor", "$defs", "$recursiveAnchor", "$recursiveRef", "dependentRequired",
      "dependentSchemas", "maxContains", "minContains", "prefixItems", "unevaluatedItems",
      "unevaluatedProperties"};
  for (auto n : k2019) {
    if (n == k) return d >= Draft::k201909;
  }
  if (k == "$dynamicRef" || k == "$dynamicAnchor") return d == Draft::k202012;
  return false;
}

bool IsApplicator(std::string_view k) {
  return k == "const" || k == "enum" || k == "allOf" || k == "anyOf" || k == "oneOf" || k == "$ref" ||
         k == "not";
}

// A schema that accepts every value: true, {} or only annotations.
bool IsTrivial(const Json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (!v.is_object()) return false;
  for (const auto& [k, _] : v.items()) {
    if (!IsAnnotation(k)) return false;
  }
  return true;
}

absl::StatusOr<uint64_t> GetCount(const Json& v, const std::string& keyword, const std::string& path) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) {
    if (v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (d >= 0 && d == std::floor(d) && d < 1.8e19) return static_cast<uint64_t>(d);
  }
  return BadValue(keyword, path, "expected a non-negative integer");
}

absl::StatusOr<double> GetNumber(const Json& v, const std::string& keyword, const std::string& path) {
  if (!v.is_number()) return BadValue(keyword, path, "expected a number");
  double d = v.get<double>();
  if (!std::isfinite(d)) return BadValue(keyword, path, "not a finite number");
  return d;
}

using KeywordMap = std::vector<std::pair<std::string, const Json*>>;

const Json* Find(const KeywordMap& m, std::string_view k) {
  for (const auto& [name, v] : m) {
    if (name == k) return v;
  }
  return nullptr;
}

std::string Sub(const std::string& path, std::string_view key) {
  return absl::StrCat(path, "/", PointerEscape(std::string(key)));
}

class Builder {
 public:
  Builder(Context& ctx, uint32_t depth) : ctx_(ctx), depth_(depth) {}

  absl::StatusOr<SchemaPtr> Build(const Json& node, const std::string& path);

 private:
  absl::StatusOr<SchemaPtr> Child(const Json& node, const std::string& path) {
    return BuildSchema(ctx_, node, path, depth_ + 1);
  }
  absl::StatusOr<SchemaPtr> CompileSimple(const KeywordMap& kw, const std::string& path);
  absl::StatusOr<SchemaPtr> CompileType(std::string_view type, const KeywordMap& kw, const std::string& path);
  absl::StatusOr<SchemaPtr> CompileNumber(bool integer, const KeywordMap& kw, const std::string& path);
  absl::StatusOr<SchemaPtr> CompileString(const KeywordMap& kw, const std::string& path);
  absl::StatusOr<SchemaPtr> CompileArray(const KeywordMap& kw, const std::string& path);
  absl::StatusOr<SchemaPtr> CompileObject(const KeywordMap& kw, const std::string& path);
  absl::StatusOr<SchemaPtr> NotSchema(const Json& v, const std::string& path);
  absl::StatusOr<SchemaPtr> Apply(SchemaPtr result, const std::string& k, const Json& v, const std::string& path);
  absl::StatusOr<std::vector<SchemaPtr>> SchemaList(const Json& v, const std::string& keyword, const std::string& path);

  Context& ctx_;
  uint32_t depth_;
};

absl::StatusOr<SchemaPtr> Builder::Build(const Json& node, const std::string& path) {
  if (node.is_boolean()) return node.get<bool>() ? MakeAny() : MakeUnsat("the schema is false");
  if (!node.is_object()) return BadValue("schema", path, "a schema must be an object or a boolean");
  const Draft draft = ctx_.draft();

  // Draft 4 to 7: the siblings of $ref are ignored.
  if (draft <= Draft::k7 && node.contains("$ref")) {
    return Apply(MakeAny(), "$ref", node["$ref"], path);
  }

  KeywordMap all;
  for (const auto& [k, v] : node.items()) {
    if (IsAnnotation(k) || !IsKnownKeyword(draft, k)) continue;
    all.push_back({k, &v});
  }
  if (all.empty()) return MakeAny();

  // Keywords that constrain in ways not expressible here, wherever they apply.
  for (const auto& [k, v] : all) {
    if (k == "$dynamicRef" || k == "$recursiveRef") return Unsupported(k, path);
    if (k == "if" && (node.contains("then") || node.contains("else"))) return Unsupported(k, path);
  }

  // Placeholders so that additionalProperties / items in a chunk know the names and
  // prefix length even when properties / prefixItems come after an applicator.
  Json dummy_properties = Json::object();
  Json dummy_patterns = Json::object();
  Json dummy_prefix = Json::array();
  if (const Json* p = Find(all, "properties"); p != nullptr && p->is_object()) {
    for (const auto& [k, _] : p->items()) dummy_properties[k] = true;
  }
  if (const Json* p = Find(all, "patternProperties"); p != nullptr && p->is_object()) {
    for (const auto& [k, _] : p->items()) dummy_patterns[k] = true;
  }
  const bool old_items = draft <= Draft::k201909;
  if (const Json* p = Find(all, old_items ? "items" : "prefixItems"); p != nullptr && p->is_array()) {
    for (size_t i = 0; i < p->size(); ++i) dummy_prefix.push_back(true);
  }

  SchemaPtr result = MakeAny();
  KeywordMap current;
  const Json* type = Find(all, "type");
  auto flush = [&]() -> absl::Status {
    if (current.empty()) return absl::OkStatus();
    if (type != nullptr && Find(current, "type") == nullptr) current.push_back({"type", type});
    auto chunk = CompileSimple(current, path);
    if (!chunk.ok()) return chunk.status();
    current.clear();
    auto merged = Intersect(ctx_, result, *chunk, depth_);
    if (!merged.ok()) return merged.status();
    result = *merged;
    return absl::OkStatus();
  };
  for (const auto& [k, v] : all) {
    if (IsApplicator(k)) {
      if (auto s = flush(); !s.ok()) return s;
      auto applied = Apply(result, k, *v, path);
      if (!applied.ok()) return applied.status();
      result = *applied;
      continue;
    }
    // A placeholder of this keyword is replaced by the real one.
    const std::string& key = k;
    auto same = std::find_if(current.begin(), current.end(), [&](const auto& e) { return e.first == key; });
    if (same != current.end()) same->second = v;
    else current.push_back({k, v});
    if (k == "additionalProperties") {
      if (Find(current, "properties") == nullptr && !dummy_properties.empty()) {
        current.push_back({"properties", &dummy_properties});
      }
      if (Find(current, "patternProperties") == nullptr && !dummy_patterns.empty()) {
        current.push_back({"patternProperties", &dummy_patterns});
      }
    }
    if (k == (old_items ? "additionalItems" : "items") && !dummy_prefix.empty()) {
      const char* prefix_key = old_items ? "items" : "prefixItems";
      if (Find(current, prefix_key) == nullptr) current.push_back({prefix_key, &dummy_prefix});
    }
  }
  if (auto s = flush(); !s.ok()) return s;
  return result;
}

absl::StatusOr<std::vector<SchemaPtr>> Builder::SchemaList(const Json& v, const std::string& keyword,
                                                           const std::string& path) {
  if (!v.is_array()) return BadValue(keyword, path, "expected an array of schemas");
  std::vector<SchemaPtr> out;
  const std::string base = Sub(path, keyword);
  for (size_t i = 0; i < v.size(); ++i) {
    auto s = Child(v[i], absl::StrCat(base, "/", i));
    if (!s.ok()) return s.status();
    out.push_back(*s);
  }
  return out;
}

absl::StatusOr<SchemaPtr> Builder::Apply(SchemaPtr result, const std::string& k, const Json& v,
                                         const std::string& path) {
  if (k == "const") {
    auto c = ConstSchema(v, Sub(path, k), depth_ + 1);
    if (!c.ok()) return c.status();
    return Intersect(ctx_, result, *c, depth_);
  }
  if (k == "enum") {
    if (!v.is_array()) return BadValue(k, path, "expected an array");
    // Strings (the common case, sometimes 100,000 of them) form one string schema.
    Schema strings;
    strings.kind = Schema::Kind::kString;
    strings.string.literals.emplace();
    absl::flat_hash_set<std::string> seen;
    Schema any_of;
    any_of.kind = Schema::Kind::kAnyOf;
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i].is_string()) {
        const std::string& str = v[i].get_ref<const std::string&>();
        if (seen.insert(str).second) strings.string.literals->push_back(str);
        continue;
      }
      if (auto s = ctx_.Tick(); !s.ok()) return s;
      auto c = ConstSchema(v[i], absl::StrCat(Sub(path, k), "/", i), depth_ + 1);
      if (!c.ok()) return c.status();
      any_of.options.push_back(*c);
    }
    if (!strings.string.literals->empty()) any_of.options.push_back(Make(std::move(strings)));
    if (any_of.options.empty()) return MakeUnsat("enum is empty");
    return Intersect(ctx_, result, Normalize(ctx_, Make(std::move(any_of))), depth_);
  }
  if (k == "not") {
    auto n = NotSchema(v, Sub(path, k));
    if (!n.ok()) return n.status();
    return Intersect(ctx_, result, *n, depth_);
  }
  if (k == "allOf") {
    auto list = SchemaList(v, k, path);
    if (!list.ok()) return list.status();
    for (const SchemaPtr& s : *list) {
      auto merged = Intersect(ctx_, result, s, depth_);
      if (!merged.ok()) return merged.status();
      result = *merged;
    }
    return result;
  }
  if (k == "anyOf" || k == "oneOf") {
    auto list = SchemaList(v, k, path);
    if (!list.ok()) return list.status();
    if (list->empty()) return BadValue(k, path, "expected a non-empty array");
    Schema alt;
    alt.kind = k == "anyOf" ? Schema::Kind::kAnyOf : Schema::Kind::kOneOf;
    alt.options = std::move(*list);
    alt.path = path;
    return Intersect(ctx_, result, Normalize(ctx_, Make(std::move(alt))), depth_);
  }
  // $ref
  if (!v.is_string()) return BadValue(k, path, "expected a string");
  auto ref = ctx_.NormalizeRef(v.get<std::string>(), path);
  if (!ref.ok()) return ref.status();
  Schema r;
  r.kind = Schema::Kind::kRef;
  r.text = *ref;
  if (result->kind == Schema::Kind::kAny) {
    if (auto target = ctx_.Lookup(*ref); !target.ok()) return target.status();
    ctx_.Use(*ref);
    return Make(std::move(r));
  }
  return Intersect(ctx_, result, Make(std::move(r)), depth_);
}

// `not` where its complement is a union of simple schemas: of a list of types (not
// "integer" alone: the non-integral numbers have no simple form), or of `required`
// (some listed property is absent). Anything else is refused.
absl::StatusOr<SchemaPtr> Builder::NotSchema(const Json& v, const std::string& path) {
  if (v.is_boolean()) return v.get<bool>() ? MakeUnsat("not true") : MakeAny();
  if (!v.is_object()) return BadValue("not", path, "a schema must be an object or a boolean");
  KeywordMap kw;
  for (const auto& [k, sub] : v.items()) {
    if (!IsAnnotation(k) && IsKnownKeyword(ctx_.draft(), k)) kw.push_back({k, &sub});
  }
  if (kw.empty()) return MakeUnsat("not {}");
  if (kw.size() == 1 && kw[0].first == "not") return Child(*kw[0].second, Sub(path, "not"));  // not not X
  if (kw.size() != 1 || (kw[0].first != "type" && kw[0].first != "required")) {
    return absl::InvalidArgumentError(absl::StrCat("unsupported keyword \"not\" at ", PathText(path),
                                                   ": only \"not\" of a type or of required is supported"));
  }
  const Json& arg = *kw[0].second;
  Schema any_of;
  any_of.kind = Schema::Kind::kAnyOf;
  if (kw[0].first == "type") {
    absl::flat_hash_set<std::string> excluded;
    if (arg.is_string()) {
      excluded.insert(arg.get<std::string>());
    } else if (arg.is_array()) {
      for (const Json& t : arg) {
        if (!t.is_string()) return BadValue("type", path, "expected a type name or an array of them");
        excluded.insert(t.get<std::string>());
      }
    } else {
      return BadValue("type", path, "expected a type name or an array of them");
    }
    if (excluded.contains("integer") && !excluded.contains("number")) {
      return absl::InvalidArgumentError(absl::StrCat("unsupported keyword \"not\" at ", PathText(path),
                                                     ": the numbers that are not integers"));
    }
    if (excluded.contains("number")) excluded.insert("integer");
    for (std::string_view t : kTypes) {
      if (excluded.contains(std::string(t))) continue;
      auto s = CompileType(t, {}, path);
      if (!s.ok()) return s.status();
      any_of.options.push_back(*s);
    }
  } else {
    if (!arg.is_array()) return BadValue("required", path, "expected an array of names");
    for (std::string_view t : kTypes) {
      if (t == "object") continue;
      auto s = CompileType(t, {}, path);
      if (!s.ok()) return s.status();
      any_of.options.push_back(*s);
    }
    // An object missing one of the names.
    for (const Json& name : arg) {
      if (!name.is_string()) return BadValue("required", path, "expected an array of names");
      Schema o;
      o.kind = Schema::Kind::kObject;
      o.object.path = path;
      o.object.properties.push_back({name.get<std::string>(), MakeUnsat("excluded by not/required")});
      any_of.options.push_back(Make(std::move(o)));
    }
  }
  return Normalize(ctx_, Make(std::move(any_of)));
}

absl::StatusOr<SchemaPtr> Builder::CompileSimple(const KeywordMap& kw, const std::string& path) {
  const Json* type = Find(kw, "type");
  std::vector<std::string_view> types;
  if (type == nullptr) {
    types.assign(std::begin(kTypes), std::end(kTypes));
  } else if (type->is_string()) {
    types.push_back(type->get_ref<const std::string&>());
  } else if (type->is_array()) {
    for (const Json& t : *type) {
      if (!t.is_string()) return BadValue("type", path, "expected a type name or an array of them");
      types.push_back(t.get_ref<const std::string&>());
    }
  } else {
    return BadValue("type", path, "expected a type name or an array of them");
  }
  Schema any_of;
  any_of.kind = Schema::Kind::kAnyOf;
  for (std::string_view t : types) {
    auto s = CompileType(t, kw, path);
    if (!s.ok()) return s.status();
    any_of.options.push_back(*s);
  }
  if (any_of.options.empty()) return MakeUnsat("the type list is empty");
  if (any_of.options.size() == 1) return any_of.options[0];
  return Normalize(ctx_, Make(std::move(any_of)));
}

absl::StatusOr<SchemaPtr> Builder::CompileType(std::string_view type, const KeywordMap& kw,
                                               const std::string& path) {
  if (auto s = ctx_.Tick(); !s.ok()) return s;
  Schema s;
  if (type == "null") {
    s.kind = Schema::Kind::kNull;
    return Make(std::move(s));
  }
  if (type == "boolean") {
    s.kind = Schema::Kind::kBoolean;
    return Make(std::move(s));
  }
  if (type == "number" || type == "integer") return CompileNumber(type == "integer", kw, path);
  if (type == "string") return CompileString(kw, path);
  if (type == "array") return CompileArray(kw, path);
  if (type == "object") return CompileObject(kw, path);
  return BadValue("type", path, absl::StrCat("unknown type \"", std::string(type), "\""));
}

absl::StatusOr<SchemaPtr> Builder::CompileNumber(bool integer, const KeywordMap& kw, const std::string& path) {
  Schema s;
  s.kind = Schema::Kind::kNumber;
  NumberSchema& n = s.number;
  n.integer = integer;
  std::optional<double> minimum, maximum;
  for (const auto& [k, v] : kw) {
    if (k == "minimum" || k == "maximum") {
      auto d = GetNumber(*v, k, path);
      if (!d.ok()) return d.status();
      (k == "minimum" ? minimum : maximum) = *d;
    }
  }
  if (minimum) n.min = Bound{*minimum, false};
  if (maximum) n.max = Bound{*maximum, false};
  for (const auto& [k, v] : kw) {
    if (k == "exclusiveMinimum" || k == "exclusiveMaximum") {
      const bool is_min = k == "exclusiveMinimum";
      std::optional<Bound>& b = is_min ? n.min : n.max;
      if (v->is_boolean()) {  // draft 4: makes minimum / maximum exclusive
        if (v->get<bool>() && b) b->exclusive = true;
        continue;
      }
      auto d = GetNumber(*v, k, path);
      if (!d.ok()) return d.status();
      // The tighter of the two bounds.
      if (!b || (is_min ? *d >= b->value : *d <= b->value)) b = Bound{*d, true};
    } else if (k == "multipleOf") {
      auto d = GetNumber(*v, k, path);
      if (!d.ok()) return d.status();
      if (*d <= 0) return BadValue(k, path, "must be greater than 0");
      n.multiple_of.push_back({*d, path});
    }
  }
  return Make(std::move(s));
}

absl::StatusOr<SchemaPtr> Builder::CompileString(const KeywordMap& kw, const std::string& path) {
  Schema s;
  s.kind = Schema::Kind::kString;
  StringSchema& str = s.string;
  for (const auto& [k, v] : kw) {
    if (k == "minLength" || k == "maxLength") {
      auto n = GetCount(*v, k, path);
      if (!n.ok()) return n.status();
      if (k == "minLength") str.min_length = *n;
      else str.max_length = *n;
      str.length_path = path;
    } else if (k == "pattern") {
      if (!v->is_string()) return BadValue(k, path, "expected a string");
      str.regexes.push_back({v->get<std::string>(), false, path});
    } else if (k == "format") {
      if (!v->is_string()) return BadValue(k, path, "expected a string");
      // Enforced (as llguidance); a format JsonFormatRegex does not know is an error where
      // the string is generated, though validators ignore unknown formats: being strict
      // keeps the property order of MaskBench's instances (made for llguidance) aligned.
      str.regexes.push_back({v->get<std::string>(), true, path});
    }
  }
  return Make(std::move(s));
}

absl::StatusOr<SchemaPtr> Builder::CompileArray(const KeywordMap& kw, const std::string& path) {
  Schema s;
  s.kind = Schema::Kind::kArray;
  ArraySchema& a = s.array;
  const Json* items = Find(kw, "items");
  const Json* additional = Find(kw, "additionalItems");
  const Json* prefix = Find(kw, "prefixItems");
  for (const auto& [k, v] : kw) {
    if (k == "minItems" || k == "maxItems") {
      auto n = GetCount(*v, k, path);
      if (!n.ok()) return n.status();
      if (k == "minItems") a.min_items = *n;
      else a.max_items = *n;
    }
  }
  for (const auto& [k, v] : kw) {
    if (k == "uniqueItems") {
      if (!v->is_boolean()) return BadValue(k, path, "expected a boolean");
      if (v->get<bool>() && !(a.max_items && *a.max_items <= 1)) return Unsupported(k, path);
    } else if (k == "contains" || k == "unevaluatedItems") {
      if (!IsTrivial(*v) || k == "contains") return Unsupported(k, path);
    }
  }
  // Before 2020-12 (or when it looks that way) an array `items` is the prefix and
  // additionalItems the rest.
  const Json* prefix_src = prefix;
  const Json* rest_src = items;
  std::string prefix_key = "prefixItems", rest_key = "items";
  if (ctx_.draft() <= Draft::k201909 || additional != nullptr || (items != nullptr && items->is_array())) {
    if (items != nullptr && items->is_array()) {
      prefix_src = items;
      rest_src = additional;
      prefix_key = "items";
      rest_key = "additionalItems";
    } else {
      prefix_src = nullptr;
    }
  }
  if (prefix_src != nullptr) {
    auto list = SchemaList(*prefix_src, prefix_key, path);
    if (!list.ok()) return list.status();
    a.prefix_items = std::move(*list);
  }
  if (rest_src != nullptr) {
    auto r = Child(*rest_src, Sub(path, rest_key));
    if (!r.ok()) return r.status();
    a.items = *r;
  }
  return Make(std::move(s));
}

absl::StatusOr<SchemaPtr> Builder::CompileObject(const KeywordMap& kw, const std::string& path) {
  Schema s;
  s.kind = Schema::Kind::kObject;
  ObjectSchema& o = s.object;
  o.path = path;
  for (const auto& [k, v] : kw) {
    if (k == "properties" || k == "patternProperties") {
      if (!v->is_object()) return BadValue(k, path, "expected an object");
      for (const auto& [name, sub] : v->items()) {
        auto c = Child(sub, Sub(Sub(path, k), name));
        if (!c.ok()) return c.status();
        if (k == "properties") {
          o.properties.push_back({name, *c});
        } else {
          o.pattern_properties.push_back({name, *c, Sub(Sub(path, k), name)});
        }
      }
    } else if (k == "additionalProperties") {
      auto c = Child(*v, Sub(path, k));
      if (!c.ok()) return c.status();
      o.additional = *c;
    } else if (k == "required") {
      if (!v->is_array()) return BadValue(k, path, "expected an array of names");
      for (const Json& r : *v) {
        if (!r.is_string()) return BadValue(k, path, "expected an array of names");
        if (!o.IsRequired(r.get<std::string>())) o.required.push_back(r.get<std::string>());
      }
    } else if (k == "minProperties" || k == "maxProperties") {
      auto n = GetCount(*v, k, path);
      if (!n.ok()) return n.status();
      if (k == "minProperties") o.min_properties = *n;
      else o.max_properties = *n;
    } else if (k == "propertyNames" || k == "unevaluatedProperties" || k == "dependentSchemas") {
      // Property names are strings anyway: {"type": "string"} constrains nothing.
      const bool trivial = IsTrivial(*v) ||
                           (k == "propertyNames" && v->is_object() && v->size() == 1 &&
                            v->contains("type") && (*v)["type"] == "string");
      if (!trivial && !(k == "dependentSchemas" && v->is_object() && v->empty())) {
        return Unsupported(k, path);
      }
    } else if (k == "dependencies" || k == "dependentRequired") {
      if (!(v->is_object() && v->empty())) return Unsupported(k, path);
    }
  }
  // A named property must also satisfy every patternProperties schema whose pattern it
  // matches (the generator keeps pattern keys apart from the names).
  if (!o.pattern_properties.empty()) {
    for (auto& [name, prop] : o.properties) {
      for (const PatternProperty& pp : o.pattern_properties) {
        auto m = ctx_.PatternMatches(pp.pattern, name, pp.path);
        if (!m.ok()) return m.status();
        if (!*m) continue;
        auto merged = Intersect(ctx_, prop, pp.schema, depth_ + 1);
        if (!merged.ok()) return merged.status();
        prop = *merged;
      }
    }
  }
  if (o.max_properties && o.min_properties > *o.max_properties) {
    return MakeUnsat("minProperties > maxProperties");
  }
  if (o.max_properties && o.required.size() > *o.max_properties) {
    return MakeUnsat("more required properties than maxProperties");
  }
  return Make(std::move(s));
}

}  // namespace

absl::StatusOr<SchemaPtr> BuildSchema(Context& ctx, const Json& node, const std::string& path, uint32_t depth) {
  if (depth > ctx.max_depth()) {
    return absl::ResourceExhaustedError(absl::StrCat("the schema nests subschemas deeper than ",
                                                     ctx.max_depth(), " levels at ", PathText(path)));
  }
  if (auto s = ctx.Tick(); !s.ok()) return s;
  Builder b(ctx, depth);
  auto r = b.Build(node, path);
  if (!r.ok()) return r.status();
  return Normalize(ctx, *r);
}

absl::StatusOr<SchemaPtr> ConstSchema(const Json& value, const std::string& path, uint32_t depth) {
  if (depth > 1000) return absl::ResourceExhaustedError("const value nested too deeply");
  Schema s;
  switch (value.type()) {
    case Json::value_t::null:
      s.kind = Schema::Kind::kNull;
      break;
    case Json::value_t::boolean:
      s.kind = Schema::Kind::kBoolean;
      s.boolean = value.get<bool>();
      break;
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: {
      double d = value.get<double>();
      // Beyond 2^53 a double is not the value written; refuse rather than approximate.
      if (!std::isfinite(d) || std::fabs(d) > 9007199254740992.0) {
        return BadValue("const", path, "number too large to compare exactly");
      }
      s.kind = Schema::Kind::kNumber;
      s.number.min = Bound{d, false};
      s.number.max = Bound{d, false};
      // Not `integer`: 1.0 equals 1, and either may be written.
      break;
    }
    case Json::value_t::string:
      s.kind = Schema::Kind::kString;
      s.string.literals = std::vector<std::string>{value.get<std::string>()};
      break;
    case Json::value_t::array: {
      s.kind = Schema::Kind::kArray;
      for (size_t i = 0; i < value.size(); ++i) {
        auto c = ConstSchema(value[i], path, depth + 1);
        if (!c.ok()) return c.status();
        s.array.prefix_items.push_back(*c);
      }
      s.array.min_items = s.array.max_items.emplace(value.size());
      s.array.items = MakeUnsat("no more items");
      break;
    }
    case Json::value_t::object: {
      s.kind = Schema::Kind::kObject;
      s.object.path = path;
      for (const auto& [k, v] : value.items()) {
        auto c = ConstSchema(v, path, depth + 1);
        if (!c.ok()) return c.status();
        s.object.properties.push_back({k, *c});
        s.object.required.push_back(k);
      }
      s.object.additional = MakeUnsat("no other properties");
      break;
    }
    default:
      return BadValue("const", path, "not a JSON value");
  }
  return Make(std::move(s));
}

}  // namespace llmserve::constraint::json_schema
