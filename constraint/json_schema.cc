// CompileJsonSchema / AnyJsonGrammar: parse the schema text (the only place JSON parse
// exceptions are caught), build the intermediate form (json_schema_build.cc, $refs in
// json_schema_refs.cc, merges in json_schema_merge.cc) and generate the grammar
// (json_schema_gen.cc, json_schema_objects.cc, json_schema_strings.cc).
#include "constraint/json_schema.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "constraint/json_schema_gen.h"
#include "constraint/json_schema_ir.h"

namespace llmserve::constraint {
namespace {

using json_schema::Json;

// The document as Json::parse builds it (same values, key order and duplicate-key rule:
// a repeated key keeps its first position and takes its last value; the same parse
// errors), but each object and array is assembled once its members are all read, with
// its storage reserved: nlohmann's DOM parser appends to the ordered_map (a vector of
// pairs with a const key, which cannot be moved) member by member, so every growth of
// an object copies all the subtrees already in it.
class DomBuilder {
 public:
  explicit DomBuilder(Json& root) : root_(root) {}

  bool null() { return Put(Json(nullptr)); }
  bool boolean(bool v) { return Put(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return Put(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return Put(Json(v)); }
  bool number_float(Json::number_float_t v, const Json::string_t& /*text*/) { return Put(Json(v)); }
  bool string(Json::string_t& v) { return Put(Json(v)); }
  bool binary(Json::binary_t& v) { return Put(Json(std::move(v))); }
  bool start_object(std::size_t /*len*/) { return Open(); }
  bool key(Json::string_t& k) {
    frames_[depth_ - 1].keys.push_back(k);
    return true;
  }
  bool end_object() {
    Frame& f = frames_[depth_ - 1];
    Json obj(Json::value_t::object);
    auto& members = obj.get_ref<Json::object_t&>();
    members.reserve(f.keys.size());
    // A repeated key: the first member of that name takes the value (a linear search in
    // small objects, an index into the reserved, so stable, members in large ones).
    const bool indexed = f.keys.size() > 16;
    if (indexed) index_.clear();
    for (size_t i = 0; i < f.keys.size(); ++i) {
      Json* existing = nullptr;
      if (indexed) {
        if (auto it = index_.find(f.keys[i]); it != index_.end()) existing = &(members.begin() + it->second)->second;
      } else {
        for (auto& [name, value] : members) {
          if (name == f.keys[i]) {
            existing = &value;
            break;
          }
        }
      }
      if (existing != nullptr) {
        *existing = std::move(f.values[i]);
        continue;
      }
      members.emplace_back(std::move(f.keys[i]), std::move(f.values[i]));
      if (indexed) index_.emplace(std::string_view(members.back().first), members.size() - 1);
    }
    return Close(std::move(obj));
  }
  bool start_array(std::size_t /*len*/) { return Open(); }
  bool end_array() {
    Frame& f = frames_[depth_ - 1];
    Json arr(Json::value_t::array);
    auto& items = arr.get_ref<Json::array_t&>();
    items.reserve(f.values.size());
    for (Json& v : f.values) items.push_back(std::move(v));
    return Close(std::move(arr));
  }
  template <class Exception>
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/, const Exception& ex) {
    throw ex;
  }

 private:
  struct Frame {
    std::vector<std::string> keys;  // objects: one per value, in order
    std::vector<Json> values;
  };

  bool Put(Json&& v) {
    if (depth_ == 0) {
      root_ = std::move(v);
    } else {
      frames_[depth_ - 1].values.push_back(std::move(v));
    }
    return true;
  }
  bool Open() {
    if (depth_ == frames_.size()) frames_.emplace_back();
    Frame& f = frames_[depth_++];
    f.keys.clear();
    f.values.clear();
    return true;
  }
  bool Close(Json&& v) {
    --depth_;
    return Put(std::move(v));
  }

  Json& root_;
  std::vector<Frame> frames_;  // frames_[0..depth_): the open objects and arrays
  size_t depth_ = 0;
  absl::flat_hash_map<std::string_view, size_t> index_;  // end_object: key -> member index
};

}  // namespace

absl::StatusOr<Grammar> CompileJsonSchema(std::string_view schema_text, const JsonSchemaOptions& opts) {
  if (schema_text.size() > opts.max_schema_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("the JSON Schema is ", schema_text.size(),
                                                     " bytes, above the limit of ", opts.max_schema_bytes));
  }
  Json root;
  try {
    DomBuilder dom(root);
    Json::sax_parse(schema_text.begin(), schema_text.end(), &dom);
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("the JSON Schema is not valid JSON: ", e.what()));
  }
  json_schema::Context ctx(&root, opts.max_depth);
  // The root is compiled as the definition "#", so that "$ref": "#" finds it.
  auto top = ctx.Resolve("#", 0);
  if (!top.ok()) return top.status();
  if (auto s = ctx.CompilePending(); !s.ok()) return s;
  json_schema::Generator gen(ctx, opts);
  auto start = gen.Gen(*top, /*first=*/true);
  if (!start.ok()) return start.status();
  return gen.Finish(*start);
}

absl::StatusOr<Grammar> AnyJsonGrammar(bool object_only, const JsonSchemaOptions& opts) {
  return CompileJsonSchema(object_only ? R"({"type": "object"})" : "true", opts);
}

}  // namespace llmserve::constraint
