#include "server/openai_request.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "server/http_status.h"
#include "server/openai_constraint.h"

namespace llmserve {
namespace {

using json = nlohmann::json;

// INVALID_ARGUMENT "<field> <what>" naming the field.
absl::Status Bad(const std::string& field, const std::string& what) {
  return WithParam(absl::InvalidArgumentError(absl::StrCat(field, " ", what)), field);
}

// The field's value; null when absent or JSON null.
const json* Field(const json& body, const char* name) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

absl::Status GetBool(const json& body, const char* name, bool* out) {
  if (const json* v = Field(body, name)) {
    if (!v->is_boolean()) return Bad(name, "must be a boolean");
    *out = v->get<bool>();
  }
  return absl::OkStatus();
}

absl::Status GetString(const json& body, const char* name, std::string* out) {
  if (const json* v = Field(body, name)) {
    if (!v->is_string()) return Bad(name, "must be a string");
    *out = v->get<std::string>();
  }
  return absl::OkStatus();
}

// An int32 from a JSON integer; `field` names it in the error.
absl::Status ToInt32(const json& v, const std::string& field, int32_t* out) {
  if (!v.is_number_integer()) return Bad(field, "must be an integer");
  if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())
                             : (v.get<int64_t>() < std::numeric_limits<int32_t>::min() ||
                                v.get<int64_t>() > std::numeric_limits<int32_t>::max())) {
    return Bad(field, "must be a 32-bit integer");
  }
  *out = static_cast<int32_t>(v.get<int64_t>());
  return absl::OkStatus();
}

// Calls set(value) when the integer field is present.
template <class Set>
absl::Status GetInt(const json& body, const char* name, Set set) {
  if (const json* v = Field(body, name)) {
    int32_t x = 0;
    if (absl::Status s = ToInt32(*v, name, &x); !s.ok()) return s;
    set(x);
  }
  return absl::OkStatus();
}

// A JSON number as a float; beyond float's range it is +-inf (which every range refuses),
// never an out-of-range conversion.
float ToFloat(const json& v) {
  const double d = v.get<double>();
  if (std::fabs(d) > std::numeric_limits<float>::max()) return std::copysign(std::numeric_limits<float>::infinity(), d);
  return static_cast<float>(d);
}

// Calls set(value) when the number field is present.
template <class Set>
absl::Status GetFloat(const json& body, const char* name, Set set) {
  if (const json* v = Field(body, name)) {
    if (!v->is_number()) return Bad(name, "must be a number");
    set(ToFloat(*v));
  }
  return absl::OkStatus();
}

// Sampling, stopping and the other fields both endpoints share.
absl::Status ParseCommon(const json& body, OpenAiRequest* out) {
  GenerationInput& g = out->input;
  if (absl::Status s = GetString(body, "model", &out->model); !s.ok()) return s;
  if (absl::Status s = GetBool(body, "stream", &out->stream); !s.ok()) return s;
  if (const json* so = Field(body, "stream_options")) {
    if (!so->is_object()) return Bad("stream_options", "must be an object");
    if (!out->stream) return Bad("stream_options", "is only allowed when stream is true");
    if (absl::Status s = GetBool(*so, "include_usage", &out->include_usage); !s.ok()) {
      return Bad("stream_options.include_usage", "must be a boolean");
    }
  }
  if (const json* n = Field(body, "n")) {
    if (!n->is_number_integer() || n->get<int64_t>() != 1) {
      return Bad("n", "must be 1: llmserve returns one choice per request (send several requests instead)");
    }
  }
  absl::Status s = GetInt(body, "max_tokens", [&](int32_t v) { g.max_tokens = v; });
  if (s.ok()) s = GetFloat(body, "temperature", [&](float v) { g.temperature = v; });
  if (s.ok()) s = GetFloat(body, "top_p", [&](float v) { g.top_p = v; });
  if (s.ok()) s = GetInt(body, "top_k", [&](int32_t v) { g.top_k = v == -1 ? 0 : v; });  // vLLM: -1 = off
  if (s.ok()) s = GetFloat(body, "min_p", [&](float v) { g.min_p = v; });
  if (s.ok()) s = GetFloat(body, "presence_penalty", [&](float v) { g.presence_penalty = v; });
  if (s.ok()) s = GetFloat(body, "frequency_penalty", [&](float v) { g.frequency_penalty = v; });
  if (s.ok()) s = GetFloat(body, "repetition_penalty", [&](float v) { g.repetition_penalty = v; });
  if (!s.ok()) return s;
  if (const json* seed = Field(body, "seed")) {
    if (!seed->is_number_integer()) return Bad("seed", "must be an integer");
    // A negative seed is as good as any: its two's complement.
    g.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
  }
  if (const json* stop = Field(body, "stop")) {
    if (stop->is_string()) {
      g.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      for (const json& one : *stop) {
        if (!one.is_string()) return Bad("stop", "must be a string or a list of strings");
        g.stop.push_back(one.get<std::string>());
      }
    } else {
      return Bad("stop", "must be a string or a list of strings");
    }
  }
  if (const json* ids = Field(body, "stop_token_ids")) {
    if (!ids->is_array()) return Bad("stop_token_ids", "must be a list of token ids");
    for (const json& id : *ids) {
      int32_t x = 0;
      if (absl::Status e = ToInt32(id, "stop_token_ids", &x); !e.ok()) return e;
      g.stop_token_ids.push_back(x);
    }
  }
  if (const json* bias = Field(body, "logit_bias")) {
    if (!bias->is_object()) return Bad("logit_bias", "must be an object mapping token ids to biases");
    for (const auto& [key, value] : bias->items()) {
      int32_t id = 0;
      if (!absl::SimpleAtoi(key, &id)) {
        return Bad("logit_bias", absl::StrCat("keys must be token ids, got \"", key, "\""));
      }
      if (!value.is_number()) return Bad("logit_bias", absl::StrCat("values must be numbers (token ", key, ")"));
      g.logit_bias[id] = ToFloat(value);
    }
  }
  if (absl::Status e = GetBool(body, "return_token_ids", &out->return_token_ids); !e.ok()) return e;
  if (absl::Status e = GetBool(body, "ignore_eos", &g.ignore_eos); !e.ok()) return e;
  std::string ignored_user;
  if (absl::Status e = GetString(body, "user", &ignored_user); !e.ok()) return e;
  if (absl::Status e = GetString(body, "cache_salt", &g.cache_salt); !e.ok()) return e;
  return absl::OkStatus();
}

// A list of token ids as the prompt; `field` names it in errors.
absl::Status ToTokens(const json& ids, const std::string& field, GenerationInput* g) {
  g->prompt = PromptKind::kTokens;
  for (size_t i = 0; i < ids.size(); ++i) {
    int32_t id = 0;
    if (absl::Status s = ToInt32(ids[i], absl::StrCat(field, "[", i, "]"), &id); !s.ok()) return WithParam(s, "prompt");
    g->token_ids.push_back(id);
  }
  return absl::OkStatus();
}

bool AllIntegers(const json& a) {
  for (const json& x : a) {
    if (!x.is_number_integer()) return false;
  }
  return true;
}

// prompt: a string, a list of token ids, or a list holding one of those. (An empty one is
// ToEngineRequest's to refuse, as an empty gRPC text or token list.)
absl::Status ParsePrompt(const json& body, GenerationInput* g) {
  constexpr char kWhat[] = "must be a string or list of token ids";
  const json* p = Field(body, "prompt");
  if (p == nullptr) return Bad("prompt", "is required");
  if (p->is_array() && p->size() == 1 && (p->at(0).is_string() || p->at(0).is_array())) p = &p->at(0);
  if (p->is_string()) {
    g->prompt = PromptKind::kText;
    g->text = p->get<std::string>();
    return absl::OkStatus();
  }
  if (!p->is_array()) return Bad("prompt", kWhat);
  if (!AllIntegers(*p)) {
    bool batch = true;
    for (const json& x : *p) batch = batch && (x.is_string() || x.is_array());
    return batch ? Bad("prompt", "must be one prompt: several prompts per request are not supported (send one "
                                 "request each)")
                 : Bad("prompt", kWhat);
  }
  return ToTokens(*p, "prompt", g);
}

absl::Status ParseCompletions(const json& body, OpenAiRequest* out) {
  GenerationInput& g = out->input;
  if (absl::Status s = ParsePrompt(body, &g); !s.ok()) return s;
  if (const json* lp = Field(body, "logprobs")) {
    int32_t n = 0;
    if (absl::Status s = ToInt32(*lp, "logprobs", &n); !s.ok()) return s;
    g.logprobs = n;  // its range is ToEngineRequest's
    out->logprobs = true;
  }
  bool echo = false;
  if (absl::Status s = GetBool(body, "echo", &echo); !s.ok()) return s;
  if (echo) return Bad("echo", "must be false: echoing the prompt is not supported");
  if (const json* best_of = Field(body, "best_of")) {
    if (!best_of->is_number_integer() || best_of->get<int64_t>() != 1) {
      return Bad("best_of", "must be 1: llmserve generates one sequence per request");
    }
  }
  std::string suffix;
  if (absl::Status s = GetString(body, "suffix", &suffix); !s.ok()) return s;
  if (!suffix.empty()) return Bad("suffix", "is not supported (insertion needs a fill-in-the-middle model)");
  return absl::OkStatus();
}

// A message's content: a string, null, or a list of text parts (joined with newlines).
absl::Status MessageContent(const json& m, size_t i, std::string* out) {
  const json* c = Field(m, "content");
  if (c == nullptr) return absl::OkStatus();
  if (c->is_string()) {
    *out = c->get<std::string>();
    return absl::OkStatus();
  }
  const std::string field = absl::StrCat("messages[", i, "].content");
  if (!c->is_array()) return Bad(field, "must be a string or a list of text parts");
  for (size_t j = 0; j < c->size(); ++j) {
    const json& part = (*c)[j];
    const json* type = part.is_object() ? Field(part, "type") : nullptr;
    const json* text = part.is_object() ? Field(part, "text") : nullptr;
    if (type == nullptr || !type->is_string() || type->get<std::string>() != "text" || text == nullptr ||
        !text->is_string()) {
      return Bad(absl::StrCat(field, "[", j, "]"),
                 "must be {\"type\": \"text\", \"text\": ...}: only text is supported");
    }
    if (j > 0) out->push_back('\n');
    out->append(text->get_ref<const std::string&>());
  }
  return absl::OkStatus();
}

absl::Status ParseChat(const json& body, OpenAiRequest* out) {
  GenerationInput& g = out->input;
  const json* messages = Field(body, "messages");
  if (messages == nullptr) return Bad("messages", "is required");
  if (!messages->is_array()) return Bad("messages", "must be a list of messages");
  g.prompt = PromptKind::kChat;
  ChatConversation& chat = g.chat;
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    const std::string field = absl::StrCat("messages[", i, "]");
    if (!m.is_object()) return Bad(field, "must be an object with role and content");
    const json* role = Field(m, "role");
    if (role == nullptr || !role->is_string()) return Bad(absl::StrCat(field, ".role"), "must be a string");
    ChatTurn& turn = chat.messages.emplace_back();
    turn.role = role->get<std::string>();
    if (absl::Status s = MessageContent(m, i, &turn.content); !s.ok()) return s;
  }
  if (const json* tools = Field(body, "tools")) {
    if (!tools->is_array()) return Bad("tools", "must be a list");
    chat.tools_json = tools->dump(-1, ' ', false, json::error_handler_t::replace);
  }
  if (const json* agp = Field(body, "add_generation_prompt")) {
    if (!agp->is_boolean()) return Bad("add_generation_prompt", "must be a boolean");
    chat.add_generation_prompt = agp->get<bool>();
  }
  // max_completion_tokens is the current name; max_tokens the deprecated one. Errors name
  // the one the client sent.
  bool sent_max_completion_tokens = false;
  if (absl::Status s = GetInt(body, "max_completion_tokens",
                              [&](int32_t v) {
                                g.max_tokens = v;
                                sent_max_completion_tokens = true;
                              });
      !s.ok()) {
    return s;
  }
  g.names = &OpenAiChatFieldNames(sent_max_completion_tokens);
  if (absl::Status s = GetBool(body, "logprobs", &out->logprobs); !s.ok()) return s;
  if (const json* top = Field(body, "top_logprobs")) {
    int32_t n = 0;
    if (absl::Status s = ToInt32(*top, "top_logprobs", &n); !s.ok()) return s;
    if (!out->logprobs) return Bad("top_logprobs", "needs logprobs: true");
    g.logprobs = n;  // its range is ToEngineRequest's (named top_logprobs)
  } else if (out->logprobs) {
    g.logprobs = 0;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<OpenAiRequest> ParseOpenAiRequest(OpenAiEndpoint endpoint, std::string_view body) {
  const json j = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("the request body is not valid JSON");
  if (!j.is_object()) return absl::InvalidArgumentError("the request body must be a JSON object");
  OpenAiRequest out;
  out.endpoint = endpoint;
  // Chat's names are settled once ParseChat knows which max_tokens field was sent.
  out.input.names = endpoint == OpenAiEndpoint::kCompletions ? &OpenAiCompletionsFieldNames()
                                                             : &OpenAiChatFieldNames(false);
  if (absl::Status s = ParseCommon(j, &out); !s.ok()) return s;
  if (absl::Status s = ParseOpenAiConstraint(j, body, &out.input); !s.ok()) return s;
  absl::Status s = endpoint == OpenAiEndpoint::kCompletions ? ParseCompletions(j, &out) : ParseChat(j, &out);
  if (!s.ok()) return s;
  return out;
}

}  // namespace llmserve
