// Internal to the JSON Schema compiler (json_schema*.cc): the schema in a normalized form.
//
// A schema document is first turned into this intermediate form (json_schema_build.cc):
// every subschema becomes one Schema, keywords are checked and the applicators that can be
// expressed (allOf, $ref with siblings, const, enum) are resolved by intersecting schemas
// (json_schema_merge.cc). The grammar is then generated from it (json_schema_gen.cc).
// The design follows llguidance's (parser/src/json/schema.rs): same shapes, same merge
// order, so property order matches what MaskBench's instances expect.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "constraint/regex.h"
#include "nlohmann/json.hpp"

namespace llmserve::constraint::json_schema {

using Json = nlohmann::ordered_json;

struct Schema;
using SchemaPtr = std::shared_ptr<const Schema>;

// A bound on a number: value, and whether it is excluded.
struct Bound {
  double value = 0;
  bool exclusive = false;
};

struct NumberSchema {
  std::optional<Bound> min, max;
  bool integer = false;
  // multipleOf values with the path of each (only a few cases can be expressed; the
  // generator decides and names the path when it cannot).
  std::vector<std::pair<double, std::string>> multiple_of;
};

// A `pattern` (ECMA-262, matched anywhere) or a `format`, with where it came from.
struct StringRegex {
  std::string source;
  bool is_format = false;
  std::string path;
  bool operator==(const StringRegex& o) const { return source == o.source && is_format == o.is_format; }
};

struct StringSchema {
  uint64_t min_length = 0;                 // in code points
  std::optional<uint64_t> max_length;
  std::vector<StringRegex> regexes;        // all must match
  std::optional<std::vector<std::string>> literals;  // const/enum: the only values allowed
  // `literals` is the intersection of two const/enum lists (see Disjoint).
  bool literals_merged = false;
  std::string length_path;                 // where minLength/maxLength were (for errors)
};

struct ArraySchema {
  uint64_t min_items = 0;
  std::optional<uint64_t> max_items;
  std::vector<SchemaPtr> prefix_items;
  SchemaPtr items;  // after the prefix; null means any value
};

struct PatternProperty {
  std::string pattern;
  SchemaPtr schema;
  std::string path;
};

struct ObjectSchema {
  std::vector<std::pair<std::string, SchemaPtr>> properties;  // in order
  std::vector<PatternProperty> pattern_properties;
  SchemaPtr additional;  // null means any value
  std::vector<std::string> required;  // in order, unique
  uint64_t min_properties = 0;
  std::optional<uint64_t> max_properties;
  std::string path;  // of the object schema (for errors about its keywords)

  const SchemaPtr* FindProperty(const std::string& name) const {
    for (const auto& [n, s] : properties) {
      if (n == name) return &s;
    }
    return nullptr;
  }
  bool IsRequired(const std::string& name) const {
    for (const auto& r : required) {
      if (r == name) return true;
    }
    return false;
  }
};

struct Schema {
  enum class Kind : uint8_t {
    kAny,
    kUnsat,    // no value; `text` says why
    kNull,
    kBoolean,  // `boolean`: one value, or either
    kNumber,
    kString,
    kArray,
    kObject,
    kAnyOf,
    kOneOf,    // alternatives not proven disjoint (an error if it reaches the generator)
    kRef,      // `text`: the normalized reference ("#/definitions/x")
  };
  Kind kind = Kind::kAny;
  std::optional<bool> boolean;
  NumberSchema number;
  StringSchema string;
  ArraySchema array;
  ObjectSchema object;
  std::vector<SchemaPtr> options;  // kAnyOf, kOneOf
  std::string text;                // kUnsat: reason; kRef: reference
  std::string path;                // kOneOf: where it was (for the error)
};

SchemaPtr MakeAny();
SchemaPtr MakeUnsat(std::string reason);
SchemaPtr Make(Schema s);

enum class Draft { k4, k6, k7, k201909, k202012 };

// State of one compilation: the document, the compiled $ref targets, work bounds.
class Context {
 public:
  Context(const Json* root, uint32_t max_depth);

  const Json& root() const { return *root_; }
  Draft draft() const { return draft_; }
  uint32_t max_depth() const { return max_depth_; }

  // Counts a unit of work (a subschema compiled, two schemas intersected); past the bound
  // RESOURCE_EXHAUSTED.
  absl::Status Tick();

  // --- $ref (json_schema_refs.cc) ---
  // The normalized form of a reference ("#" or "#/a/b"); remote references are errors.
  absl::StatusOr<std::string> NormalizeRef(const std::string& ref, const std::string& path) const;
  // The document node a normalized reference points at.
  absl::StatusOr<const Json*> Lookup(const std::string& ref) const;
  // The compiled schema for a reference, compiling it now if needed (`depth`: nesting).
  // A reference needed again while it is being compiled (recursion through an allOf or
  // siblings of $ref, which would have to be merged with itself) is INVALID_ARGUMENT.
  absl::StatusOr<SchemaPtr> Resolve(const std::string& ref, uint32_t depth);
  // Notes that the reference is used (compiled later by CompilePending, so reference chains
  // cost no stack).
  void Use(const std::string& ref);
  absl::Status CompilePending();
  const SchemaPtr* Definition(const std::string& ref) const {
    auto it = defs_.find(ref);
    return it == defs_.end() ? nullptr : &it->second;
  }

  // --- patterns, for matching property names at compile time ---
  // Does the (search) pattern match `name`? Errors for patterns the regex parser refuses.
  absl::StatusOr<bool> PatternMatches(const std::string& pattern, const std::string& name,
                                      const std::string& path);

 private:
  const Json* root_;
  Draft draft_ = Draft::k202012;
  uint32_t max_depth_;
  uint64_t work_ = 0;
  std::string root_id_;  // the root's $id / id without a fragment, for refs that name it
  absl::flat_hash_map<std::string, SchemaPtr> defs_;
  absl::flat_hash_set<std::string> in_progress_;
  std::vector<std::string> pending_;
  absl::flat_hash_map<std::string, const Json*> anchors_;  // "#name" -> node
  RegexPool pattern_pool_;
  absl::flat_hash_map<std::string, RegexId> pattern_cache_;
};

// JSON -> Schema (json_schema_build.cc). `path`: the JSON pointer of `node`.
absl::StatusOr<SchemaPtr> BuildSchema(Context& ctx, const Json& node, const std::string& path,
                                      uint32_t depth);
// The schema for exactly this JSON value (const / one enum member).
absl::StatusOr<SchemaPtr> ConstSchema(const Json& value, const std::string& path, uint32_t depth);

// Intersection (json_schema_merge.cc): the values both accept, or an error naming what
// cannot be combined exactly.
absl::StatusOr<SchemaPtr> Intersect(Context& ctx, const SchemaPtr& a, const SchemaPtr& b,
                                    uint32_t depth);
// anyOf/oneOf flattening, unsatisfiable options dropped, oneOf -> anyOf where provably
// disjoint.
SchemaPtr Normalize(Context& ctx, SchemaPtr s);
// Provably no value satisfies both (false means "not proven").
bool Disjoint(Context& ctx, const Schema& a, const Schema& b, uint32_t depth);
// The schema a property `name` of `obj` must satisfy (properties, else matching
// patternProperties, else additionalProperties).
absl::StatusOr<SchemaPtr> PropertySchema(Context& ctx, const ObjectSchema& obj,
                                         const std::string& name, uint32_t depth);

// Errors with the keyword and the JSON pointer path.
std::string PathText(const std::string& path);
absl::Status Unsupported(const std::string& what, const std::string& path);
absl::Status BadValue(const std::string& keyword, const std::string& path, const std::string& why);
std::string PointerEscape(const std::string& segment);

}  // namespace llmserve::constraint::json_schema
