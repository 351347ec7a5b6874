// Objects: the properties in order (those of `properties`, then `required` names not in
// it), then any additional or pattern properties, commas placed by Members.
//
// Keys of additional properties exclude every named property (a key "a" with a value
// that `properties.a` refuses must not pass as an additional property); keys of pattern
// properties must not be able to spell a named property, and when there are pattern
// properties the additional ones must not match a pattern. Where that would need a
// regex intersection or complement we cannot build, the schema is refused.
// minProperties / maxProperties: as llguidance, only when every named property is
// required (they then count the additional ones), or the "exactly/at most/at least one
// of these optional properties" cases with additionalProperties false.
#include "absl/strings/str_cat.h"
#include "constraint/json_schema_gen.h"

namespace llmserve::constraint::json_schema {

Symbol Generator::Members(const std::vector<std::pair<Symbol, bool>>& items, size_t i, bool prefixed,
                          absl::flat_hash_map<std::pair<size_t, bool>, Symbol>& memo) {
  if (auto it = memo.find({i, prefixed}); it != memo.end()) return it->second;
  Symbol result = Symbol::Nonterminal(0);
  if (i == items.size()) {
    result = b_.Sequence("empty", {});
  } else {
    const Symbol comma = Punct(',', false);
    auto [item, required] = items[i];
    Symbol rest = Members(items, i + 1, true, memo);
    if (prefixed && required) {
      result = b_.Sequence("members", {comma, item, rest});
    } else if (prefixed) {
      result = b_.Sequence("members", {Opt(Seq({comma, item})), rest});
    } else if (required) {
      result = b_.Sequence("members", {item, rest});
    } else {
      Symbol unprefixed = Members(items, i + 1, false, memo);
      result = b_.Choice("members", {{item, rest}, {unprefixed}});
    }
  }
  memo.emplace(std::make_pair(i, prefixed), result);
  return result;
}

absl::StatusOr<Symbol> Generator::GenObject(const ObjectSchema& o, bool first, uint32_t depth) {
  const Symbol colon = Punct(':', false);
  std::vector<std::string> taken;
  std::vector<std::pair<Symbol, bool>> items;
  size_t num_required = 0, num_optional = 0;

  std::vector<std::string> names;
  for (const auto& [name, _] : o.properties) names.push_back(name);
  for (const std::string& name : o.required) {
    if (o.FindProperty(name) == nullptr) names.push_back(name);
  }
  for (const std::string& name : names) {
    auto schema = PropertySchema(ctx_, o, name, 0);
    if (!schema.ok()) return schema.status();
    auto value = GenInner(*schema, false, depth + 1);
    if (!value.ok()) return value.status();
    auto key = StringOneOf({name});
    if (!key.ok()) return key.status();
    const bool required = o.IsRequired(name);
    items.push_back({Seq({Lex(*key, false), colon, *value}), required});
    taken.push_back(name);
    (required ? num_required : num_optional)++;
  }

  const uint64_t min_p = o.min_properties > num_required ? o.min_properties - num_required : 0;
  std::optional<uint64_t> max_p;
  if (o.max_properties) max_p = *o.max_properties > num_required ? *o.max_properties - num_required : 0;
  const bool no_additional = o.additional && o.additional->kind == Schema::Kind::kUnsat;

  if (num_optional > 0 && (min_p > 0 || max_p)) {
    // "Exactly / at most / at least one of these": every option lists its members.
    if (min_p <= 1 && max_p.value_or(1) == 1 && o.pattern_properties.empty() && no_additional) {
      std::vector<std::vector<std::pair<Symbol, bool>>> options;
      for (size_t idx = 0; idx < items.size(); ++idx) {
        if (items[idx].second) continue;
        std::vector<std::pair<Symbol, bool>> option;
        for (size_t j = 0; j < items.size(); ++j) {
          if (max_p) {
            if (j == idx || items[j].second) option.push_back({items[j].first, true});
          } else {
            option.push_back({items[j].first, items[j].second || j == idx});
          }
        }
        options.push_back(std::move(option));
      }
      if (max_p && min_p == 0) {
        std::vector<std::pair<Symbol, bool>> only_required;
        for (const auto& it : items) {
          if (it.second) only_required.push_back(it);
        }
        options.push_back(std::move(only_required));
      }
      std::vector<std::vector<Symbol>> alts;
      for (const auto& option : options) {
        absl::flat_hash_map<std::pair<size_t, bool>, Symbol> memo;
        alts.push_back({Punct('{', first), Members(option, 0, false, memo), Punct('}', false)});
      }
      return b_.Choice("object", std::move(alts));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "unsupported keyword \"", min_p > 0 ? "minProperties" : "maxProperties", "\" at ", PathText(o.path),
        ": only supported when every property in \"properties\" is required"));
  }

  std::vector<std::vector<Symbol>> extra;  // key : value alternatives of the other properties
  if (!o.pattern_properties.empty()) {
    if (o.pattern_properties.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat("unsupported keyword \"patternProperties\" at ",
                                                     PathText(o.path), ": more than one pattern (they may overlap)"));
    }
    if (!no_additional) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unsupported keyword \"patternProperties\" at ", PathText(o.path),
          ": additional properties would have to exclude the pattern (use \"additionalProperties\": false)"));
    }
    for (const PatternProperty& pp : o.pattern_properties) {
      for (const std::string& name : taken) {
        auto m = ctx_.PatternMatches(pp.pattern, name, pp.path);
        if (!m.ok()) return m.status();
        if (*m) {
          return absl::InvalidArgumentError(
              absl::StrCat("unsupported keyword \"patternProperties\" at ", PathText(o.path), ": the pattern \"",
                           pp.pattern, "\" matches the named property \"", name, "\""));
        }
      }
      auto body = PatternBody({pp.pattern, false, pp.path});
      if (!body.ok()) return body.status();
      auto value = GenInner(pp.schema, false, depth + 1);
      if (!value.ok()) return value.status();
      extra.push_back({Lex(Quoted(*body), false), colon, *value});
    }
  } else if (!no_additional) {
    auto key = StringNoneOf(taken);
    if (!key.ok()) return key.status();
    auto value = o.additional ? GenInner(o.additional, false, depth + 1) : GenAny(false);
    if (!value.ok()) return value.status();
    extra.push_back({Lex(*key, false), colon, *value});
  }

  if (!extra.empty() && max_p.value_or(1) > 0) {
    Symbol member = extra.size() == 1 ? Seq(extra[0]) : b_.Choice("member", std::move(extra));
    auto seq = Repeated(member, min_p, max_p);
    if (!seq.ok()) return seq.status();
    items.push_back({*seq, min_p > 0});
  } else if (min_p > 0) {
    if (unsat_reason_.empty()) unsat_reason_ = "minProperties exceeds the properties allowed";
    return Nothing();
  }
  absl::flat_hash_map<std::pair<size_t, bool>, Symbol> memo;
  return b_.Sequence("object", {Punct('{', first), Members(items, 0, false, memo), Punct('}', false)});
}

}  // namespace llmserve::constraint::json_schema
