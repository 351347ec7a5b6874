// ParseOpenAiRequest: OpenAI request bodies become the GenerationInput a gRPC request also
// becomes, with OpenAI's names (fields, null as absent, prompt forms, chat content parts),
// and bad bodies are INVALID_ARGUMENT naming the field; ToHttpError's statuses and error
// objects. (Values out of range are request_fields_test's: both protocols, one check.)
#include "server/openai_request.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/http_status.h"
#include "server/openai_constraint.h"

namespace llmserve {
namespace {

OpenAiRequest Parse(OpenAiEndpoint e, const std::string& body) {
  absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(e, body);
  EXPECT_TRUE(r.ok()) << body << ": " << r.status();
  return r.ok() ? *r : OpenAiRequest();
}

TEST(OpenAiRequestTest, CompletionFieldsBecomeTheGenerationInput) {
  const OpenAiRequest r = Parse(OpenAiEndpoint::kCompletions, R"({
      "model": "m", "prompt": "Hello", "max_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": -1,
      "min_p": 0.1, "presence_penalty": 0.2, "frequency_penalty": -0.3, "repetition_penalty": 1.1, "seed": 42,
      "stop": ["a", "bc"], "logprobs": 2, "n": 1, "user": "u", "cache_salt": "s", "logit_bias": {"5": -100},
      "stream": true, "stream_options": {"include_usage": true}, "ignore_eos": true, "stop_token_ids": [3],
      "echo": false, "best_of": 1, "suffix": null, "unknown_field": {"x": 1}})");
  const GenerationInput& g = r.input;
  EXPECT_EQ(r.model, "m");
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(g.names, &OpenAiCompletionsFieldNames());
  EXPECT_EQ(g.prompt, PromptKind::kText);
  EXPECT_EQ(g.text, "Hello");
  EXPECT_EQ(g.max_tokens, 7);
  EXPECT_FLOAT_EQ(*g.temperature, 0.5f);
  EXPECT_FLOAT_EQ(*g.top_p, 0.9f);
  EXPECT_EQ(g.top_k, 0);  // -1 = off
  EXPECT_FLOAT_EQ(*g.min_p, 0.1f);
  EXPECT_FLOAT_EQ(*g.presence_penalty, 0.2f);
  EXPECT_FLOAT_EQ(*g.frequency_penalty, -0.3f);
  EXPECT_FLOAT_EQ(*g.repetition_penalty, 1.1f);
  EXPECT_EQ(g.seed, 42u);
  EXPECT_EQ(g.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(g.logprobs, 2);
  EXPECT_EQ(g.cache_salt, "s");
  EXPECT_EQ(g.logit_bias.at(5), -100.0f);
  EXPECT_TRUE(g.ignore_eos);
  EXPECT_EQ(g.stop_token_ids, std::vector<int32_t>{3});
}

TEST(OpenAiRequestTest, NullAndAbsentLeaveDefaults) {
  const OpenAiRequest r =
      Parse(OpenAiEndpoint::kCompletions,
            R"({"prompt": "x", "temperature": null, "max_tokens": null, "stop": null, "seed": null})");
  EXPECT_FALSE(r.input.temperature.has_value());
  EXPECT_FALSE(r.input.max_tokens.has_value());
  EXPECT_FALSE(r.input.seed.has_value());
  EXPECT_FALSE(r.input.logprobs.has_value());
  EXPECT_FALSE(r.logprobs);
  EXPECT_TRUE(r.input.stop.empty());
}

TEST(OpenAiRequestTest, PromptForms) {
  EXPECT_EQ(Parse(OpenAiEndpoint::kCompletions, R"({"prompt": ["one"]})").input.text, "one");
  const GenerationInput ids = Parse(OpenAiEndpoint::kCompletions, R"({"prompt": [1, 2, 3]})").input;
  EXPECT_EQ(ids.prompt, PromptKind::kTokens);
  EXPECT_EQ(ids.token_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(Parse(OpenAiEndpoint::kCompletions, R"({"prompt": [[4, 5]]})").input.token_ids.size(), 2u);
  EXPECT_EQ(Parse(OpenAiEndpoint::kCompletions, R"({"prompt": "x", "seed": -1})").input.seed, ~uint64_t{0});
  // Empty prompts parse; ToEngineRequest refuses them, as it does an empty gRPC text.
  EXPECT_EQ(Parse(OpenAiEndpoint::kCompletions, R"({"prompt": ""})").input.prompt, PromptKind::kText);
  EXPECT_EQ(Parse(OpenAiEndpoint::kCompletions, R"({"prompt": []})").input.prompt, PromptKind::kTokens);
}

TEST(OpenAiRequestTest, ChatMessagesPartsAndLogprobs) {
  const OpenAiRequest r = Parse(OpenAiEndpoint::kChatCompletions, R"({
      "messages": [{"role": "system", "content": "Be brief."},
                   {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                   {"role": "assistant", "content": null}],
      "max_tokens": 9, "max_completion_tokens": 5, "logprobs": true, "top_logprobs": 3,
      "tools": [{"type": "function"}], "add_generation_prompt": false})");
  EXPECT_EQ(r.input.prompt, PromptKind::kChat);
  const ChatConversation& chat = r.input.chat;
  ASSERT_EQ(chat.messages.size(), 3u);
  EXPECT_EQ(chat.messages[0].role, "system");
  EXPECT_EQ(chat.messages[0].content, "Be brief.");
  EXPECT_EQ(chat.messages[1].content, "a\nb");
  EXPECT_EQ(chat.messages[2].content, "");
  EXPECT_EQ(r.input.max_tokens, 5);  // max_completion_tokens wins, and errors name it
  EXPECT_EQ((*r.input.names)[RequestField::kMaxTokens].name, "max_completion_tokens");
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.input.logprobs, 3);
  EXPECT_EQ(chat.tools_json, R"([{"type":"function"}])");
  EXPECT_FALSE(chat.add_generation_prompt);
  const OpenAiRequest plain = Parse(OpenAiEndpoint::kChatCompletions, R"({"messages": [], "logprobs": true})");
  EXPECT_EQ(plain.input.logprobs, 0);
  EXPECT_TRUE(plain.input.chat.add_generation_prompt);
  const OpenAiRequest old_name = Parse(OpenAiEndpoint::kChatCompletions, R"({"messages": [], "max_tokens": 4})");
  EXPECT_EQ(old_name.input.max_tokens, 4);
  EXPECT_EQ((*old_name.input.names)[RequestField::kMaxTokens].name, "max_tokens");
  EXPECT_EQ((*old_name.input.names)[RequestField::kLogprobs].name, "top_logprobs");
}

// Each bad body: INVALID_ARGUMENT, HTTP 400, and the field named as "param".
TEST(OpenAiRequestTest, BadBodiesNameTheField) {
  struct Case {
    OpenAiEndpoint endpoint;
    const char* body;
    const char* param;  // nullptr: none
  };
  const OpenAiEndpoint kC = OpenAiEndpoint::kCompletions, kChat = OpenAiEndpoint::kChatCompletions;
  const Case cases[] = {
      {kC, "{", nullptr},
      {kC, "[]", nullptr},
      {kC, "\"text\"", nullptr},
      {kC, R"({})", "prompt"},
      {kC, R"({"prompt": ["a", "b"]})", "prompt"},
      {kC, R"({"prompt": [1, "a"]})", "prompt"},
      {kC, R"({"prompt": [1, 99999999999]})", "prompt"},
      {kC, R"({"prompt": 5})", "prompt"},
      {kC, R"({"prompt": "x", "n": 2})", "n"},
      {kC, R"({"prompt": "x", "n": "1"})", "n"},
      {kC, R"({"prompt": "x", "best_of": 3})", "best_of"},
      {kC, R"({"prompt": "x", "echo": true})", "echo"},
      {kC, R"({"prompt": "x", "suffix": "y"})", "suffix"},
      {kC, R"({"prompt": "x", "temperature": "hot"})", "temperature"},
      {kC, R"({"prompt": "x", "max_tokens": 1.5})", "max_tokens"},
      {kC, R"({"prompt": "x", "max_tokens": 4294967296})", "max_tokens"},
      {kC, R"({"prompt": "x", "seed": 1.5})", "seed"},
      {kC, R"({"prompt": "x", "stop": 3})", "stop"},
      {kC, R"({"prompt": "x", "stop": ["a", 3]})", "stop"},
      {kC, R"({"prompt": "x", "logit_bias": {"a": 1}})", "logit_bias"},
      {kC, R"({"prompt": "x", "logit_bias": {"1": "big"}})", "logit_bias"},
      {kC, R"({"prompt": "x", "logit_bias": [1]})", "logit_bias"},
      {kC, R"({"prompt": "x", "stream_options": {"include_usage": true}})", "stream_options"},
      {kC, R"({"prompt": "x", "stream": true, "stream_options": {"include_usage": 1}})",
       "stream_options.include_usage"},
      {kC, R"({"prompt": "x", "stream": "yes"})", "stream"},
      {kC, R"({"prompt": "x", "logprobs": true})", "logprobs"},
      {kC, R"({"prompt": "x", "model": 4})", "model"},
      {kC, R"({"prompt": "x", "user": 4})", "user"},
      {kC, R"({"prompt": "x", "response_format": {"type": "xml"}})", "response_format.type"},
      {kC, R"({"prompt": "x", "stop_token_ids": 3})", "stop_token_ids"},
      {kChat, R"({})", "messages"},
      {kChat, R"({"messages": {}})", "messages"},
      {kChat, R"({"messages": [3]})", "messages[0]"},
      {kChat, R"({"messages": [{"content": "x"}]})", "messages[0].role"},
      {kChat, R"({"messages": [{"role": "user", "content": 3}]})", "messages[0].content"},
      {kChat, R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content[0]"},
      {kChat, R"({"messages": [], "top_logprobs": 2})", "top_logprobs"},
      {kChat, R"({"messages": [], "logprobs": 1})", "logprobs"},
      {kChat, R"({"messages": [], "tools": {}})", "tools"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(c.endpoint, c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.body;
    const HttpError e = ToHttpError(r.status());
    EXPECT_EQ(e.status, 400) << c.body;
    if (c.param == nullptr) {
      EXPECT_TRUE(e.body["error"]["param"].is_null()) << c.body << " " << e.body;
    } else {
      EXPECT_EQ(e.body["error"]["param"], c.param) << c.body << " " << e.body;
    }
    EXPECT_EQ(e.body["error"]["type"], "invalid_request_error");
  }
}

TEST(HttpStatusTest, CodesAndErrorObjects) {
  // "param" comes from the payload only, never from the message's words.
  EXPECT_TRUE(ToHttpError(absl::InvalidArgumentError("top_p must be in (0, 1], got 2")).body["error"]["param"].is_null());
  EXPECT_EQ(ToHttpError(WithParam(absl::InvalidArgumentError("stop[3] must be non-empty"), "stop")).body["error"]["param"],
            "stop");
  EXPECT_TRUE(ToHttpError(absl::InvalidArgumentError("the body is bad")).body["error"]["param"].is_null());
  const HttpError unauth = ToHttpError(absl::UnauthenticatedError("no key"));
  EXPECT_EQ(unauth.status, 401);
  EXPECT_EQ(unauth.body["error"]["code"], "invalid_api_key");
  EXPECT_EQ(ToHttpError(absl::NotFoundError("no model")).status, 404);
  EXPECT_EQ(ToHttpError(absl::ResourceExhaustedError("queue full")).status, 429);
  EXPECT_EQ(ToHttpError(absl::UnavailableError("loading")).status, 503);
  EXPECT_EQ(ToHttpError(absl::DeadlineExceededError("late")).status, 504);
  EXPECT_EQ(ToHttpError(absl::InternalError("boom")).status, 500);
  EXPECT_EQ(ToHttpError(absl::FailedPreconditionError("no template")).status, 400);
  EXPECT_EQ(ToHttpError(WithHttpStatus(absl::InvalidArgumentError("too big"), 413)).status, 413);
  const HttpError named = ToHttpError(WithParam(absl::InvalidArgumentError("prompt (3) + max_tokens"), "max_tokens"));
  EXPECT_EQ(named.body["error"]["param"], "max_tokens");
  EXPECT_EQ(named.body["error"]["message"], "prompt (3) + max_tokens");
}


// Structured outputs (server/openai_constraint.h): every accepted form becomes one
// ConstraintSpec, named by the field the client used.
struct ConstraintForm {
  const char* body_fields;  // merged into {"prompt": "x", ...}
  constraint::ConstraintKind kind;
  const char* text;         // the spec's text
  std::vector<std::string> choices;
  bool object_only;
  bool flexible;
  const char* field;        // GenerationInput::constraint_field
};

TEST(OpenAiConstraintTest, EveryAcceptedForm) {
  using K = constraint::ConstraintKind;
  const std::vector<ConstraintForm> forms = {
      {R"("response_format": {"type": "json_object"})", K::kJson, "", {}, true, false, "response_format"},
      {R"("response_format": {"type": "json_schema", "json_schema": {"name": "p", "strict": true,
          "schema": {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}}}})",
       K::kJsonSchema, R"({"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}})", {},
       false, false, "response_format.json_schema.schema"},
      {R"("response_format": {"type": "json_schema", "json_schema": {"schema": true, "whitespace": "flexible"}})",
       K::kJsonSchema, "true", {}, false, true, "response_format.json_schema.schema"},
      {R"("structured_outputs": {"json": {"z": 1, "type": "array"}})", K::kJsonSchema, R"({"z": 1, "type": "array"})",
       {}, false, false, "structured_outputs.json"},
      {R"("structured_outputs": {"json": "{\"type\": \"string\"}", "whitespace": "flexible"})", K::kJsonSchema,
       R"({"type": "string"})", {}, false, true, "structured_outputs.json"},
      {R"("structured_outputs": {"regex": "[a-z]+", "whitespace": "flexible"})", K::kRegex, "[a-z]+", {}, false, false,
       "structured_outputs.regex"},
      {R"("structured_outputs": {"choice": ["yes", "no", ""]})", K::kChoice, "", {"yes", "no", ""}, false, false,
       "structured_outputs.choice"},
      {R"("structured_outputs": {"grammar": "root ::= \"a\""})", K::kGrammar, R"(root ::= "a")", {}, false, false,
       "structured_outputs.grammar"},
      {R"("structured_outputs": {"json_object": true, "whitespace": "compact"})", K::kJson, "", {}, true, false,
       "structured_outputs.json_object"},
      {R"("guided_json": {"type": "object"})", K::kJsonSchema, R"({"type": "object"})", {}, false, false,
       "guided_json"},
      {R"("guided_json": "{}")", K::kJsonSchema, "{}", {}, false, false, "guided_json"},
      {R"("guided_regex": "\\d+")", K::kRegex, R"(\d+)", {}, false, false, "guided_regex"},
      {R"("guided_choice": ["a", "b"])", K::kChoice, "", {"a", "b"}, false, false, "guided_choice"},
      {R"("guided_grammar": "root ::= [0-9]")", K::kGrammar, "root ::= [0-9]", {}, false, false, "guided_grammar"},
      {R"("json_schema": {"type":"object","properties":{"y":{},"x":{}}})", K::kJsonSchema,
       R"({"type":"object","properties":{"y":{},"x":{}}})", {}, false, false, "json_schema"},
      {R"("grammar": "root ::= \"b\"")", K::kGrammar, R"(root ::= "b")", {}, false, false, "grammar"},
      // Another form set to null or text-only beside one: still one constraint.
      {R"("response_format": {"type": "text"}, "guided_regex": "a", "guided_json": null)", K::kRegex, "a", {}, false,
       false, "guided_regex"},
  };
  for (OpenAiEndpoint e : {OpenAiEndpoint::kCompletions, OpenAiEndpoint::kChatCompletions}) {
    for (const ConstraintForm& f : forms) {
      const std::string body = e == OpenAiEndpoint::kCompletions
                                   ? absl::StrCat(R"({"prompt": "x", )", f.body_fields, "}")
                                   : absl::StrCat(R"({"messages": [], )", f.body_fields, "}");
      SCOPED_TRACE(body);
      const OpenAiRequest r = Parse(e, body);
      ASSERT_TRUE(r.input.constraint.has_value());
      const constraint::ConstraintSpec& spec = *r.input.constraint;
      EXPECT_EQ(spec.kind, f.kind);
      EXPECT_EQ(spec.text, f.text);
      EXPECT_EQ(spec.choices, f.choices);
      EXPECT_EQ(spec.object_only, f.object_only);
      EXPECT_EQ(spec.whitespace_flexible, f.flexible);
      EXPECT_EQ(r.input.constraint_field, f.field);
    }
  }
  // No constraint: none of the fields, or response_format text.
  EXPECT_FALSE(Parse(OpenAiEndpoint::kCompletions, R"({"prompt": "x"})").input.constraint.has_value());
  EXPECT_FALSE(Parse(OpenAiEndpoint::kCompletions, R"({"prompt": "x", "response_format": {"type": "text"}})")
                   .input.constraint.has_value());
  EXPECT_FALSE(Parse(OpenAiEndpoint::kCompletions, R"({"prompt": "x", "structured_outputs": {"json_object": false,
                     "regex": null, "json": "{}"}, "structured_outputs": null})")
                   .input.constraint.has_value());
}

// The schema's text is the client's, key order and all (the output's property order
// follows it), even where the parsed body would sort the keys.
TEST(OpenAiConstraintTest, SchemaTextKeepsTheClientsKeyOrder) {
  const std::string schema =
      R"({"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"},)"
      R"("mid":{"enum":["b","a"]}},"required":["zeta","alpha"]})";
  const OpenAiRequest r = Parse(OpenAiEndpoint::kChatCompletions,
                                absl::StrCat(R"({"response_format": {"json_schema": {"schema": )", schema,
                                             R"(, "name": "n"}, "type": "json_schema"}, "messages": []})"));
  ASSERT_TRUE(r.input.constraint.has_value());
  EXPECT_EQ(r.input.constraint->text, schema);
}

TEST(OpenAiConstraintTest, RawJsonValue) {
  auto raw = [](std::string_view text, std::vector<std::string_view> path) {
    std::optional<std::string_view> v = RawJsonValue(text, path);
    return v.has_value() ? std::string(*v) : std::string("<none>");
  };
  EXPECT_EQ(raw(R"({"a": {"b": [1, {"c": "}"}], "d": 2}})", {"a", "b"}), R"([1, {"c": "}"}])");
  EXPECT_EQ(raw(R"({"a": {"b": [1, {"c": "}"}], "d": 2}})", {"a", "d"}), "2");
  EXPECT_EQ(raw(R"( { "a" : "q\"}" , "b":true } )", {"a"}), R"("q\"}")");
  EXPECT_EQ(raw(R"({"a": 1, "a": {"x": null}})", {"a"}), R"({"x": null})");  // the last, as the parser keeps
  EXPECT_EQ(raw(R"({"s\u0063hema": {"k": 1}})", {"schema"}), R"({"k": 1})");  // escaped key
  EXPECT_EQ(raw("\xEF\xBB\xBF{\"a\": -1.5e3}", {"a"}), "-1.5e3");              // byte order mark
  EXPECT_EQ(raw(R"({"a": {"b": 1}})", {"a", "c"}), "<none>");
  EXPECT_EQ(raw(R"({"a": [1]})", {"a", "b"}), "<none>");
  EXPECT_EQ(raw(R"([{"a": 1}])", {"a"}), "<none>");
  EXPECT_EQ(raw(R"({"a": 1})", {}), "<none>");
  // Deep nesting costs the scan no stack.
  const std::string deep = absl::StrCat(R"({"x": )", std::string(200000, '['), std::string(200000, ']'), "}");
  EXPECT_EQ(raw(deep, {"x"}).size(), 400000u);
}

// Each bad constraint: INVALID_ARGUMENT, HTTP 400, the field named as "param" and leading
// the message.
TEST(OpenAiConstraintTest, BadConstraintsNameTheField) {
  struct Case {
    const char* fields;
    const char* param;
    const char* message;  // a part of the message
  };
  const Case cases[] = {
      {R"("response_format": "json")", "response_format", "must be an object"},
      {R"("response_format": {})", "response_format.type", "is required: text, json_object or json_schema"},
      {R"("response_format": {"type": 1})", "response_format.type", "must be a string"},
      {R"("response_format": {"type": "xml"})", "response_format.type", "\"xml\" is not supported"},
      {R"("response_format": {"type": "json_schema"})", "response_format.json_schema", "must be an object"},
      {R"("response_format": {"type": "json_schema", "json_schema": {"name": "n"}})",
       "response_format.json_schema.schema", "is required"},
      {R"("response_format": {"type": "json_schema", "json_schema": {"schema": 3}})",
       "response_format.json_schema.schema", "must be a JSON Schema"},
      {R"("response_format": {"type": "json_schema", "json_schema": {"schema": "{}"}})",
       "response_format.json_schema.schema", "must be a JSON Schema (an object)"},
      {R"("response_format": {"type": "json_schema", "json_schema": {"schema": {}, "name": 1}})",
       "response_format.json_schema.name", "must be a string"},
      {R"("response_format": {"type": "json_schema", "json_schema": {"schema": {}, "strict": "yes"}})",
       "response_format.json_schema.strict", "must be a boolean"},
      {R"("response_format": {"type": "json_schema", "json_schema": {"schema": {}, "whitespace": "lots"}})",
       "response_format.json_schema.whitespace", "must be \"compact\""},
      {R"("structured_outputs": [])", "structured_outputs", "must be an object"},
      {R"("structured_outputs": {})", "structured_outputs", "must set one of json, regex, choice, grammar"},
      {R"("structured_outputs": {"json": 5})", "structured_outputs.json", "must be a JSON Schema"},
      {R"("structured_outputs": {"regex": 5})", "structured_outputs.regex", "must be a string"},
      {R"("structured_outputs": {"choice": "a|b"})", "structured_outputs.choice", "must be a list of strings"},
      {R"("structured_outputs": {"choice": ["a", 1]})", "structured_outputs.choice", "must be a list of strings"},
      {R"("structured_outputs": {"grammar": {}})", "structured_outputs.grammar", "must be a string"},
      {R"("structured_outputs": {"json_object": "yes"})", "structured_outputs.json_object", "must be a boolean"},
      {R"("structured_outputs": {"structural_tag": "{}"})", "structured_outputs.structural_tag",
       "is not supported"},
      {R"("structured_outputs": {"regex": "a", "whitespace": true})", "structured_outputs.whitespace",
       "must be \"compact\""},
      {R"("guided_json": 1)", "guided_json", "must be a JSON Schema"},
      {R"("guided_regex": ["a"])", "guided_regex", "must be a string"},
      {R"("guided_choice": "a")", "guided_choice", "must be a list of strings"},
      {R"("guided_grammar": 1)", "guided_grammar", "must be a string"},
      {R"("json_schema": "{}")", "json_schema", "must be a JSON Schema (an object)"},
      {R"("grammar": ["root"])", "grammar", "must be a string"},
      // Two constraints: both named.
      {R"("response_format": {"type": "json_object"}, "guided_regex": "a")", "response_format",
       "response_format and guided_regex both constrain the output"},
      {R"("structured_outputs": {"json": {}, "regex": "a"})", "structured_outputs.json",
       "structured_outputs.json and structured_outputs.regex both constrain the output"},
      {R"("json_schema": {}, "grammar": "root ::= \"a\"")", "json_schema",
       "json_schema and grammar both constrain the output"},
      {R"("guided_choice": ["a"], "structured_outputs": {"choice": ["a"]})", "structured_outputs.choice",
       "structured_outputs.choice and guided_choice both constrain the output"},
  };
  for (const Case& c : cases) {
    const std::string body = absl::StrCat(R"({"prompt": "x", )", c.fields, "}");
    absl::StatusOr<OpenAiRequest> r = ParseOpenAiRequest(OpenAiEndpoint::kCompletions, body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << body;
    const HttpError e = ToHttpError(r.status());
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.body["error"]["param"], c.param) << body << " " << e.body;
    const std::string message = e.body["error"]["message"];
    EXPECT_EQ(message.rfind(c.param, 0), 0u) << body << ": " << message;
    EXPECT_NE(message.find(c.message), std::string::npos) << body << ": " << message;
  }
}

}  // namespace
}  // namespace llmserve
