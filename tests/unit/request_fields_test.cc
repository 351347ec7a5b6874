// One check, two protocols (issue 44): every field the validation refuses, sent as the same
// bad request through both front ends' real request paths,
//
//   gRPC: wire bytes ─ParseRequest─ FromGenerateRequest ─ToEngineRequest─ ToGrpcStatus   (GenerateReactor)
//   HTTP: JSON body ─ParseOpenAiRequest─────────────────ToEngineRequest─ ToHttpError    (OpenAiService)
//
// is refused by both (INVALID_ARGUMENT / 400) with the same check, each message leading
// with the caller's own name for the field ("text must be non-empty" / "prompt must be
// non-empty"), and HTTP's "param" naming the OpenAI field. The table is the list of checks:
// a RequestField without a row fails FieldsWithoutARow.
#include <cmath>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "model/chat/chat_prompt.h"
#include "nlohmann/json.hpp"
#include "scheduler/constraint_vocabulary.h"
#include "server/generation_input.h"
#include "server/http_status.h"
#include "server/openai_request.h"
#include "server/proto_wire.h"
#include "server/request_convert.h"
#include "server/request_fields.h"
#include "server/status_convert.h"
#include "tests/util/fake_engine_model.h"

namespace llmserve {
namespace {

namespace v1 = ::llmserve::v1;
using json = nlohmann::json;
using F = RequestField;

constexpr int32_t kVocab = 64;  // MakeTinyTokenizer's
constexpr int32_t kContext = 256;

// Plain turns; content "raise" makes the template raise, "big" drives it over its output cap.
constexpr char kTemplate[] =
    "{% for m in messages %}{% if m.content == 'raise' %}{{ raise_exception('no raising here') }}{% endif %}"
    "{% if m.content == 'big' %}{% for i in range(5000) %}xx{% endfor %}{% endif %}"
    "{{ m.role }} {{ m.content }}\n{% endfor %}";

const Tokenizer& Tiny() {
  static const std::unique_ptr<Tokenizer> tok = testing::MakeTinyTokenizer();
  return *tok;
}

const ChatPrompter& Prompter() {
  static const std::unique_ptr<ChatPrompter> p = [] {
    chat::TemplateLimits caps;
    caps.max_output_bytes = 4096;
    auto made = ChatPrompter::Create(kTemplate, "test", Tiny(), caps);
    EXPECT_TRUE(made.ok()) << made.status();
    return made.ok() ? *std::move(made) : nullptr;
  }();
  return *p;
}

// Constraints compiled against the tiny vocabulary (EOS 2), as an engine's cache.
constraint::ConstraintCache& Constraints() {
  static constraint::ConstraintCache* cache = [] {
    auto vocab = ConstraintVocabulary(Tiny(), {2});
    EXPECT_TRUE(vocab.ok()) << vocab.status();
    return new constraint::ConstraintCache(*vocab, constraint::CompileLimits(), 16);
  }();
  return *cache;
}

RequestLimits BaseLimits() {
  RequestLimits l;
  l.vocab_size = kVocab;
  l.max_context = kContext;
  l.chat = &Prompter();
  l.constraints = &Constraints();
  return l;
}

// Which endpoint (and which gRPC input) a row's base request is.
enum class Api { kCompletions, kChat };

struct Row {
  const char* name;
  RequestField field;  // the field the check is about
  Api api;
  std::function<void(v1::GenerateRequest&)> grpc;  // applied to the base gRPC request
  json http;                                       // merge-patched into the base body
  const char* grpc_name;                           // the field as gRPC messages name it
  const char* http_name;                           // ... and OpenAI messages
  // The message with "{}" for the field's name; `exact` false: a part of it.
  const char* message;
  bool exact = true;
  const char* http_param = nullptr;  // OpenAI's "param"; null: http_name
  // What JSON cannot carry (invalid UTF-8: the JSON parser refuses it first) or HTTP
  // takes from elsewhere (the X-Request-Id header), set on the parsed input instead.
  std::function<void(GenerationInput&)> http_inject = nullptr;
  std::function<void(RequestLimits&)> limits = nullptr;
  // Over HTTP the parser refuses it first, in its own words (the check cannot be the same).
  const char* http_message = nullptr;
};

v1::GenerateRequest BaseGrpc(Api api) {
  v1::GenerateRequest r;
  if (api == Api::kCompletions) {
    r.set_text("the cat");
  } else {
    v1::ChatMessage* m = r.mutable_chat()->add_messages();
    m->set_role("user");
    m->set_content("the cat");
  }
  return r;
}

json BaseHttp(Api api) {
  if (api == Api::kCompletions) return {{"prompt", "the cat"}};
  return {{"messages", json::array({{{"role", "user"}, {"content", "the cat"}}})}};
}

// n copies of `one`.
json Repeat(const json& one, int n) {
  json a = json::array();
  for (int i = 0; i < n; ++i) a.push_back(one);
  return a;
}

std::vector<Row> Rows() {
  const Api kC = Api::kCompletions, kChat = Api::kChat;
  json many_bias = json::object();
  for (int i = 0; i < 1025; ++i) many_bias[std::to_string(i)] = 1;
  json many_messages = Repeat({{"role", "user"}, {"content", "x"}}, 1025);
  auto grpc_messages = [](int n, const char* role, const std::string& content) {
    return [=](v1::GenerateRequest& r) {
      r.mutable_chat()->clear_messages();
      for (int i = 0; i < n; ++i) {
        v1::ChatMessage* m = r.mutable_chat()->add_messages();
        m->set_role(role);
        m->set_content(content);
      }
    };
  };
  auto grpc_stops = [](std::vector<std::string> stops) {
    return [=](v1::GenerateRequest& r) {
      for (const std::string& s : stops) *r.add_stop() = s;
    };
  };
  return {
      // The prompt.
      {.name = "no input", .field = F::kInput, .api = kC, .grpc = [](auto& r) { r.clear_input(); },
       .http = {{"prompt", nullptr}}, .grpc_name = "input", .http_name = "prompt",
       .message = "{} is required: set text, tokens or chat", .http_message = "prompt is required"},
      {.name = "empty text", .field = F::kText, .api = kC, .grpc = [](auto& r) { r.set_text(""); },
       .http = {{"prompt", ""}}, .grpc_name = "text", .http_name = "prompt", .message = "{} must be non-empty"},
      {.name = "text over --max-prompt-bytes", .field = F::kText, .api = kC, .grpc = [](auto&) {},
       .http = json::object(),
       .grpc_name = "text", .http_name = "prompt",
       .message = "{} must be at most 5 bytes (the server's --max-prompt-bytes), got 7",
       .limits = [](RequestLimits& l) { l.max_prompt_bytes = 5; }},
      {.name = "text not UTF-8", .field = F::kText, .api = kC, .grpc = [](auto& r) { r.set_text("ab\xC3"); },
       .http = json::object(), .grpc_name = "text", .http_name = "prompt", .message = "{} must be valid UTF-8",
       .http_inject = [](GenerationInput& in) { in.text = "ab\xC3"; }},
      {.name = "text outside the model's vocabulary", .field = F::kText, .api = kC, .grpc = [](auto&) {},
       .http = json::object(), .grpc_name = "text", .http_name = "prompt",
       .message = "{} encodes to token ", .exact = false, .limits = [](RequestLimits& l) { l.vocab_size = 2; }},
      {.name = "empty token list", .field = F::kTokenIds, .api = kC, .grpc = [](auto& r) { r.mutable_tokens(); },
       .http = {{"prompt", json::array()}}, .grpc_name = "tokens.ids", .http_name = "prompt",
       .message = "{} must be non-empty"},
      {.name = "token id outside the vocabulary", .field = F::kTokenIds, .api = kC,
       .grpc = [](auto& r) { r.mutable_tokens()->add_ids(5); r.mutable_tokens()->add_ids(64); },
       .http = {{"prompt", {5, 64}}}, .grpc_name = "tokens.ids", .http_name = "prompt",
       .message = "{}[1] must be in [0, 64), got 64"},
      {.name = "prompt fills the context", .field = F::kTokenIds, .api = kC,
       .grpc = [](auto& r) { for (int i = 0; i < kContext; ++i) r.mutable_tokens()->add_ids(5); },
       .http = {{"prompt", std::vector<int>(kContext, 5)}}, .grpc_name = "tokens.ids", .http_name = "prompt",
       .message = "prompt (256 tokens) leaves no room to generate in the context length (256)"},
      // The chat.
      {.name = "no messages", .field = F::kMessages, .api = kChat, .grpc = grpc_messages(0, "user", "x"),
       .http = {{"messages", json::array()}}, .grpc_name = "chat.messages", .http_name = "messages",
       .message = "{} must be non-empty"},
      {.name = "too many messages", .field = F::kMessages, .api = kChat, .grpc = grpc_messages(1025, "user", "x"),
       .http = {{"messages", many_messages}}, .grpc_name = "chat.messages", .http_name = "messages",
       .message = "{} must have at most 1024 entries, got 1025"},
      {.name = "empty role", .field = F::kMessages, .api = kChat, .grpc = grpc_messages(1, "", "x"),
       .http = {{"messages", Repeat({{"role", ""}, {"content", "x"}}, 1)}}, .grpc_name = "chat.messages",
       .http_name = "messages", .message = "{}[0].role must be non-empty"},
      {.name = "content not UTF-8", .field = F::kMessages, .api = kChat, .grpc = grpc_messages(2, "user", "\xE2\x82"),
       .http = {{"messages", Repeat({{"role", "user"}, {"content", "x"}}, 2)}}, .grpc_name = "chat.messages",
       .http_name = "messages", .message = "{}[0].content must be valid UTF-8",
       .http_inject = [](GenerationInput& in) { in.chat.messages[0].content = "\xE2\x82"; }},
      {.name = "tools not UTF-8", .field = F::kTools, .api = kChat,
       .grpc = [](auto& r) { r.mutable_chat()->set_tools_json("[\"\xFF\"]"); }, .http = json::object(),
       .grpc_name = "chat.tools_json", .http_name = "tools", .message = "{} must be valid UTF-8",
       .http_inject = [](GenerationInput& in) { in.chat.tools_json = "[\"\xFF\"]"; }},
      {.name = "chat over --max-prompt-bytes", .field = F::kChatText, .api = kChat, .grpc = [](auto&) {},
       .http = json::object(), .grpc_name = "chat (roles, contents and tools_json)",
       .http_name = "messages (roles, contents and tools)",
       .message = "{} must be at most 5 bytes (the server's --max-prompt-bytes), got 11", .http_param = "messages",
       .limits = [](RequestLimits& l) { l.max_prompt_bytes = 5; }},
      {.name = "template raises", .field = F::kRenderedChat, .api = kChat, .grpc = grpc_messages(1, "user", "raise"),
       .http = {{"messages", Repeat({{"role", "user"}, {"content", "raise"}}, 1)}}, .grpc_name = "chat",
       .http_name = "messages", .message = "no raising here", .exact = false},
      // The renderer's caps: the request's fault (INVALID_ARGUMENT), not the server's load.
      {.name = "template over its output cap", .field = F::kRenderedChat, .api = kChat,
       .grpc = grpc_messages(1, "user", "big"),
       .http = {{"messages", Repeat({{"role", "user"}, {"content", "big"}}, 1)}}, .grpc_name = "chat",
       .http_name = "messages", .message = "max_output_bytes (4096)", .exact = false},
      {.name = "rendered chat outside the vocabulary", .field = F::kRenderedChat, .api = kChat, .grpc = [](auto&) {},
       .http = json::object(), .grpc_name = "the rendered chat", .http_name = "the rendered chat",
       .message = "{} encodes to token ", .exact = false, .http_param = "messages",
       .limits = [](RequestLimits& l) { l.vocab_size = 2; }},
      // Sampling.
      {.name = "temperature", .field = F::kTemperature, .api = kC, .grpc = [](auto& r) { r.set_temperature(101); },
       .http = {{"temperature", 101}}, .grpc_name = "temperature", .http_name = "temperature",
       .message = "{} must be in [0, 100] (0 = greedy), got 101"},
      {.name = "top_k", .field = F::kTopK, .api = kC, .grpc = [](auto& r) { r.set_top_k(-3); },
       .http = {{"top_k", -3}}, .grpc_name = "top_k", .http_name = "top_k",
       .message = "{} must be >= 0 (0 = all tokens), got -3"},
      {.name = "top_p", .field = F::kTopP, .api = kC, .grpc = [](auto& r) { r.set_top_p(1.5f); },
       .http = {{"top_p", 1.5}}, .grpc_name = "top_p", .http_name = "top_p",
       .message = "{} must be in (0, 1], got 1.5"},
      {.name = "min_p", .field = F::kMinP, .api = kC, .grpc = [](auto& r) { r.set_min_p(-0.5f); },
       .http = {{"min_p", -0.5}}, .grpc_name = "min_p", .http_name = "min_p",
       .message = "{} must be in [0, 1], got -0.5"},
      {.name = "repetition_penalty", .field = F::kRepetitionPenalty, .api = kC,
       .grpc = [](auto& r) { r.set_repetition_penalty(0); }, .http = {{"repetition_penalty", 0}},
       .grpc_name = "repetition_penalty", .http_name = "repetition_penalty",
       .message = "{} must be a finite number > 0 (1 = off), got 0"},
      {.name = "presence_penalty", .field = F::kPresencePenalty, .api = kC,
       .grpc = [](auto& r) { r.set_presence_penalty(3); }, .http = {{"presence_penalty", 3}},
       .grpc_name = "presence_penalty", .http_name = "presence_penalty", .message = "{} must be in [-2, 2], got 3"},
      {.name = "frequency_penalty", .field = F::kFrequencyPenalty, .api = kChat,
       .grpc = [](auto& r) { r.set_frequency_penalty(-2.5f); }, .http = {{"frequency_penalty", -2.5}},
       .grpc_name = "frequency_penalty", .http_name = "frequency_penalty",
       .message = "{} must be in [-2, 2], got -2.5"},
      {.name = "logprobs", .field = F::kLogprobs, .api = kC, .grpc = [](auto& r) { r.set_logprobs(21); },
       .http = {{"logprobs", 21}}, .grpc_name = "logprobs", .http_name = "logprobs",
       .message = "{} must be in [0, 20], got 21"},
      {.name = "top_logprobs", .field = F::kLogprobs, .api = kChat, .grpc = [](auto& r) { r.set_logprobs(21); },
       .http = {{"logprobs", true}, {"top_logprobs", 21}}, .grpc_name = "logprobs", .http_name = "top_logprobs",
       .message = "{} must be in [0, 20], got 21"},
      {.name = "logit_bias count", .field = F::kLogitBias, .api = kC,
       .grpc = [](auto& r) { for (int i = 0; i < 1025; ++i) (*r.mutable_logit_bias())[i] = 1; },
       .http = {{"logit_bias", many_bias}}, .grpc_name = "logit_bias", .http_name = "logit_bias",
       .message = "{} must have at most 1024 entries, got 1025"},
      {.name = "logit_bias id", .field = F::kLogitBias, .api = kC,
       .grpc = [](auto& r) { (*r.mutable_logit_bias())[70] = 1; }, .http = {{"logit_bias", {{"70", 1}}}},
       .grpc_name = "logit_bias", .http_name = "logit_bias", .message = "{} must name token ids in [0, 64), got 70"},
      {.name = "logit_bias value", .field = F::kLogitBias, .api = kChat,
       .grpc = [](auto& r) { (*r.mutable_logit_bias())[5] = 150; }, .http = {{"logit_bias", {{"5", 150}}}},
       .grpc_name = "logit_bias", .http_name = "logit_bias",
       .message = "{} must be in [-100, 100], got 150 for token 5"},
      // Stopping.
      {.name = "max_tokens < 1", .field = F::kMaxTokens, .api = kC, .grpc = [](auto& r) { r.set_max_tokens(0); },
       .http = {{"max_tokens", 0}}, .grpc_name = "max_tokens", .http_name = "max_tokens",
       .message = "{} must be >= 1, got 0"},
      {.name = "max_completion_tokens < 1", .field = F::kMaxTokens, .api = kChat,
       .grpc = [](auto& r) { r.set_max_tokens(0); }, .http = {{"max_completion_tokens", 0}}, .grpc_name = "max_tokens",
       .http_name = "max_completion_tokens", .message = "{} must be >= 1, got 0"},
      {.name = "chat max_tokens < 1", .field = F::kMaxTokens, .api = kChat,
       .grpc = [](auto& r) { r.set_max_tokens(-4); },
       .http = {{"max_tokens", -4}}, .grpc_name = "max_tokens", .http_name = "max_tokens",
       .message = "{} must be >= 1, got -4"},
      {.name = "max_tokens over the context", .field = F::kMaxTokens, .api = kC,
       .grpc = [](auto& r) { r.mutable_tokens()->add_ids(5); r.mutable_tokens()->add_ids(6); r.set_max_tokens(255); },
       .http = {{"prompt", {5, 6}}, {"max_tokens", 255}}, .grpc_name = "max_tokens", .http_name = "max_tokens",
       .message = "prompt (2 tokens) + {} (255) = 257 exceeds the context length (256)"},
      {.name = "max_completion_tokens over the context", .field = F::kMaxTokens, .api = kChat,
       .grpc = [](auto& r) { r.set_max_tokens(300); }, .http = {{"max_completion_tokens", 300}},
       .grpc_name = "max_tokens", .http_name = "max_completion_tokens", .message = "+ {} (300) = ", .exact = false},
      {.name = "too many stops", .field = F::kStop, .api = kC, .grpc = grpc_stops(std::vector<std::string>(17, "x")),
       .http = {{"stop", std::vector<std::string>(17, "x")}}, .grpc_name = "stop", .http_name = "stop",
       .message = "{} must have at most 16 strings, got 17"},
      {.name = "empty stop", .field = F::kStop, .api = kC, .grpc = grpc_stops({"a", ""}),
       .http = {{"stop", json::array({"a", ""})}},
       .grpc_name = "stop", .http_name = "stop", .message = "{}[1] must be non-empty"},
      {.name = "long stop", .field = F::kStop, .api = kChat, .grpc = grpc_stops({std::string(257, 'z')}),
       .http = {{"stop", std::string(257, 'z')}}, .grpc_name = "stop", .http_name = "stop",
       .message = "{}[0] must be at most 256 bytes, got 257"},
      {.name = "stop not UTF-8", .field = F::kStop, .api = kC, .grpc = grpc_stops({"\xFF"}), .http = {{"stop", "x"}},
       .grpc_name = "stop", .http_name = "stop", .message = "{}[0] must be valid UTF-8",
       .http_inject = [](GenerationInput& in) { in.stop[0] = "\xFF"; }},
      {.name = "stop token id", .field = F::kStopTokenIds, .api = kC,
       .grpc = [](auto& r) { r.add_stop_token_ids(3); r.add_stop_token_ids(64); },
       .http = {{"stop_token_ids", {3, 64}}},
       .grpc_name = "stop_token_ids", .http_name = "stop_token_ids", .message = "{}[1] must be in [0, 64), got 64"},
      {.name = "negative stop token id", .field = F::kStopTokenIds, .api = kChat,
       .grpc = [](auto& r) { r.add_stop_token_ids(-2); }, .http = {{"stop_token_ids", {-2}}},
       .grpc_name = "stop_token_ids", .http_name = "stop_token_ids", .message = "{}[0] must be in [0, 64), got -2"},
      // Identity. HTTP's id is the X-Request-Id header, which OpenAiService drops when
      // over the bound; the row checks what the validation would call it.
      {.name = "request_id", .field = F::kRequestId, .api = kC,
       .grpc = [](auto& r) { r.set_request_id(std::string(129, 'r')); }, .http = json::object(),
       .grpc_name = "request_id", .http_name = "X-Request-Id", .message = "{} must be at most 128 bytes, got 129",
       .http_inject = [](GenerationInput& in) { in.request_id = std::string(129, 'r'); }},
      {.name = "cache_salt", .field = F::kCacheSalt, .api = kChat,
       .grpc = [](auto& r) { r.set_cache_salt(std::string(257, 's')); },
       .http = {{"cache_salt", std::string(257, 's')}},
       .grpc_name = "cache_salt", .http_name = "cache_salt", .message = "{} must be at most 256 bytes, got 257"},
      // The output constraint: named by the field the caller used (each HTTP dialect's own).
      {.name = "schema keyword", .field = F::kConstraint, .api = kC,
       .grpc = [](auto& r) { r.mutable_constraint()->set_json_schema(R"({"multipleOf":3,"type":"number"})"); },
       .http = {{"response_format",
                 {{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", {{"type", "number"},
                                                                                      {"multipleOf", 3}}}}}}}},
       .grpc_name = "constraint.json_schema", .http_name = "response_format.json_schema.schema",
       .message = "{}: unsupported keyword \"multipleOf\" at ", .exact = false},
      {.name = "schema property keyword", .field = F::kConstraint, .api = kChat,
       .grpc = [](auto& r) {
         r.mutable_constraint()->set_json_schema(R"({"properties":{"a":{"multipleOf":2}},"type":"object"})");
       },
       .http = {{"structured_outputs", {{"json", {{"type", "object"}, {"properties", {{"a", {{"multipleOf", 2}}}}}}}}}},
       .grpc_name = "constraint.json_schema", .http_name = "structured_outputs.json",
       .message = "{}: unsupported keyword \"multipleOf\" at /properties/a", .exact = false},
      {.name = "regex syntax", .field = F::kConstraint, .api = kChat,
       .grpc = [](auto& r) { r.mutable_constraint()->set_regex("(ab"); }, .http = {{"guided_regex", "(ab"}},
       .grpc_name = "constraint.regex", .http_name = "guided_regex", .message = "{}: regex: ", .exact = false},
      {.name = "no choices", .field = F::kConstraint, .api = kC,
       .grpc = [](auto& r) { r.mutable_constraint()->mutable_choice(); },
       .http = {{"structured_outputs", {{"choice", json::array()}}}}, .grpc_name = "constraint.choice.choices",
       .http_name = "structured_outputs.choice", .message = "{}: a choice constraint needs at least one choice"},
      {.name = "grammar without root", .field = F::kConstraint, .api = kC,
       .grpc = [](auto& r) { r.mutable_constraint()->set_grammar("start ::= \"a\""); },
       .http = {{"grammar", "start ::= \"a\""}}, .grpc_name = "constraint.grammar", .http_name = "grammar",
       .message = "{}: ", .exact = false},
      {.name = "schema not JSON", .field = F::kConstraint, .api = kC,
       .grpc = [](auto& r) { r.mutable_constraint()->set_json_schema("{nope"); },
       .http = {{"guided_json", "{nope"}}, .grpc_name = "constraint.json_schema", .http_name = "guided_json",
       .message = "{}: the JSON Schema is not valid JSON", .exact = false},
  };
}

// `message` with the field's name for "{}".
std::string Expand(const char* message, const char* name) { return absl::StrReplaceAll(message, {{"{}", name}}); }

absl::Status ViaGrpc(const Row& row, const RequestLimits& limits) {
  v1::GenerateRequest r = BaseGrpc(row.api);
  row.grpc(r);
  std::string wire;
  EXPECT_TRUE(r.SerializeToString(&wire));
  v1::GenerateRequest parsed;
  if (absl::Status s = ParseRequest(wire, &parsed); !s.ok()) return s;
  return ToEngineRequest(FromGenerateRequest(parsed), Tiny(), limits, "req-1").status();
}

absl::Status ViaHttp(const Row& row, const RequestLimits& limits) {
  json body = BaseHttp(row.api);
  body.merge_patch(row.http);
  const OpenAiEndpoint endpoint =
      row.api == Api::kChat ? OpenAiEndpoint::kChatCompletions : OpenAiEndpoint::kCompletions;
  absl::StatusOr<OpenAiRequest> parsed = ParseOpenAiRequest(endpoint, body.dump());
  if (!parsed.ok()) return parsed.status();
  if (row.http_inject) row.http_inject(parsed->input);
  return ToEngineRequest(parsed->input, Tiny(), limits, "http-1").status();
}

TEST(RequestFieldsTest, EveryCheckSpeaksEachProtocolsWords) {
  for (const Row& row : Rows()) {
    SCOPED_TRACE(row.name);
    RequestLimits limits = BaseLimits();
    if (row.limits) row.limits(limits);

    const grpc::Status g = ToGrpcStatus(ViaGrpc(row, limits));
    EXPECT_EQ(g.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << g.error_message();
    const std::string want_grpc = Expand(row.message, row.grpc_name);
    if (row.exact) {
      EXPECT_EQ(g.error_message(), want_grpc);
    } else {
      EXPECT_NE(g.error_message().find(want_grpc), std::string::npos) << g.error_message();
    }

    const absl::Status h = ViaHttp(row, limits);
    EXPECT_EQ(h.code(), absl::StatusCode::kInvalidArgument) << h;
    const HttpError e = ToHttpError(h);
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.body["error"]["type"], "invalid_request_error");
    const std::string http_message = e.body["error"]["message"];
    EXPECT_EQ(e.body["error"]["param"], row.http_param != nullptr ? row.http_param : row.http_name) << e.body;
    if (row.http_message != nullptr) {
      EXPECT_EQ(http_message, row.http_message);
      continue;
    }
    const std::string want_http = Expand(row.message, row.http_name);
    if (row.exact) {
      EXPECT_EQ(http_message, want_http);
    } else {
      EXPECT_NE(http_message.find(want_http), std::string::npos) << http_message;
    }
    // The same check: the gRPC message with the OpenAI name is the HTTP message.
    std::string renamed = g.error_message();
    const bool named = std::string_view(row.message).find("{}") != std::string_view::npos;
    if (const size_t at = renamed.find(row.grpc_name); named && at != std::string::npos) {
      renamed.replace(at, std::string_view(row.grpc_name).size(), row.http_name);
    }
    EXPECT_EQ(renamed, http_message);
  }
}

TEST(RequestFieldsTest, FieldsWithoutARow) {
  std::set<RequestField> covered;
  for (const Row& row : Rows()) covered.insert(row.field);
  for (size_t i = 0; i < kNumRequestFields; ++i) {
    EXPECT_TRUE(covered.count(static_cast<RequestField>(i)) == 1) << "RequestField " << i << " has no row";
  }
}

// Every field has a name in every table (an entry left empty would lead a message with "").
TEST(RequestFieldsTest, EveryTableNamesEveryField) {
  const FieldNames* tables[] = {&GrpcFieldNames(), &OpenAiCompletionsFieldNames(), &OpenAiChatFieldNames(false),
                                &OpenAiChatFieldNames(true)};
  for (const FieldNames* t : tables) {
    for (size_t i = 0; i < kNumRequestFields; ++i) {
      EXPECT_FALSE((*t)[static_cast<RequestField>(i)].name.empty()) << i;
      EXPECT_FALSE((*t)[static_cast<RequestField>(i)].param.empty()) << i;
    }
  }
}

// A constraint over a compile bound: the request's fault, so HTTP answers 400 (not 429's
// "retry later"), while gRPC keeps RESOURCE_EXHAUSTED; both name the field and the bound,
// and neither counts as a full queue in request_failure_total.
TEST(RequestFieldsTest, ConstraintBoundsAreTheRequestsFault) {
  auto vocab = ConstraintVocabulary(Tiny(), {2});
  ASSERT_TRUE(vocab.ok()) << vocab.status();
  constraint::CompileLimits bounds;
  bounds.max_choices = 3;
  bounds.max_text_bytes = 64;
  constraint::ConstraintCache small(*vocab, bounds, 4);
  RequestLimits limits = BaseLimits();
  limits.constraints = &small;
  struct Case {
    std::function<void(v1::GenerateRequest&)> grpc;
    json http;
    const char* grpc_name;
    const char* http_name;
    const char* bound;  // a part of the message
  };
  const Case cases[] = {
      {[](auto& r) {
         for (const char* c : {"a", "b", "c", "d"}) r.mutable_constraint()->mutable_choice()->add_choices(c);
       },
       {{"guided_choice", {"a", "b", "c", "d"}}}, "constraint.choice.choices", "guided_choice", "at most 3 choices"},
      {[](auto& r) { r.mutable_constraint()->set_regex(std::string(100, 'a')); },
       {{"structured_outputs", {{"regex", std::string(100, 'a')}}}}, "constraint.regex", "structured_outputs.regex",
       "the limit is 64"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.http_name);
    v1::GenerateRequest r = BaseGrpc(Api::kCompletions);
    c.grpc(r);
    const absl::Status g = ToEngineRequest(FromGenerateRequest(r), Tiny(), limits, "x").status();
    EXPECT_EQ(ToGrpcStatus(g).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << g;
    EXPECT_EQ(g.message().rfind(absl::StrCat(c.grpc_name, ": "), 0), 0u) << g;
    EXPECT_NE(g.message().find(c.bound), absl::string_view::npos) << g;
    EXPECT_EQ(RefusalCode(g), absl::StatusCode::kInvalidArgument);

    json body = BaseHttp(Api::kCompletions);
    body.merge_patch(c.http);
    auto parsed = ParseOpenAiRequest(OpenAiEndpoint::kCompletions, body.dump());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    const absl::Status h = ToEngineRequest(parsed->input, Tiny(), limits, "x").status();
    const HttpError e = ToHttpError(h);
    EXPECT_EQ(e.status, 400) << e.body;
    EXPECT_EQ(e.body["error"]["type"], "invalid_request_error");
    EXPECT_EQ(e.body["error"]["param"], c.http_name);
    const std::string message = e.body["error"]["message"];
    EXPECT_EQ(message.rfind(absl::StrCat(c.http_name, ": "), 0), 0u) << message;
    EXPECT_NE(message.find(c.bound), std::string::npos) << message;
  }
  // The queue's RESOURCE_EXHAUSTED is still 429 and counted as such.
  EXPECT_EQ(ToHttpError(absl::ResourceExhaustedError("the waiting queue is full")).status, 429);
  EXPECT_EQ(RefusalCode(absl::ResourceExhaustedError("full")), absl::StatusCode::kResourceExhausted);
}

// An engine without a tokenizer has no constraint cache: a constraint is refused up front.
TEST(RequestFieldsTest, ConstraintsNeedATokenizer) {
  RequestLimits limits = BaseLimits();
  limits.constraints = nullptr;
  v1::GenerateRequest r = BaseGrpc(Api::kCompletions);
  r.mutable_constraint()->set_regex("a+");
  const absl::Status g = ToEngineRequest(FromGenerateRequest(r), Tiny(), limits, "x").status();
  EXPECT_EQ(g.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(g.message().find("constraints need a tokenizer"), absl::string_view::npos) << g;
  EXPECT_EQ(ToHttpError(g).status, 400);
  // Without a constraint the same limits are fine.
  EXPECT_TRUE(ToEngineRequest(FromGenerateRequest(BaseGrpc(Api::kCompletions)), Tiny(), limits, "x").ok());
}

// A valid request goes through both paths to the same engine request.
TEST(RequestFieldsTest, TheSameRequestBothWays) {
  v1::GenerateRequest r = BaseGrpc(Api::kCompletions);
  r.set_max_tokens(5);
  r.set_temperature(0.5f);
  *r.add_stop() = "sat";
  (*r.mutable_logit_bias())[7] = -3;
  auto grpc_side = ToEngineRequest(FromGenerateRequest(r), Tiny(), BaseLimits(), "x");
  json body = BaseHttp(Api::kCompletions);
  body.merge_patch({{"max_tokens", 5}, {"temperature", 0.5}, {"stop", "sat"}, {"logit_bias", {{"7", -3}}}});
  auto parsed = ParseOpenAiRequest(OpenAiEndpoint::kCompletions, body.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto http_side = ToEngineRequest(parsed->input, Tiny(), BaseLimits(), "x");
  ASSERT_TRUE(grpc_side.ok()) << grpc_side.status();
  ASSERT_TRUE(http_side.ok()) << http_side.status();
  EXPECT_EQ(grpc_side->prompt, http_side->prompt);
  EXPECT_EQ(grpc_side->stop.max_tokens, http_side->stop.max_tokens);
  EXPECT_EQ(grpc_side->stop.stop_strings, http_side->stop.stop_strings);
  EXPECT_EQ(grpc_side->sampling.temperature, http_side->sampling.temperature);
  EXPECT_EQ(grpc_side->sampling.logit_bias, http_side->sampling.logit_bias);
  EXPECT_EQ(grpc_side->constraint, nullptr);

  // The same schema both ways: one compile, the same constraint (the cache's entry).
  const std::string schema = R"({"properties":{"b":{"type":"string"},"a":{"type":"integer"}},"type":"object"})";
  v1::GenerateRequest c = BaseGrpc(Api::kCompletions);
  c.mutable_constraint()->set_json_schema(schema);
  ConstraintCompileReport first, second;
  auto grpc_constrained = ToEngineRequest(FromGenerateRequest(c), Tiny(), BaseLimits(), "x", &first);
  ASSERT_TRUE(grpc_constrained.ok()) << grpc_constrained.status();
  auto parsed_constrained = ParseOpenAiRequest(
      OpenAiEndpoint::kCompletions,
      absl::StrCat(R"({"prompt": "the cat", "response_format": {"type": "json_schema", "json_schema": {"schema": )",
                   schema, "}}}"));
  ASSERT_TRUE(parsed_constrained.ok()) << parsed_constrained.status();
  auto http_constrained = ToEngineRequest(parsed_constrained->input, Tiny(), BaseLimits(), "x", &second);
  ASSERT_TRUE(http_constrained.ok()) << http_constrained.status();
  ASSERT_NE(grpc_constrained->constraint, nullptr);
  EXPECT_EQ(grpc_constrained->constraint, http_constrained->constraint);
  EXPECT_TRUE(first.attempted);
  EXPECT_EQ(first.kind, constraint::ConstraintKind::kJsonSchema);
  EXPECT_TRUE(second.attempted);
  EXPECT_TRUE(second.cache_hit);
}

}  // namespace
}  // namespace llmserve
