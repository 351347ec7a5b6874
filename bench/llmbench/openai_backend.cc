// llmbench's client for any OpenAI-compatible server (backend.h): llmserve's HTTP API,
// llama.cpp's llama-server, vLLM, ... A streaming POST /v1/completions per request, on a
// thread and connection of its own, read as server-sent events ("data: {json}" lines,
// "data: [DONE]" last).
//
// Tokens per chunk: the chunk's "token_ids" when the server returns them (llmserve and
// vLLM, asked with "return_token_ids": true); else llama.cpp's "__verbose".tokens, which
// llama-server adds to each chunk when asked with "verbose": true (sent only when the
// workload needs the ids: --turns > 1 builds each turn from the previous answer's ids);
// else one per chunk that carries a choice (llama.cpp streams one token per chunk). The request ends with the usage (asked with
// stream_options.include_usage; llama.cpp sends it in its last chunk): completion and
// prompt tokens, cached tokens from usage.prompt_tokens_details.cached_tokens or llama.cpp's
// timings.cache_n.
#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/llmbench/backend.h"
#include "httplib.h"
#include "nlohmann/json.hpp"

namespace llmbench {
namespace {

namespace v1 = llmserve::v1;
using json = nlohmann::json;

// The /v1/completions body for `r`.
std::string RequestBody(const v1::GenerateRequest& r, const BenchOptions& o, const std::string& model) {
  json j;
  if (!model.empty()) j["model"] = model;
  if (r.has_tokens()) {
    j["prompt"] = std::vector<int32_t>(r.tokens().ids().begin(), r.tokens().ids().end());
  } else {
    j["prompt"] = r.text();
  }
  j["max_tokens"] = r.max_tokens();
  j["stream"] = true;
  j["stream_options"] = {{"include_usage", true}};
  j["return_token_ids"] = true;
  if (o.turns > 1) j["verbose"] = true;  // llama-server: the ids in each chunk's "__verbose"
  j["ignore_eos"] = r.ignore_eos();
  j["temperature"] = r.has_temperature() ? r.temperature() : 1.0f;
  if (r.has_top_k()) j["top_k"] = r.top_k();
  if (r.has_top_p()) j["top_p"] = r.top_p();
  if (r.has_seed()) j["seed"] = r.seed();
  if (!r.cache_salt().empty()) j["cache_salt"] = r.cache_salt();
  if (o.llamacpp_cache_prompt) j["cache_prompt"] = true;
  if (o.ban_first >= 0) {
    json bias = json::object();
    for (int id = o.ban_first; id <= o.ban_last; ++id) bias[std::to_string(id)] = -100;
    j["logit_bias"] = std::move(bias);
  }
  if (r.constraint().has_regex()) j["structured_outputs"] = {{"regex", r.constraint().regex()}};
  if (r.constraint().has_grammar()) j["grammar"] = r.constraint().grammar();
  if (r.constraint().has_json_schema()) {
    // The schema goes in as its own text: a JSON object re-serialized here would reorder its
    // keys, and property order is part of what the servers generate.
    j["json_schema"] = "@schema@";
    std::string body = j.dump();
    const std::string mark = "\"@schema@\"";
    body.replace(body.find(mark), mark.size(), r.constraint().json_schema());
    return body;
  }
  return j.dump();
}

// llama-server's per-chunk token ids ("__verbose": {"tokens": [...]}), or null.
const json* VerboseTokens(const json& ev) {
  const auto v = ev.find("__verbose");
  if (v == ev.end() || !v->is_object()) return nullptr;
  const auto t = v->find("tokens");
  return t != v->end() && t->is_array() ? &*t : nullptr;
}

// A client for host:port; over TLS with o.connect's CA and client certificate.
std::unique_ptr<httplib::ClientImpl> NewClient(const BenchOptions& o, const std::string& host, int port) {
  if (o.connect.UsesTls()) {
    auto c = std::make_unique<httplib::SSLClient>(host, port, o.connect.tls_cert, o.connect.tls_key);
    if (!o.connect.tls_ca.empty()) c->set_ca_cert_path(o.connect.tls_ca.c_str());
    c->enable_server_certificate_verification(true);
    return c;
  }
  return std::make_unique<httplib::ClientImpl>(host, port);
}

class OpenAiBackend final : public Backend {
 public:
  OpenAiBackend(const BenchOptions& o, std::string api_key) : o_(o), api_key_(std::move(api_key)) {
    const size_t colon = o.addr.rfind(':');
    host_ = o.addr.substr(0, colon);
    if (colon == std::string::npos || !absl::SimpleAtoi(o.addr.substr(colon + 1), &port_)) port_ = 80;
  }
  ~OpenAiBackend() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::thread& t : threads_) t.join();
  }

  void Start(int index, const v1::GenerateRequest& request, Clock::time_point epoch, CallSink* sink) override {
    std::lock_guard<std::mutex> lock(mu_);
    threads_.emplace_back([this, index, &request, epoch, sink] { Run(index, request, epoch, sink); });
  }

  bool PollServer(v1::ServerInfo*) override { return false; }

  // GET /v1/models: the first model's id (sent as "model") and, when the server says,
  // its context (max_model_len, as vLLM and llmserve report it).
  std::optional<v1::ModelInfo> ModelInfo(std::string* error) override {
    auto cli = NewClient(o_, host_, port_);
    cli->set_connection_timeout(10);
    cli->set_read_timeout(30);
    httplib::Headers headers;
    if (!api_key_.empty()) headers.emplace("Authorization", "Bearer " + api_key_);
    httplib::Result got = cli->Get("/v1/models", headers);
    if (!got || got->status != 200) {
      *error = got ? absl::StrCat("GET /v1/models: HTTP ", got->status, ": ", got->body.substr(0, 200))
                   : absl::StrCat("GET /v1/models: ", httplib::to_string(got.error()));
      return std::nullopt;
    }
    const json list = json::parse(got->body, nullptr, false);
    if (list.is_discarded() || !list.contains("data") || !list["data"].is_array() || list["data"].empty() ||
        !list["data"][0].contains("id") || !list["data"][0]["id"].is_string()) {
      *error = "GET /v1/models: no model in the answer";
      return std::nullopt;
    }
    const json& m = list["data"][0];
    model_ = m["id"].get<std::string>();
    // The vocabulary is not part of the API: random prompts need --vocab.
    *error = "an OpenAI-compatible server does not report its vocabulary (give --vocab)";
    return std::nullopt;
  }

 private:
  void Run(int index, const v1::GenerateRequest& request, Clock::time_point epoch, CallSink* sink) const {
    auto since = [&](Clock::time_point t) { return std::chrono::duration<double>(t - epoch).count(); };
    RequestResult r;
    r.itl.reserve(static_cast<size_t>(request.max_tokens()));
    r.ids.reserve(static_cast<size_t>(request.max_tokens()));
    auto cli = NewClient(o_, host_, port_);
    cli->set_connection_timeout(10);
    cli->set_tcp_nodelay(true);  // the request's headers and body go out without waiting for an ACK
    const int timeout = o_.timeout_seconds > 0 ? static_cast<int>(o_.timeout_seconds + 1) : 3600;
    cli->set_read_timeout(timeout);
    cli->set_write_timeout(timeout);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.headers = {{"Content-Type", "application/json"}};
    if (!api_key_.empty()) req.headers.emplace("Authorization", "Bearer " + api_key_);
    if (o_.timeout_seconds > 0) req.headers.emplace("X-Request-Timeout", absl::StrCat(o_.timeout_seconds));
    req.body = RequestBody(request, o_, model_);
    std::string pending, error_body;
    Clock::time_point last_token;
    std::string protocol_error;
    bool got_ids = false;
    const Clock::time_point start = Clock::now();
    r.started = true;
    r.start = since(start);
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      const Clock::time_point now = Clock::now();
      pending.append(data, n);
      if (error_body.size() < 4096) error_body.append(data, std::min<size_t>(n, 4096));
      for (size_t eol; (eol = pending.find('\n')) != std::string::npos; pending.erase(0, eol + 1)) {
        std::string line = pending.substr(0, eol);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.rfind("data:", 0) != 0) continue;
        const std::string payload = line.substr(line.size() > 5 && line[5] == ' ' ? 6 : 5);
        if (payload == "[DONE]") continue;
        const json ev = json::parse(payload, nullptr, /*allow_exceptions=*/false);
        if (ev.is_discarded() || !ev.is_object()) {
          protocol_error = "unparsable event: " + line.substr(0, 200);
          return false;
        }
        if (ev.contains("error")) {
          protocol_error = ev["error"].dump();
          return false;
        }
        if (r.has_final) r.message_after_final = true;
        int ids = 0;
        const bool has_usage = ev.contains("usage") && ev["usage"].is_object();
        if (ev.contains("choices") && ev["choices"].is_array()) {
          for (const json& c : ev["choices"]) {
            if (c.contains("token_ids") && c["token_ids"].is_array()) {
              got_ids = true;
              for (const json& id : c["token_ids"]) r.ids.push_back(id.is_number_integer() ? id.get<int32_t>() : -1);
              ids += static_cast<int>(c["token_ids"].size());
            } else if (const json* verbose = VerboseTokens(ev); verbose != nullptr) {
              got_ids = true;
              for (const json& id : *verbose) r.ids.push_back(id.is_number_integer() ? id.get<int32_t>() : -1);
              ids += static_cast<int>(verbose->size());
            } else if (!has_usage && c.value("finish_reason", json()).is_null()) {
              ++ids;  // one token per chunk
            }
            if (c.contains("finish_reason") && c["finish_reason"].is_string()) {
              r.final_msg.set_finish_reason(c["finish_reason"] == "length" ? v1::FINISH_REASON_LENGTH
                                                                            : v1::FINISH_REASON_EOS);
            }
          }
        }
        ++r.chunks;
        if (ids > 0) {
          if (r.tokens == 0) {
            r.ttft = std::chrono::duration<double>(now - start).count();
          } else {
            const double gap = std::chrono::duration<double>(now - last_token).count() / ids;
            for (int i = 0; i < ids; ++i) r.itl.push_back(gap);
          }
          last_token = now;
          r.tokens += ids;
          sink->tokens_received.fetch_add(ids, std::memory_order_relaxed);
        }
        if (has_usage) {
          const json& u = ev["usage"];
          r.has_final = true;
          r.e2e = std::chrono::duration<double>(now - start).count();
          v1::Usage* usage = r.final_msg.mutable_usage();
          usage->set_prompt_tokens(u.value("prompt_tokens", 0));
          usage->set_completion_tokens(u.value("completion_tokens", 0));
          if (u.contains("prompt_tokens_details") && u["prompt_tokens_details"].is_object()) {
            usage->set_cached_tokens(u["prompt_tokens_details"].value("cached_tokens", 0));
          } else if (ev.contains("timings") && ev["timings"].is_object()) {
            usage->set_cached_tokens(ev["timings"].value("cache_n", 0));  // llama.cpp
          }
        }
      }
      return true;
    };
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    const bool sent = cli->send(req, res, err);
    r.end = since(Clock::now());
    if (!protocol_error.empty()) {
      r.code = grpc::StatusCode::INTERNAL;
      r.error = protocol_error;
    } else if (!sent) {
      r.code = grpc::StatusCode::UNAVAILABLE;
      r.error = absl::StrCat("HTTP request failed: ", httplib::to_string(err));
    } else if (res.status != 200) {
      // The status as gRPC's code, so that the report counts refusals the same way.
      r.code = res.status == 429   ? grpc::StatusCode::RESOURCE_EXHAUSTED
               : res.status == 503 ? grpc::StatusCode::UNAVAILABLE
               : res.status == 400 ? grpc::StatusCode::INVALID_ARGUMENT
               : res.status == 401 ? grpc::StatusCode::UNAUTHENTICATED
                                   : grpc::StatusCode::INTERNAL;
      r.error = absl::StrCat("HTTP ", res.status, ": ", (res.body.empty() ? error_body : res.body).substr(0, 300));
    } else if (!r.has_final) {
      r.code = grpc::StatusCode::INTERNAL;
      r.error = "the stream ended without its usage";
    } else if (o_.turns > 1 && !got_ids && r.tokens > 0) {
      r.code = grpc::StatusCode::INTERNAL;
      r.error = "the server returned no token ids (return_token_ids, or llama.cpp's verbose), which --turns > 1 needs";
    } else {
      r.code = grpc::StatusCode::OK;
    }
    sink->OnCallDone(index, std::move(r));
  }

  const BenchOptions& o_;
  const std::string api_key_;
  std::string host_;
  int port_ = 80;
  std::string model_;  // from /v1/models (ModelInfo runs before the first Start)
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

}  // namespace

std::unique_ptr<Backend> MakeOpenAiBackend(const BenchOptions& options, std::string api_key) {
  return std::make_unique<OpenAiBackend>(options, std::move(api_key));
}

}  // namespace llmbench
