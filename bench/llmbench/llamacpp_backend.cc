// llmbench's client for llama.cpp's llama-server (backend.h): a streaming POST /completion
// per request, on a thread of its own, read as server-sent events ("data: {json}" lines).
#include <chrono>
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

// The /completion body for `r`.
std::string RequestBody(const v1::GenerateRequest& r, const BenchOptions& o) {
  nlohmann::json j;
  if (r.has_tokens()) {
    j["prompt"] = std::vector<int32_t>(r.tokens().ids().begin(), r.tokens().ids().end());
  } else {
    j["prompt"] = r.text();
  }
  j["n_predict"] = r.max_tokens();
  j["stream"] = true;
  j["return_tokens"] = true;
  j["cache_prompt"] = o.llamacpp_cache_prompt;
  j["ignore_eos"] = r.ignore_eos();
  j["temperature"] = r.has_temperature() ? r.temperature() : 1.0f;
  if (r.has_top_k()) j["top_k"] = r.top_k();
  if (r.has_top_p()) j["top_p"] = r.top_p();
  if (r.has_seed()) j["seed"] = r.seed();
  if (o.ban_first >= 0) {
    nlohmann::json bias = nlohmann::json::array();
    for (int id = o.ban_first; id <= o.ban_last; ++id) bias.push_back({id, false});
    j["logit_bias"] = std::move(bias);
  }
  return j.dump();
}

class LlamaCppBackend final : public Backend {
 public:
  explicit LlamaCppBackend(const BenchOptions& o) : o_(o) {
    const size_t colon = o.addr.rfind(':');
    host_ = o.addr.substr(0, colon);
    if (colon == std::string::npos || !absl::SimpleAtoi(o.addr.substr(colon + 1), &port_)) port_ = 80;
  }
  ~LlamaCppBackend() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::thread& t : threads_) t.join();
  }

  void Start(int index, const v1::GenerateRequest& request, Clock::time_point epoch, CallSink* sink) override {
    std::lock_guard<std::mutex> lock(mu_);
    threads_.emplace_back([this, index, &request, epoch, sink] { Run(index, request, epoch, sink); });
  }

  bool PollServer(v1::ServerInfo*) override { return false; }

  std::optional<v1::ModelInfo> ModelInfo(std::string* error) override {
    *error = "llama.cpp's server has no GetModelInfo";
    return std::nullopt;
  }

 private:
  void Run(int index, const v1::GenerateRequest& request, Clock::time_point epoch, CallSink* sink) const {
    auto since = [&](Clock::time_point t) { return std::chrono::duration<double>(t - epoch).count(); };
    RequestResult r;
    r.itl.reserve(static_cast<size_t>(request.max_tokens()));
    r.ids.reserve(static_cast<size_t>(request.max_tokens()));
    httplib::Client cli(host_, port_);
    cli.set_connection_timeout(10);
    const int timeout = o_.timeout_seconds > 0 ? static_cast<int>(o_.timeout_seconds + 1) : 3600;
    cli.set_read_timeout(timeout);
    cli.set_write_timeout(timeout);
    httplib::Request req;
    req.method = "POST";
    req.path = "/completion";
    req.headers = {{"Content-Type", "application/json"}};
    req.body = RequestBody(request, o_);
    std::string pending;
    Clock::time_point last_token;
    std::string protocol_error;
    const Clock::time_point start = Clock::now();
    r.started = true;
    r.start = since(start);
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      const Clock::time_point now = Clock::now();
      pending.append(data, n);
      for (size_t eol; (eol = pending.find('\n')) != std::string::npos; pending.erase(0, eol + 1)) {
        const std::string line = pending.substr(0, eol);
        if (line.rfind("data: ", 0) != 0) continue;
        const nlohmann::json ev = nlohmann::json::parse(line.substr(6), nullptr, /*allow_exceptions=*/false);
        if (ev.is_discarded() || !ev.is_object()) {
          protocol_error = "unparsable event: " + line.substr(0, 200);
          return false;
        }
        if (r.has_final) r.message_after_final = true;
        if (ev.contains("error")) {
          protocol_error = ev["error"].dump();
          return false;
        }
        const int ids = ev.contains("tokens") && ev["tokens"].is_array() ? static_cast<int>(ev["tokens"].size()) : 0;
        for (int i = 0; i < ids; ++i) {
          const nlohmann::json& id = ev["tokens"][static_cast<size_t>(i)];
          r.ids.push_back(id.is_number_integer() ? id.get<int32_t>() : -1);
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
        if (ev.value("stop", false)) {
          r.has_final = true;
          r.e2e = std::chrono::duration<double>(now - start).count();
          v1::Usage* u = r.final_msg.mutable_usage();
          u->set_prompt_tokens(ev.value("tokens_evaluated", 0));
          u->set_completion_tokens(ev.value("tokens_predicted", 0));
          // timings.cache_n: prompt tokens whose KV the slot reused (tokens_cached is the
          // slot's whole cache, prompt and output, not a hit count).
          if (ev.contains("timings") && ev["timings"].is_object()) {
            u->set_cached_tokens(ev["timings"].value("cache_n", 0));
          }
          const std::string type = ev.value("stop_type", "");
          r.final_msg.set_finish_reason(type == "limit" ? v1::FINISH_REASON_LENGTH : v1::FINISH_REASON_EOS);
        }
      }
      return true;
    };
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    const bool sent = cli.send(req, res, err);
    r.end = since(Clock::now());
    if (!protocol_error.empty()) {
      r.code = grpc::StatusCode::INTERNAL;
      r.error = protocol_error;
    } else if (!sent) {
      r.code = grpc::StatusCode::UNAVAILABLE;
      r.error = absl::StrCat("HTTP request failed: ", httplib::to_string(err));
    } else if (res.status != 200) {
      r.code = grpc::StatusCode::INTERNAL;
      r.error = absl::StrCat("HTTP ", res.status, ": ", res.body.substr(0, 200));
    } else if (!r.has_final) {
      r.code = grpc::StatusCode::INTERNAL;
      r.error = "the stream ended without its stop event";
    } else {
      r.code = grpc::StatusCode::OK;
    }
    sink->OnCallDone(index, std::move(r));
  }

  const BenchOptions& o_;
  std::string host_;
  int port_ = 80;
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

}  // namespace

std::unique_ptr<Backend> MakeLlamaCppBackend(const BenchOptions& options) {
  return std::make_unique<LlamaCppBackend>(options);
}

}  // namespace llmbench
