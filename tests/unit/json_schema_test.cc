// JSON Schema -> grammar (constraint/json_schema.h): each supported keyword accepts what
// the schema accepts and refuses the rest; unsupported keywords are errors naming the
// keyword and its path; hostile schemas end in bounded errors; and over the shared
// MaskBench subset no invalid instance is accepted.
#include "constraint/json_schema.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "constraint/matcher.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/util/test_assets.h"

namespace llmserve::constraint {
namespace {

Grammar Compile(const std::string& schema, bool flexible = false) {
  JsonSchemaOptions opts;
  opts.whitespace_flexible = flexible;
  auto g = CompileJsonSchema(schema, opts);
  EXPECT_TRUE(g.ok()) << schema << ": " << g.status();
  if (!g.ok()) return *AnyJsonGrammar(false, opts);
  return *std::move(g);
}

absl::Status CompileError(const std::string& schema) {
  auto g = CompileJsonSchema(schema, JsonSchemaOptions{});
  return g.ok() ? absl::OkStatus() : g.status();
}

bool Accepts(const Grammar& g, const std::string& text) {
  auto r = GrammarAcceptsText(g, text);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() && *r;
}

// Expects `schema` to accept each of `good` and refuse each of `bad` (compact JSON).
void Check(const std::string& schema, const std::vector<std::string>& good, const std::vector<std::string>& bad) {
  Grammar g = Compile(schema);
  for (const auto& t : good) EXPECT_TRUE(Accepts(g, t)) << schema << " should accept " << t;
  for (const auto& t : bad) EXPECT_FALSE(Accepts(g, t)) << schema << " should refuse " << t;
}

void ExpectError(const std::string& schema, const std::string& fragment) {
  absl::Status s = CompileError(schema);
  EXPECT_FALSE(s.ok()) << schema;
  EXPECT_NE(std::string(s.message()).find(fragment), std::string::npos) << s;
}

TEST(JsonSchemaTest, Primitives) {
  Check(R"({"type": "string"})", {R"("")", R"("abc")", R"("a\"b\\c\n")", "\"\xC3\xA9\""}, {"1", "\"a", "null"});
  Check(R"({"type": "integer"})", {"0", "-12", "123456789"}, {"1.5", "\"1\"", "01", "-"});
  Check(R"({"type": "number"})", {"0", "-1.25", "1e10", "2E-3"}, {"1.", ".5", "+1", "true"});
  Check(R"({"type": "boolean"})", {"true", "false"}, {"null", "1"});
  Check(R"({"type": "null"})", {"null"}, {"false"});
  Check(R"({"type": ["string", "null"]})", {"null", R"("x")"}, {"1"});
  Check("true", {"null", R"({"a":[1,{"b":"c"}]})"}, {"{", "nul"});
  Check("{}", {"1", "[]"}, {""});
}

TEST(JsonSchemaTest, NumberBounds) {
  Check(R"({"type": "integer", "minimum": 1, "maximum": 31})", {"1", "31", "15"}, {"0", "32", "-1"});
  Check(R"({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10})", {"1", "9"}, {"0", "10"});
  Check(R"({"type": "number", "minimum": 0.5, "maximum": 2.5})", {"0.5", "1", "2.25"}, {"0.4", "2.6", "-1"});
  Check(R"({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "minimum": 5,
            "exclusiveMinimum": true})", {"6"}, {"5"});
  Check(R"({"type": "integer", "multipleOf": 1})", {"3"}, {"3.5"});
  ExpectError(R"({"properties": {"p": {"type": "number", "multipleOf": 0.01}}})",
              "unsupported keyword \"multipleOf\" at /properties/p");
}

TEST(JsonSchemaTest, Strings) {
  // Lengths count code points, not bytes or escapes.
  Check(R"({"type": "string", "minLength": 2, "maxLength": 3})", {R"("ab")", "\"\xC3\xA9\xC3\xA9\"", R"("a\nb")"},
        {R"("a")", R"("abcd")"});
  Check(R"({"type": "string", "pattern": "^[a-z]+$"})", {R"("abc")"}, {R"("")", R"("aB")"});
  Check(R"({"type": "string", "pattern": "b"})", {R"("abc")", R"("b")"}, {R"("ac")"});  // a search
  Check(R"({"type": "string", "format": "date"})", {R"("2024-02-29")"}, {R"("2024-2-29")"});
  Check(R"({"type": "string", "pattern": "^[0-9]{3}$", "maxLength": 5})", {R"("123")"}, {R"("1234")"});
  ExpectError(R"({"type": "string", "format": "phone"})", "phone");
  ExpectError(R"({"type": "string", "pattern": "a", "maxLength": 3})", "maxLength");
  ExpectError(R"({"type": "string", "pattern": "(?=a)b"})", "pattern");
}

TEST(JsonSchemaTest, EnumAndConst) {
  Check(R"({"enum": ["red", "green", 1, null, [1, 2], {"a": true}]})",
        {R"("red")", R"("green")", "1", "1.0", "null", "[1,2]", R"({"a":true})"},
        {R"("blue")", "2", "[1]", R"({"a":false})", R"({"a":true,"b":1})"});
  Check(R"({"const": "a/b\"c"})", {R"("a/b\"c")", R"("a\/b\"c")"}, {R"("a/bc")"});
  // Members failing the other keywords are dropped.
  Check(R"({"type": "string", "enum": ["ab", "abcd", 3], "maxLength": 3})", {R"("ab")"}, {R"("abcd")", "3"});
  EXPECT_FALSE(CompileError(R"({"type": "integer", "enum": ["a"]})").ok());
}

TEST(JsonSchemaTest, ObjectsKeepPropertyOrder) {
  const std::string schema = R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
      "c": {"type": "boolean"}}, "required": ["b"], "additionalProperties": false})";
  Check(schema, {R"({"b":"x"})", R"({"a":1,"b":"x"})", R"({"a":1,"b":"x","c":true})", R"({"b":"x","c":false})"},
        {"{}", R"({"b":"x","a":1})", R"({"a":1})", R"({"b":"x","d":1})", R"({"b":"x",})", R"({,"b":"x"})"});
}

TEST(JsonSchemaTest, AdditionalPropertiesExcludeNamedOnes) {
  // {"a": "x"} must not pass as an additional property.
  Check(R"({"type": "object", "properties": {"a": {"type": "integer"}}})",
        {R"({"a":1,"z":"x"})", R"({"ab":"x"})", R"({"":1})", "{}"}, {R"({"a":"x"})", R"({"z":1,"a":1})"});
  Check(R"({"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 1, "maxProperties": 2})",
        {R"({"x":1})", R"({"x":1,"y":2})"}, {"{}", R"({"x":1,"y":2,"z":3})", R"({"x":"s"})"});
  Check(R"({"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": false})",
        {R"({"x-a":"s"})", "{}"}, {R"({"y":"s"})", R"({"x-a":1})"});
  ExpectError(R"({"type": "object", "patternProperties": {"^x-": {}}})", "patternProperties");
}

TEST(JsonSchemaTest, Arrays) {
  Check(R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})",
        {"[1]", "[1,2,3]"}, {"[]", "[1,2,3,4]", R"(["a"])", "[1,]"});
  Check(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})",
        {"[]", R"(["a"])", R"(["a",1])"}, {R"(["a",1,2])", "[1]"});
  Check(R"({"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "items": [{"type": "string"}],
            "additionalItems": {"type": "integer"}})",
        {R"(["a",1,2])", "[]"}, {R"(["a","b"])"});
  Check(R"({"type": "array", "uniqueItems": true, "maxItems": 1})", {"[]", "[1]"}, {"[1,1]"});
  ExpectError(R"({"properties": {"tags": {"type": "array", "uniqueItems": true}}})",
              "unsupported keyword \"uniqueItems\" at /properties/tags");
  ExpectError(R"({"type": "array", "contains": {"type": "integer"}})", "contains");
}

TEST(JsonSchemaTest, Applicators) {
  Check(R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]})", {"1", R"("a")"}, {R"("ab")", "1.5"});
  // A oneOf whose alternatives are provably disjoint is an anyOf.
  Check(R"({"oneOf": [{"type": "object", "properties": {"k": {"const": "a"}}, "required": ["k"]},
                       {"type": "object", "properties": {"k": {"const": "b"}, "n": {"type": "integer"}},
                        "required": ["k"]}]})",
        {R"({"k":"a"})", R"({"k":"b","n":1})"}, {R"({"k":"c"})"});
  ExpectError(R"({"oneOf": [{"type": "integer"}, {"type": "number"}]})", "oneOf");
  Check(R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                       {"properties": {"a": {"minimum": 5}, "b": {"type": "string"}}}]})",
        {R"({"a":5})", R"({"a":6,"b":"x"})"}, {R"({"a":4})", R"({"b":"x"})"});
  Check(R"({"not": {"type": ["string", "null"]}})", {"1", "[]"}, {R"("a")", "null"});
  Check(R"({"type": "object", "properties": {"a": {}, "b": {}}, "not": {"required": ["a", "b"]}})",
        {R"({"a":1})", R"({"b":1})", "{}"}, {R"({"a":1,"b":2})"});
  ExpectError(R"({"properties": {"x": {"not": {"pattern": "a"}}}})", "unsupported keyword \"not\" at /properties/x");
  ExpectError(R"({"if": {"type": "string"}, "then": {"minLength": 1}})", "unsupported keyword \"if\"");
  // Not keywords of the draft, or annotations: ignored.
  Check(R"({"type": "integer", "x-foo": {"not": 1}, "title": "t", "_format": "z", "nullable": true})", {"1"}, {"null"});
}

TEST(JsonSchemaTest, Refs) {
  Check(R"({"definitions": {"a~b/c": {"type": "integer"}}, "$ref": "#/definitions/a~0b~1c"})", {"1"}, {R"("x")"});
  Check(R"({"$defs": {"sp ace": {"type": "boolean"}}, "properties": {"x": {"$ref": "#/$defs/sp%20ace"}}})",
        {R"({"x":true})"}, {R"({"x":1})"});
  // Recursion: a tree.
  Check(R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
            "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "additionalProperties": false}},
            "$ref": "#/$defs/node"})",
        {R"({"v":1,"kids":[{"v":2,"kids":[]},{"kids":[{}]}]})"}, {R"({"kids":[{"v":"x"}]})"});
  Check(R"({"type": "object", "properties": {"next": {"$ref": "#"}}, "additionalProperties": false})",
        {R"({"next":{"next":{}}})"}, {R"({"next":1})"});
  ExpectError(R"({"$ref": "https://example.com/s.json"})", "remote reference");
  ExpectError(R"({"$ref": "#/definitions/missing"})", "not found");
}

TEST(JsonSchemaTest, RecursionWithoutProgressEnds) {
  // Each must end (an error or a grammar), never hang.
  EXPECT_FALSE(CompileError(R"({"$ref": "#"})").ok());
  EXPECT_FALSE(CompileError(R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})").ok());
  (void)CompileError(R"({"anyOf": [{"$ref": "#"}, {"type": "integer"}]})");
  (void)CompileError(R"({"allOf": [{"$ref": "#"}], "type": "object"})");
  (void)CompileError(R"({"$defs": {"t": {"allOf": [{"$ref": "#/$defs/t"}], "properties": {"c": {"$ref": "#/$defs/t"}}}},
                         "allOf": [{"$ref": "#/$defs/t"}, {"$ref": "#/$defs/t"}]})");
}

TEST(JsonSchemaTest, FlexibleWhitespace) {
  Grammar g = Compile(R"({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}})",
                      /*flexible=*/true);
  EXPECT_TRUE(Accepts(g, R"({"a": [1, 2]})"));
  EXPECT_TRUE(Accepts(g, "{\n  \"a\" :\t[ 1 ,2 ]\r\n}"));
  EXPECT_FALSE(Accepts(g, R"( {"a": [1]})"));  // not before the first token
  EXPECT_FALSE(Accepts(g, R"({"a": [1]} )"));  // nor after the last
  Grammar compact = Compile(R"({"type": "object", "properties": {"a": {"type": "integer"}}})");
  EXPECT_FALSE(Accepts(compact, R"({"a": 1})"));
  EXPECT_TRUE(Accepts(compact, R"({"a":1})"));
}

TEST(JsonSchemaTest, AnyJson) {
  auto any = AnyJsonGrammar(false, JsonSchemaOptions{});
  ASSERT_TRUE(any.ok()) << any.status();
  EXPECT_TRUE(Accepts(*any, "[1,\"a\",{\"b\":null}]"));
  auto obj = AnyJsonGrammar(true, JsonSchemaOptions{});
  ASSERT_TRUE(obj.ok()) << obj.status();
  EXPECT_TRUE(Accepts(*obj, "{\"b\":[true]}"));
  EXPECT_FALSE(Accepts(*obj, "[1]"));
}

TEST(JsonSchemaTest, HostileInputs) {
  // Too large: refused before parsing.
  std::string big = "{\"enum\": [\"" + std::string(10 << 20, 'a') + "\"]}";
  EXPECT_EQ(CompileError(big).code(), absl::StatusCode::kResourceExhausted);
  // Malformed JSON, invalid UTF-8 in a property name, a schema that is not an object.
  EXPECT_EQ(CompileError("{\"type\": ").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CompileError("{\"properties\": {\"\xFF\xFE\": {}}}").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CompileError("[1]").code(), absl::StatusCode::kInvalidArgument);
  // Deep nesting: a bounded error.
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "{\"items\": ";
  deep += "{}";
  for (int i = 0; i < 5000; ++i) deep += "}";
  EXPECT_EQ(CompileError(deep).code(), absl::StatusCode::kResourceExhausted);
  // 100,000 string values: one lexeme.
  std::string values;
  for (int i = 0; i < 100'000; ++i) values += (i ? ",\"v" : "\"v") + std::to_string(i) + "\"";
  auto g = CompileJsonSchema("{\"enum\": [" + values + "]}", JsonSchemaOptions{});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(Accepts(*g, "\"v99999\""));
  EXPECT_FALSE(Accepts(*g, "\"v100000\""));
  // Huge bounds are bounded, not expanded.
  (void)CompileError(R"({"type": "array", "minItems": 1000000000})");
  (void)CompileError(R"({"type": "array", "maxItems": 1000000000})");
  (void)CompileError(R"({"type": "string", "maxLength": 4000000000})");
  // Merges that double at each level stop at the work bound.
  std::string defs = R"({"$defs": {"d0": {"type": "object", "properties": {"x": {"type": "integer"}}})";
  for (int i = 1; i < 40; ++i) {
    defs += ", \"d" + std::to_string(i) + "\": {\"allOf\": [{\"$ref\": \"#/$defs/d" + std::to_string(i - 1) +
            "\"}, {\"$ref\": \"#/$defs/d" + std::to_string(i - 1) + "\"}], \"properties\": {\"y\": {\"$ref\": \"#/$defs/d" +
            std::to_string(i - 1) + "\"}}}";
  }
  defs += R"(}, "$ref": "#/$defs/d39"})";
  (void)CompileError(defs);
}

// Python's json.dumps(data, ensure_ascii=False): ", " and ": " separators.
void DumpPy(const nlohmann::ordered_json& j, std::string& out) {
  if (j.is_object()) {
    out += "{";
    bool first = true;
    for (const auto& [k, v] : j.items()) {
      if (!first) out += ", ";
      first = false;
      out += nlohmann::ordered_json(k).dump();
      out += ": ";
      DumpPy(v, out);
    }
    out += "}";
  } else if (j.is_array()) {
    out += "[";
    for (size_t i = 0; i < j.size(); ++i) {
      if (i) out += ", ";
      DumpPy(j[i], out);
    }
    out += "]";
  } else {
    out += j.dump();
  }
}

// MaskBench's check over the shared subset (golden/maskbench/README.md): no invalid
// instance may be a viable prefix (MaskBench forces the tokens and counts an instance
// accepted if every token was allowed); valid instances must be accepted whole.
TEST(JsonSchemaTest, MaskBenchSubset) {
  LLMSERVE_REQUIRE_ASSET(dir, "golden/maskbench/data");
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  int passing = 0, compile_errors = 0;
  std::vector<std::string> validation_errors, invalidation_errors;
  for (const auto& path : files) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    auto doc = nlohmann::ordered_json::parse(text.str());
    JsonSchemaOptions opts;
    opts.whitespace_flexible = true;
    auto g = CompileJsonSchema(doc["schema"].dump(), opts);
    if (!g.ok()) {
      ++compile_errors;
      continue;
    }
    auto compiled = CompiledConstraint::Create(*std::move(g), nullptr);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    bool ok = true;
    for (const auto& t : doc.value("tests", nlohmann::ordered_json::array())) {
      std::string instance;
      DumpPy(t["data"], instance);
      Matcher m(*compiled);
      const bool prefix = m.AdvanceBytes(instance);
      if (t["valid"].get<bool>() && !(prefix && m.Accepting())) {
        if (ok) validation_errors.push_back(path.filename().string());
        ok = false;
      } else if (!t["valid"].get<bool>() && prefix) {
        invalidation_errors.push_back(path.filename().string() + ": " + instance.substr(0, 200));
        ok = false;
      }
    }
    passing += ok;
  }
  std::string names;
  for (const auto& n : validation_errors) names += n + " ";
  std::cout << "maskbench subset: " << files.size() << " files, " << passing << " passing, " << compile_errors
            << " compile errors, " << validation_errors.size() << " validation errors (" << names << "), "
            << invalidation_errors.size() << " invalidation errors\n";
  EXPECT_TRUE(invalidation_errors.empty()) << invalidation_errors.front();
  // Measured: 2 files, valid instances whose property order is not the one we generate
  // (MaskBench reordered instances only for the schemas llguidance compiles; these use
  // `not` and a differently merged allOf).
  EXPECT_LE(validation_errors.size(), 2u) << names;
  EXPECT_GE(passing, 930);  // measured 939 of 1131
}

}  // namespace
}  // namespace llmserve::constraint
