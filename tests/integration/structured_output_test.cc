// Structured outputs end to end: the real llmserve with the committed stories260K model,
// constrained over HTTP (each dialect: OpenAI's response_format, vLLM's structured_outputs
// and guided_*, llama.cpp's json_schema and grammar) and over gRPC. Every output must
// satisfy its constraint, checked here in C++ (the JSON Schema's rules by hand), with
// greedy and seeded sampling; bad and hostile constraints get a clear 400 (or gRPC status)
// naming the field, and the server serves on afterwards; the metrics count it all.
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/openai_client.h"
#include "tests/integration/server_process.h"
#include "tests/util/prom_text.h"
#include "tests/util/test_assets.h"

namespace llmserve::testing {
namespace {

namespace v1 = llmserve::v1;
using json = nlohmann::json;

constexpr char kPrompt[] = "Once upon a time, there was a little";

// Properties out of alphabetical order: the output's order shows the schema's text (not
// its parsed, key-sorted form) reached the compiler.
constexpr char kPersonSchema[] =
    R"({"type":"object","properties":{"name":{"type":"string","maxLength":8},)"
    R"("age":{"type":"integer","minimum":0,"maximum":120}},"required":["name","age"],"additionalProperties":false})";

// Code points in valid UTF-8.
size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// kPersonSchema's rules: an object with exactly "name" (a string of at most 8 characters)
// and "age" (an integer in [0, 120]); `compact`: no whitespace outside strings, name first.
::testing::AssertionResult IsPerson(const std::string& text, bool compact) {
  const json v = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) return ::testing::AssertionFailure() << "not JSON: '" << text << "'";
  if (!v.is_object() || v.size() != 2 || !v.contains("name") || !v.contains("age")) {
    return ::testing::AssertionFailure() << "not {name, age}: " << text;
  }
  if (!v["name"].is_string() || CodePoints(v["name"].get<std::string>()) > 8) {
    return ::testing::AssertionFailure() << "name is not a string of <= 8 characters: " << text;
  }
  if (!v["age"].is_number_integer() || v["age"].get<int64_t>() < 0 || v["age"].get<int64_t>() > 120) {
    return ::testing::AssertionFailure() << "age is not an integer in [0, 120]: " << text;
  }
  if (compact && (text.rfind("{\"name\":\"", 0) != 0 || text.find(",\"age\":") == std::string::npos)) {
    return ::testing::AssertionFailure() << "not compact, or not in the schema's property order: " << text;
  }
  return ::testing::AssertionSuccess();
}

// A ChatML template for stories260K (which ships none), in a scratch file.
std::string ChatTemplateFile() {
  const std::string path = ScratchDir("structured_output") + "/chatml.jinja";
  std::ofstream(path) << "{%- for message in messages -%}\n"
                         "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}\n"
                         "{%- endfor -%}\n"
                         "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}\n";
  return path;
}

class StructuredOutputTest : public ::testing::Test {
 protected:
  // One server for the suite (the committed model: never skipped for a missing asset).
  static void SetUpTestSuite() {
    const std::string dir = std::string(LLMSERVE_SOURCE_DIR) + "/models/";
    std::vector<std::string> args = Stories260KArgs(dir + "stories260K.bin", dir + "tok512.bin");
    http_port_ = PickFreePort();
    metrics_port_ = PickFreePort();
    args.push_back(absl::StrCat("--http-port=", http_port_));
    args.push_back(absl::StrCat("--metrics-port=", metrics_port_));
    args.push_back("--chat-template=" + ChatTemplateFile());
    std::string error;
    server_ = ServerProcess::Start(args, &error).release();
    if (server_ == nullptr) start_error_ = new std::string(error);
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr) << (start_error_ != nullptr ? *start_error_ : "");
    stub_ = server_->stub();
  }
  // The suite's server outlives each test, so its log is printed here when a test fails
  // (ServerProcess prints it only when destroyed during a failing test).
  void TearDown() override {
    if (!HasFailure() || server_ == nullptr) return;
    const std::string log = server_->Log();
    constexpr size_t kTail = 16000;
    std::cerr << "---- server log (last " << kTail << " bytes) ----\n"
              << (log.size() > kTail ? log.substr(log.size() - kTail) : log) << "---- end of server log ----\n";
  }

  static HttpResult Complete(json body) {
    body["prompt"] = kPrompt;
    if (!body.contains("max_tokens")) body["max_tokens"] = 64;
    return PostJson(http_port_, "/v1/completions", body);
  }

  static v1::GenerateRequest GrpcRequest(std::optional<uint64_t> seed) {
    v1::GenerateRequest r;
    r.set_text(kPrompt);
    r.set_max_tokens(64);
    if (seed.has_value()) {
      r.set_temperature(1.0f);
      r.set_seed(*seed);
    } else {
      r.set_temperature(0.0f);
    }
    return r;
  }

  static json Sampling(std::optional<uint64_t> seed) {
    if (!seed.has_value()) return {{"temperature", 0}};
    return {{"temperature", 1.0}, {"seed", *seed}};
  }

  static inline ServerProcess* server_ = nullptr;
  static inline std::string* start_error_ = nullptr;
  static inline int http_port_ = 0;
  static inline int metrics_port_ = 0;
  std::unique_ptr<v1::LlmService::Stub> stub_;
};

TEST_F(StructuredOutputTest, JsonSchemaOverHttpAndGrpc) {
  const json schema = json::parse(kPersonSchema);
  for (const std::optional<uint64_t> seed :
       {std::optional<uint64_t>(), std::optional<uint64_t>(7), std::optional<uint64_t>(424242)}) {
    SCOPED_TRACE(seed.has_value() ? absl::StrCat("seed ", *seed) : "greedy");
    // gRPC with the schema's text.
    v1::GenerateRequest req = GrpcRequest(seed);
    req.mutable_constraint()->set_json_schema(kPersonSchema);
    const StreamResult grpc = Generate(*stub_, req);
    ASSERT_TRUE(grpc.status.ok()) << grpc.status.error_message();
    EXPECT_TRUE(IsPerson(grpc.text, /*compact=*/true));
    EXPECT_TRUE(grpc.final_msg.finish_reason() == v1::FINISH_REASON_CONSTRAINT ||
                grpc.final_msg.finish_reason() == v1::FINISH_REASON_EOS)
        << v1::FinishReason_Name(grpc.final_msg.finish_reason());

    // OpenAI's response_format with the schema as a JSON object. (nlohmann sorts the body's
    // keys, so this schema lists "age" before "name": the output does too.)
    json body = Sampling(seed);
    body["response_format"] = {{"type", "json_schema"},
                               {"json_schema", {{"name", "person"}, {"strict", true}, {"schema", schema}}}};
    const HttpResult http = Complete(body);
    ASSERT_EQ(http.status, 200) << http.raw;
    EXPECT_EQ(http.body["choices"][0]["finish_reason"], "stop") << http.raw;
    const std::string http_text = http.body["choices"][0]["text"];
    EXPECT_TRUE(IsPerson(http_text, /*compact=*/false));
    EXPECT_EQ(http_text.rfind("{\"age\":", 0), 0u) << http_text;

    // vLLM's structured_outputs, streamed, with the schema as text (the same text as gRPC's):
    // the same output as gRPC for the same seed.
    json so = Sampling(seed);
    so["structured_outputs"] = {{"json", kPersonSchema}};
    so["stream"] = true;
    const HttpResult streamed = Complete(so);
    ASSERT_EQ(streamed.status, 200) << streamed.raw;
    EXPECT_TRUE(streamed.done);
    EXPECT_EQ(streamed.finish_reason, "stop");
    EXPECT_EQ(streamed.text, grpc.text);
    EXPECT_TRUE(IsPerson(streamed.text, /*compact=*/true));

    // Chat Completions with llama.cpp's json_schema (an object: PostJson sorts it).
    json chat = Sampling(seed);
    chat["messages"] = {{{"role", "user"}, {"content", "Who is Lily?"}}};
    chat["max_tokens"] = 64;
    chat["json_schema"] = schema;
    const HttpResult chat_result = PostJson(http_port_, "/v1/chat/completions", chat);
    ASSERT_EQ(chat_result.status, 200) << chat_result.raw;
    EXPECT_EQ(chat_result.body["choices"][0]["finish_reason"], "stop");
    EXPECT_TRUE(IsPerson(chat_result.body["choices"][0]["message"]["content"], /*compact=*/false));
  }
}

// The schema's text reaches the compiler as the client wrote it: an HTTP body whose schema
// lists "name" before "age" gives name first (the parsed body would sort them).
TEST_F(StructuredOutputTest, TheSchemasPropertyOrderIsKept) {
  const std::string body =
      absl::StrCat(R"({"prompt": ")", kPrompt, R"(", "max_tokens": 64, "temperature": 0, )",
                   R"("response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": )",
                   kPersonSchema, "}}}");
  // A raw body (PostJson would re-serialize it with sorted keys).
  const HttpResult r = PostRawJson(http_port_, "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_TRUE(IsPerson(r.body["choices"][0]["text"], /*compact=*/true)) << r.raw;
  v1::GenerateRequest req = GrpcRequest(std::nullopt);
  req.mutable_constraint()->set_json_schema(kPersonSchema);
  const StreamResult grpc = Generate(*stub_, req);
  ASSERT_TRUE(grpc.status.ok()) << grpc.status.error_message();
  EXPECT_EQ(r.body["choices"][0]["text"], grpc.text);
}

// "whitespace": "flexible" is accepted; a model this small wanders in the whitespace it
// allows (why compact is the default), so only an output the constraint ended is checked.
TEST_F(StructuredOutputTest, FlexibleWhitespaceStillParses) {
  json body = Sampling(std::nullopt);
  body["structured_outputs"] = {{"json", kPersonSchema}, {"whitespace", "flexible"}};
  body["max_tokens"] = 200;
  const HttpResult r = Complete(body);
  ASSERT_EQ(r.status, 200) << r.raw;
  if (r.body["choices"][0]["finish_reason"] == "stop") {
    EXPECT_TRUE(IsPerson(r.body["choices"][0]["text"], /*compact=*/false)) << r.raw;
  }
}

TEST_F(StructuredOutputTest, RegexChoiceAndGrammar) {
  const std::regex sentence("[a-z ]{3,20}\\.");
  for (const std::optional<uint64_t> seed : {std::optional<uint64_t>(), std::optional<uint64_t>(11)}) {
    SCOPED_TRACE(seed.has_value() ? "seeded" : "greedy");
    json regex = Sampling(seed);
    regex["guided_regex"] = "[a-z ]{3,20}\\.";
    const HttpResult r = Complete(regex);
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(r.body["choices"][0]["finish_reason"], "stop");
    EXPECT_TRUE(std::regex_match(r.body["choices"][0]["text"].get<std::string>(), sentence)) << r.raw;

    v1::GenerateRequest g = GrpcRequest(seed);
    g.mutable_constraint()->set_regex("[a-z ]{3,20}\\.");
    const StreamResult gr = Generate(*stub_, g);
    ASSERT_TRUE(gr.status.ok()) << gr.status.error_message();
    EXPECT_TRUE(std::regex_match(gr.text, sentence)) << gr.text;
    EXPECT_EQ(gr.text, r.body["choices"][0]["text"]);

    const std::set<std::string> choices = {"happy", "sad", "very brave"};
    json choice = Sampling(seed);
    choice["structured_outputs"] = {{"choice", choices}};
    const HttpResult c = Complete(choice);
    ASSERT_EQ(c.status, 200) << c.raw;
    EXPECT_EQ(c.body["choices"][0]["finish_reason"], "stop");
    EXPECT_TRUE(choices.contains(c.body["choices"][0]["text"].get<std::string>())) << c.raw;

    v1::GenerateRequest gc = GrpcRequest(seed);
    for (const std::string& s : choices) gc.mutable_constraint()->mutable_choice()->add_choices(s);
    const StreamResult gcr = Generate(*stub_, gc);
    ASSERT_TRUE(gcr.status.ok()) << gcr.status.error_message();
    EXPECT_TRUE(choices.contains(gcr.text)) << gcr.text;
    EXPECT_EQ(gcr.final_msg.finish_reason(), v1::FINISH_REASON_CONSTRAINT);

    json grammar = Sampling(seed);
    grammar["grammar"] = "root ::= \"The \" animal \" ran.\"\nanimal ::= \"cat\" | \"dog\" | \"big bird\"\n";
    const HttpResult gm = Complete(grammar);
    ASSERT_EQ(gm.status, 200) << gm.raw;
    const std::string text = gm.body["choices"][0]["text"];
    EXPECT_TRUE(text == "The cat ran." || text == "The dog ran." || text == "The big bird ran.") << text;

    json object = Sampling(seed);
    object["response_format"] = {{"type", "json_object"}};
    object["max_tokens"] = 100;
    const HttpResult o = Complete(object);
    ASSERT_EQ(o.status, 200) << o.raw;
    const std::string otext = o.body["choices"][0]["text"];
    EXPECT_EQ(otext.rfind("{", 0), 0u) << otext;  // an object, complete when the constraint ended it
    if (o.body["choices"][0]["finish_reason"] == "stop") {
      EXPECT_TRUE(json::parse(otext, nullptr, false).is_object()) << otext;
    }
  }
}

TEST_F(StructuredOutputTest, BadAndHostileConstraintsAreRefusedClearly) {
  struct Case {
    std::string body_fields;  // raw JSON members
    const char* param;
    const char* message;  // a part of the message
  };
  std::string deep = R"({"type":"string"})";
  for (int i = 0; i < 3000; ++i) deep = absl::StrCat(R"({"type":"array","items":)", deep, "}");
  json many = json::array();
  for (int i = 0; i < 100001; ++i) many.push_back(absl::StrCat("c", i));
  const std::vector<Case> cases = {
      {R"("response_format": {"type": "json_schema", "json_schema": {"name": "n", )"
       R"("schema": {"type": "number", "multipleOf": 3}}})",
       "response_format.json_schema.schema", "unsupported keyword \"multipleOf\""},
      {R"("structured_outputs": {"json": {"type": "object", "patternProperties": {"^a": {}, "^ab": {}}}})",
       "structured_outputs.json", "patternProperties"},
      {R"("response_format": {"type": "xml"})", "response_format.type", "\"xml\" is not supported"},
      {R"("guided_regex": "(ab")", "guided_regex", "regex: "},
      {R"("grammar": "start ::= \"a\"")", "grammar", "root"},
      {R"("guided_json": {}, "guided_regex": "a")", "guided_json", "guided_json and guided_regex both constrain"},
      {absl::StrCat(R"("guided_json": )", deep), "guided_json", "deeper than"},
      {absl::StrCat(R"("guided_choice": )", many.dump()), "guided_choice", "at most 100000 choices"},
      {R"("guided_json": {"type": "string", "minLength": 1000000})", "guided_json", "above the limit"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body_fields.substr(0, 120));
    const HttpResult r = PostRawJson(http_port_, "/v1/completions",
                                     absl::StrCat(R"({"prompt": "x", "max_tokens": 8, )", c.body_fields, "}"));
    EXPECT_EQ(r.status, 400) << r.raw.substr(0, 400);
    EXPECT_EQ(r.body["error"]["type"], "invalid_request_error");
    EXPECT_EQ(r.body["error"]["param"], c.param) << r.raw.substr(0, 400);
    const std::string message = r.body["error"].value("message", "");
    EXPECT_EQ(message.rfind(c.param, 0), 0u) << message.substr(0, 400);
    EXPECT_NE(message.find(c.message), std::string::npos) << message.substr(0, 400);
  }
  // gRPC: the field and the bound, with the canonical codes.
  v1::GenerateRequest bad = GrpcRequest(std::nullopt);
  bad.mutable_constraint()->set_json_schema(R"({"type": "number", "multipleOf": 3})");
  StreamResult g = Generate(*stub_, bad);
  EXPECT_EQ(g.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(g.status.error_message().rfind("constraint.json_schema: unsupported keyword \"multipleOf\"", 0), 0u)
      << g.status.error_message();
  bad.mutable_constraint()->set_json_schema(deep);
  g = Generate(*stub_, bad);
  EXPECT_EQ(g.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << g.status.error_message();
  EXPECT_NE(g.status.error_message().find("deeper than"), std::string::npos) << g.status.error_message();

  // A 100,000-way enum is within the bounds: it compiles, and the output is one of them.
  json values = json::array();
  for (int i = 0; i < 100000; ++i) values.push_back(absl::StrCat("v", i));
  const HttpResult e = Complete({{"temperature", 0}, {"guided_json", {{"enum", values}}}});
  ASSERT_EQ(e.status, 200) << e.raw.substr(0, 400);
  const json chosen = json::parse(e.body["choices"][0]["text"].get<std::string>(), nullptr, false);
  ASSERT_TRUE(chosen.is_string()) << e.raw;
  EXPECT_EQ(chosen.get<std::string>().rfind("v", 0), 0u);

  // The server serves on.
  EXPECT_EQ(server_->Health(""), grpc::health::v1::HealthCheckResponse::SERVING);
  const StreamResult after = Generate(*stub_, GreedyRequest(kPrompt, 16));
  ASSERT_TRUE(after.status.ok()) << after.status.error_message();
  EXPECT_EQ(after.ids.size(), 16u);
  EXPECT_TRUE(WaitBlocksFree(*stub_, absl::Seconds(5)));
}

TEST_F(StructuredOutputTest, MetricsCountKindsCacheAndMasks) {
  // Two requests with the same regex: one miss, then a hit.
  for (int i = 0; i < 2; ++i) {
    const HttpResult r = Complete({{"temperature", 0}, {"guided_regex", "(yes|no), [a-z]+\\."}});
    ASSERT_EQ(r.status, 200) << r.raw;
  }
  const HttpResult bound = Complete({{"guided_json", {{"type", "string"}, {"minLength", 1000000}}}});
  ASSERT_EQ(bound.status, 400);
  const HttpResult scrape = GetJson(metrics_port_, "/metrics");
  ASSERT_EQ(scrape.status, 200);
  const std::vector<PromSample> s = ParsePromText(scrape.raw);
  EXPECT_GE(FindSample(s, "llmserve_constrained_requests_total", {{"kind", "regex"}}).value_or(-1), 2);
  EXPECT_GE(FindSample(s, "llmserve_constrained_requests_total", {{"kind", "json_schema"}}).value_or(-1), 1);
  EXPECT_GE(FindSample(s, "llmserve_constraint_cache_lookups_total", {{"result", "hit"}}).value_or(-1), 1);
  EXPECT_GE(FindSample(s, "llmserve_constraint_cache_lookups_total", {{"result", "miss"}}).value_or(-1), 2);
  EXPECT_GE(FindSample(s, "llmserve_constraint_compile_seconds_count").value_or(-1), 2);
  EXPECT_GT(FindSample(s, "llmserve_constraint_mask_seconds_count").value_or(-1), 0);
  // A compile bound is the request's fault: not a full queue.
  EXPECT_EQ(FindSample(s, "llmserve_request_failure_total", {{"code", "resource_exhausted"}}).value_or(-1), 0);
  EXPECT_GE(FindSample(s, "llmserve_request_failure_total", {{"code", "invalid_argument"}}).value_or(-1), 1);
}

}  // namespace
}  // namespace llmserve::testing
