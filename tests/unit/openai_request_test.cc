// ParseOpenAiRequest: OpenAI request bodies become the GenerationInput a gRPC request also
// becomes, with OpenAI's names (fields, null as absent, prompt forms, chat content parts),
// and bad bodies are INVALID_ARGUMENT naming the field; ToHttpError's statuses and error
// objects. (Values out of range are request_fields_test's: both protocols, one check.)
#include "server/openai_request.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/http_status.h"

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
      {kC, R"({"prompt": "x", "response_format": {"type": "json_object"}})", "response_format"},
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

}  // namespace
}  // namespace llmserve
