#include "server/openai_constraint.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/http_status.h"

namespace llmserve {
namespace {

using json = nlohmann::json;
using constraint::ConstraintKind;
using constraint::ConstraintSpec;

// INVALID_ARGUMENT "<field> <what>" naming the field.
absl::Status Bad(const std::string& field, const std::string& what) {
  return WithParam(absl::InvalidArgumentError(absl::StrCat(field, " ", what)), field);
}

// The member's value; null when absent or JSON null.
const json* Member(const json& object, const char* name) {
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

// A forward scan over JSON text known to be valid (nlohmann parsed it): no recursion, so
// nesting depth costs nothing; every step is bounds-checked all the same.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : t_(text) {
    if (t_.substr(0, 3) == "\xEF\xBB\xBF") i_ = 3;  // a UTF-8 byte order mark, as nlohmann skips it
  }

  // At the start of the member `key`'s value of the object at the cursor (its last
  // occurrence): true, the cursor there and *end past the value.
  bool Find(std::string_view key, size_t* end) {
    SkipSpace();
    if (Peek() != '{') return false;
    ++i_;
    bool found = false;
    size_t found_begin = 0, found_end = 0;
    while (true) {
      SkipSpace();
      if (Peek() == '}') break;
      const size_t key_begin = i_;
      if (!SkipString()) return false;
      const std::string_view raw_key = t_.substr(key_begin, i_ - key_begin);
      SkipSpace();
      if (Peek() != ':') return false;
      ++i_;
      SkipSpace();
      const size_t value_begin = i_;
      if (!SkipValue()) return false;
      if (KeyIs(raw_key, key)) {
        found = true;
        found_begin = value_begin;
        found_end = i_;
      }
      SkipSpace();
      if (Peek() == ',') {
        ++i_;
        continue;
      }
      if (Peek() != '}') return false;
      break;
    }
    if (!found) return false;
    i_ = found_begin;
    *end = found_end;
    return true;
  }

  size_t pos() const { return i_; }

 private:
  char Peek() const { return i_ < t_.size() ? t_[i_] : '\0'; }

  void SkipSpace() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }

  // Past a string starting at the cursor.
  bool SkipString() {
    if (Peek() != '"') return false;
    ++i_;
    while (i_ < t_.size()) {
      const char c = t_[i_++];
      if (c == '\\') {
        ++i_;
      } else if (c == '"') {
        return true;
      }
    }
    return false;
  }

  // Past the value starting at the cursor.
  bool SkipValue() {
    const char c = Peek();
    if (c == '"') return SkipString();
    if (c == '{' || c == '[') {
      size_t depth = 0;
      while (i_ < t_.size()) {
        const char d = t_[i_];
        if (d == '"') {
          if (!SkipString()) return false;
          continue;
        }
        ++i_;
        if (d == '{' || d == '[') {
          ++depth;
        } else if (d == '}' || d == ']') {
          if (--depth == 0) return true;
        }
      }
      return false;
    }
    const size_t begin = i_;
    while (i_ < t_.size() && t_[i_] != ',' && t_[i_] != '}' && t_[i_] != ']' && t_[i_] != ' ' && t_[i_] != '\t' &&
           t_[i_] != '\n' && t_[i_] != '\r') {
      ++i_;
    }
    return i_ > begin;
  }

  // Whether the quoted key `raw` (escapes and all) is `key`.
  static bool KeyIs(std::string_view raw, std::string_view key) {
    const std::string_view inner = raw.substr(1, raw.size() - 2);
    if (inner.find('\\') == std::string_view::npos) return inner == key;
    const json decoded = json::parse(raw.begin(), raw.end(), nullptr, /*allow_exceptions=*/false);
    return decoded.is_string() && decoded.get_ref<const std::string&>() == key;
  }

  std::string_view t_;
  size_t i_ = 0;
};

// One constraint found in the body, and the field that carried it.
struct Found {
  std::string field;
  ConstraintSpec spec;
};

// A JSON Schema value at `path` (an object or a boolean; `allow_text`: also a string holding
// the schema's text) as schema text. `field` names it in errors.
absl::Status SchemaText(const json& value, std::string_view raw_body, std::vector<std::string_view> path,
                        const std::string& field, bool allow_text, std::string* out) {
  if (allow_text && value.is_string()) {
    *out = value.get<std::string>();
    return absl::OkStatus();
  }
  if (!value.is_object() && !value.is_boolean()) {
    return Bad(field, allow_text ? "must be a JSON Schema: an object, or its text as a string"
                                 : "must be a JSON Schema (an object)");
  }
  if (std::optional<std::string_view> raw = RawJsonValue(raw_body, path)) {
    *out = std::string(*raw);
  } else {
    // Not reached for a body nlohmann parsed; the sorted form is still the same schema.
    *out = value.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  return absl::OkStatus();
}

absl::Status StringValue(const json& value, const std::string& field, std::string* out) {
  if (!value.is_string()) return Bad(field, "must be a string");
  *out = value.get<std::string>();
  return absl::OkStatus();
}

absl::Status ChoiceList(const json& value, const std::string& field, std::vector<std::string>* out) {
  if (!value.is_array()) return Bad(field, "must be a list of strings");
  for (const json& c : value) {
    if (!c.is_string()) return Bad(field, "must be a list of strings");
    out->push_back(c.get<std::string>());
  }
  return absl::OkStatus();
}

// "whitespace" in `object`: "compact" (the default) or "flexible".
absl::Status Whitespace(const json& object, const std::string& prefix, bool* flexible) {
  const json* w = Member(object, "whitespace");
  if (w == nullptr) return absl::OkStatus();
  const std::string field = absl::StrCat(prefix, ".whitespace");
  if (!w->is_string() || (*w != "compact" && *w != "flexible")) {
    return Bad(field, "must be \"compact\" (no whitespace between JSON tokens, the default) or \"flexible\"");
  }
  *flexible = *w == "flexible";
  return absl::OkStatus();
}

bool IsJsonKind(ConstraintKind k) { return k == ConstraintKind::kJsonSchema || k == ConstraintKind::kJson; }

// OpenAI's response_format.
absl::Status ResponseFormat(const json& format, std::string_view raw_body, std::vector<Found>* found) {
  if (!format.is_object()) return Bad("response_format", "must be an object with a type");
  const json* type = Member(format, "type");
  if (type == nullptr) return Bad("response_format.type", "is required: text, json_object or json_schema");
  if (!type->is_string()) return Bad("response_format.type", "must be a string: text, json_object or json_schema");
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "text") return absl::OkStatus();
  if (t == "json_object") {
    Found f{"response_format", {}};
    f.spec.kind = ConstraintKind::kJson;
    f.spec.object_only = true;
    found->push_back(std::move(f));
    return absl::OkStatus();
  }
  if (t != "json_schema") {
    return Bad("response_format.type",
               absl::StrCat("\"", t, "\" is not supported: use text, json_object or json_schema"));
  }
  const json* js = Member(format, "json_schema");
  if (js == nullptr || !js->is_object()) {
    return Bad("response_format.json_schema", "must be an object with the schema (for type json_schema)");
  }
  if (const json* name = Member(*js, "name"); name != nullptr && !name->is_string()) {
    return Bad("response_format.json_schema.name", "must be a string");
  }
  if (const json* strict = Member(*js, "strict"); strict != nullptr && !strict->is_boolean()) {
    return Bad("response_format.json_schema.strict", "must be a boolean");
  }
  const json* schema = Member(*js, "schema");
  const std::string field = "response_format.json_schema.schema";
  if (schema == nullptr) return Bad(field, "is required");
  Found f{field, {}};
  f.spec.kind = ConstraintKind::kJsonSchema;
  if (absl::Status s = SchemaText(*schema, raw_body, {"response_format", "json_schema", "schema"}, field,
                                  /*allow_text=*/false, &f.spec.text);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = Whitespace(*js, "response_format.json_schema", &f.spec.whitespace_flexible); !s.ok()) return s;
  found->push_back(std::move(f));
  return absl::OkStatus();
}

// vLLM's structured_outputs.
absl::Status StructuredOutputs(const json& so, std::string_view raw_body, std::vector<Found>* found) {
  if (!so.is_object()) return Bad("structured_outputs", "must be an object");
  if (Member(so, "structural_tag") != nullptr) {
    return Bad("structured_outputs.structural_tag", "is not supported: use json, regex, choice or grammar");
  }
  const size_t before = found->size();
  if (const json* v = Member(so, "json")) {
    Found f{"structured_outputs.json", {}};
    f.spec.kind = ConstraintKind::kJsonSchema;
    if (absl::Status s = SchemaText(*v, raw_body, {"structured_outputs", "json"}, f.field, true, &f.spec.text);
        !s.ok()) {
      return s;
    }
    found->push_back(std::move(f));
  }
  if (const json* v = Member(so, "regex")) {
    Found f{"structured_outputs.regex", {}};
    f.spec.kind = ConstraintKind::kRegex;
    if (absl::Status s = StringValue(*v, f.field, &f.spec.text); !s.ok()) return s;
    found->push_back(std::move(f));
  }
  if (const json* v = Member(so, "choice")) {
    Found f{"structured_outputs.choice", {}};
    f.spec.kind = ConstraintKind::kChoice;
    if (absl::Status s = ChoiceList(*v, f.field, &f.spec.choices); !s.ok()) return s;
    found->push_back(std::move(f));
  }
  if (const json* v = Member(so, "grammar")) {
    Found f{"structured_outputs.grammar", {}};
    f.spec.kind = ConstraintKind::kGrammar;
    if (absl::Status s = StringValue(*v, f.field, &f.spec.text); !s.ok()) return s;
    found->push_back(std::move(f));
  }
  if (const json* v = Member(so, "json_object")) {
    if (!v->is_boolean()) return Bad("structured_outputs.json_object", "must be a boolean");
    if (v->get<bool>()) {
      Found f{"structured_outputs.json_object", {}};
      f.spec.kind = ConstraintKind::kJson;
      f.spec.object_only = true;
      found->push_back(std::move(f));
    }
  }
  if (found->size() == before) {
    return Bad("structured_outputs", "must set one of json, regex, choice, grammar or json_object");
  }
  bool flexible = false;
  if (absl::Status s = Whitespace(so, "structured_outputs", &flexible); !s.ok()) return s;
  for (size_t i = before; i < found->size(); ++i) {
    if (IsJsonKind((*found)[i].spec.kind)) (*found)[i].spec.whitespace_flexible = flexible;
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<std::string_view> RawJsonValue(std::string_view json_text, std::span<const std::string_view> path) {
  Scanner scan(json_text);
  size_t end = 0;
  for (std::string_view key : path) {
    if (!scan.Find(key, &end)) return std::nullopt;
  }
  if (path.empty()) return std::nullopt;
  return json_text.substr(scan.pos(), end - scan.pos());
}

absl::Status ParseOpenAiConstraint(const json& body, std::string_view raw_body, GenerationInput* out) {
  std::vector<Found> found;
  if (const json* v = Member(body, "response_format")) {
    if (absl::Status s = ResponseFormat(*v, raw_body, &found); !s.ok()) return s;
  }
  if (const json* v = Member(body, "structured_outputs")) {
    if (absl::Status s = StructuredOutputs(*v, raw_body, &found); !s.ok()) return s;
  }
  // vLLM's older fields and llama.cpp's.
  if (const json* v = Member(body, "guided_json")) {
    Found f{"guided_json", {}};
    f.spec.kind = ConstraintKind::kJsonSchema;
    if (absl::Status s = SchemaText(*v, raw_body, {"guided_json"}, f.field, true, &f.spec.text); !s.ok()) return s;
    found.push_back(std::move(f));
  }
  if (const json* v = Member(body, "guided_regex")) {
    Found f{"guided_regex", {}};
    f.spec.kind = ConstraintKind::kRegex;
    if (absl::Status s = StringValue(*v, f.field, &f.spec.text); !s.ok()) return s;
    found.push_back(std::move(f));
  }
  if (const json* v = Member(body, "guided_choice")) {
    Found f{"guided_choice", {}};
    f.spec.kind = ConstraintKind::kChoice;
    if (absl::Status s = ChoiceList(*v, f.field, &f.spec.choices); !s.ok()) return s;
    found.push_back(std::move(f));
  }
  if (const json* v = Member(body, "guided_grammar")) {
    Found f{"guided_grammar", {}};
    f.spec.kind = ConstraintKind::kGrammar;
    if (absl::Status s = StringValue(*v, f.field, &f.spec.text); !s.ok()) return s;
    found.push_back(std::move(f));
  }
  if (const json* v = Member(body, "json_schema")) {
    Found f{"json_schema", {}};
    f.spec.kind = ConstraintKind::kJsonSchema;
    if (absl::Status s = SchemaText(*v, raw_body, {"json_schema"}, f.field, false, &f.spec.text); !s.ok()) return s;
    found.push_back(std::move(f));
  }
  if (const json* v = Member(body, "grammar")) {
    Found f{"grammar", {}};
    f.spec.kind = ConstraintKind::kGrammar;
    if (absl::Status s = StringValue(*v, f.field, &f.spec.text); !s.ok()) return s;
    found.push_back(std::move(f));
  }
  if (found.size() > 1) {
    return Bad(found[0].field, absl::StrCat("and ", found[1].field,
                                            " both constrain the output: a request may carry one constraint"));
  }
  if (found.size() == 1) {
    out->constraint = std::move(found[0].spec);
    out->constraint_field = std::move(found[0].field);
  }
  return absl::OkStatus();
}

}  // namespace llmserve
