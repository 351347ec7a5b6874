#include "tests/integration/openai_client.h"

#include <utility>

#include "httplib.h"

namespace llmserve::testing {
namespace {

using json = nlohmann::json;

httplib::Headers Auth(const std::string& api_key) {
  if (api_key.empty()) return {};
  return {{"Authorization", "Bearer " + api_key}};
}

// Folds one SSE event into the result.
void AddEvent(const json& ev, HttpResult* r) {
  r->events.push_back(ev);
  if (ev.contains("usage") && ev["usage"].is_object()) r->usage = ev["usage"];
  if (!ev.contains("choices") || !ev["choices"].is_array()) return;
  for (const json& c : ev["choices"]) {
    if (c.contains("text") && c["text"].is_string()) r->text += c["text"].get<std::string>();
    if (c.contains("delta") && c["delta"].contains("content") && c["delta"]["content"].is_string()) {
      r->text += c["delta"]["content"].get<std::string>();
    }
    if (c.contains("finish_reason") && c["finish_reason"].is_string()) r->finish_reason = c["finish_reason"];
    if (c.contains("token_ids") && c["token_ids"].is_array()) {
      for (const json& id : c["token_ids"]) r->token_ids.push_back(id.is_number_integer() ? id.get<int32_t>() : -1);
    }
    if (c.contains("logprobs") && c["logprobs"].is_object()) {
      const json& lp = c["logprobs"];
      if (lp.contains("tokens")) r->logprob_tokens += static_cast<int>(lp["tokens"].size());
      if (lp.contains("content")) r->logprob_tokens += static_cast<int>(lp["content"].size());
    }
  }
}

}  // namespace

HttpResult PostJson(int port, const std::string& path, const json& body, const std::string& api_key) {
  return PostRawJson(port, path, body.dump(), api_key);
}

HttpResult PostRawJson(int port, const std::string& path, const std::string& body_text, const std::string& api_key) {
  const json body = json::parse(body_text, nullptr, /*allow_exceptions=*/false);
  HttpResult r;
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(10);
  cli.set_read_timeout(300);
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.headers = Auth(api_key);
  req.headers.emplace("Content-Type", "application/json");
  req.body = body_text;
  const bool stream = body.is_object() && body.value("stream", false);
  std::string pending, whole;
  req.response_handler = [&](const httplib::Response& head) {
    for (const auto& [name, value] : head.headers) r.headers[name] = value;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    whole.append(data, n);
    if (!stream) return true;
    pending.append(data, n);
    for (size_t eol; (eol = pending.find("\n\n")) != std::string::npos; pending.erase(0, eol + 2)) {
      const std::string event = pending.substr(0, eol);
      if (event.rfind("data: ", 0) != 0) continue;
      const std::string data = event.substr(6);
      if (data == "[DONE]") {
        r.done = true;
        continue;
      }
      AddEvent(json::parse(data, nullptr, false), &r);
    }
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  r.sent = cli.send(req, res, err);
  r.status = res.status;
  if (whole.empty()) whole = res.body;
  r.raw = whole;
  if (!stream || r.status != 200) {
    r.body = json::parse(whole, nullptr, false);
    if (r.body.is_discarded()) r.body = nullptr;
  }
  return r;
}

HttpResult GetJson(int port, const std::string& path, const std::string& api_key) {
  HttpResult r;
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(10);
  httplib::Result got = cli.Get(path, Auth(api_key));
  r.sent = static_cast<bool>(got);
  if (!got) return r;
  r.status = got->status;
  r.raw = got->body;
  r.body = json::parse(got->body, nullptr, false);
  if (r.body.is_discarded()) r.body = nullptr;
  return r;
}

}  // namespace llmserve::testing
