#include "server/openai_server.h"

#include <exception>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "server/http_status.h"
#include "spdlog/spdlog.h"

namespace llmserve {
namespace {

// Connection handling of the API port: keep-alive (SDKs reuse connections) closed after 5 s
// idle; a request must arrive within 10 s once started; a client that reads nothing for 30 s
// is dropped (its request aborted).
constexpr int kIdleSeconds = 5;
constexpr size_t kKeepAliveRequests = 1000;
constexpr int kReadTimeoutSeconds = 10;
constexpr int kWriteTimeoutSeconds = 30;

bool IsJson(const httplib::Request& req) {
  const std::string type = absl::AsciiStrToLower(req.get_header_value("Content-Type"));
  return type == "application/json" || absl::StartsWith(type, "application/json;");
}

}  // namespace

absl::StatusOr<std::unique_ptr<OpenAiServer>> OpenAiServer::Start(const ServerConfig& config,
                                                                   std::shared_ptr<ApiKeyStore> keys,
                                                                   Metrics* metrics) {
  HttpListenerOptions options;
  options.name = "the HTTP API";
  options.threads = static_cast<size_t>(config.http_threads);
  options.idle_seconds = kIdleSeconds;
  options.keep_alive_max = kKeepAliveRequests;
  options.read_timeout_seconds = kReadTimeoutSeconds;
  options.write_timeout_seconds = kWriteTimeoutSeconds;
  options.max_body_bytes = static_cast<size_t>(config.max_request_bytes);
  options.use_client_ca = true;
  absl::StatusOr<std::unique_ptr<HttpListener>> listener =
      HttpListener::Bind(config.host, config.http_port, &config.tls, options);
  if (!listener.ok()) return listener.status();
  std::unique_ptr<OpenAiServer> server(new OpenAiServer(*std::move(listener), std::move(keys), metrics));
  server->AddRoutes();
  server->listener_->Start();
  return server;
}

OpenAiServer::OpenAiServer(std::unique_ptr<HttpListener> listener, std::shared_ptr<ApiKeyStore> keys,
                           Metrics* metrics)
    : listener_(std::move(listener)), keys_(std::move(keys)), metrics_(metrics) {}

OpenAiServer::~OpenAiServer() { listener_.reset(); }

int64_t OpenAiServer::open_requests() const {
  const OpenAiService* s = target_.load();
  return s == nullptr ? 0 : s->open_requests();
}

void OpenAiServer::AddRoutes() {
  httplib::Server& http = listener_->server();
  // The API routes: the key first (as gRPC's gate), then the service once it is open.
  const auto guarded = [this](auto handler) {
    return [this, handler](const httplib::Request& req, httplib::Response& res) {
      if (keys_->enabled() && !keys_->Accepts(req.get_header_value("Authorization"))) {
        if (metrics_ != nullptr) metrics_->RecordUnauthenticated();
        WriteError(absl::UnauthenticatedError(req.has_header("Authorization")
                                                  ? "the API key is not valid"
                                                  : "no API key: send the header 'Authorization: Bearer <key>'"),
                   res);
        return;
      }
      if (refusing_.load()) {
        res.set_header("Connection", "close");
        WriteError(absl::UnavailableError("draining: the server is shutting down, retry elsewhere"), res);
        return;
      }
      OpenAiService* service = target_.load();
      if (service == nullptr) {
        WriteError(absl::UnavailableError("model loading: try again shortly"), res);
        return;
      }
      handler(*service, req, res);
    };
  };
  const auto generate = [guarded](OpenAiEndpoint endpoint) {
    return guarded([endpoint](OpenAiService& s, const httplib::Request& req, httplib::Response& res) {
      if (!IsJson(req)) {
        WriteError(WithHttpStatus(absl::InvalidArgumentError(absl::StrCat(
                                      "the request body must be JSON with Content-Type: application/json, got '",
                                      req.get_header_value("Content-Type"), "'")),
                                  415),
                   res);
        return;
      }
      s.Generate(endpoint, req, res);
    });
  };
  http.Post("/v1/completions", generate(OpenAiEndpoint::kCompletions));
  http.Post("/v1/chat/completions", generate(OpenAiEndpoint::kChatCompletions));
  http.Get("/v1/models", guarded([](OpenAiService& s, const httplib::Request&, httplib::Response& res) {
    s.Models("", res);
  }));
  http.Get("/v1/models/(.+)", guarded([](OpenAiService& s, const httplib::Request& req, httplib::Response& res) {
    s.Models(req.matches[1], res);
  }));
  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (serving_.load()) {
      res.set_content(R"({"status":"ok"})", "application/json");
    } else {
      WriteError(absl::UnavailableError(target_.load() == nullptr ? "model loading" : "draining: shutting down"), res);
    }
  });
  // The right path with the wrong method.
  const auto wrong_method = [](const char* allowed) {
    return [allowed](const httplib::Request& req, httplib::Response& res) {
      WriteError(WithHttpStatus(absl::InvalidArgumentError(absl::StrCat(req.method, " ", req.path,
                                                                        ": the method must be ", allowed)),
                                405),
                 res);
      res.set_header("Allow", allowed);
    };
  };
  for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
    http.Get(path, wrong_method("POST"));
    http.Put(path, wrong_method("POST"));
    http.Delete(path, wrong_method("POST"));
  }
  for (const char* path : {"/v1/models", "/health"}) {
    http.Post(path, wrong_method("GET"));
  }
  // Whatever httplib answers by itself (404 for another path, 413 for a body over the limit,
  // 400 for a malformed request) gets the error object too.
  http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // ours already
    std::string message;
    switch (res.status) {
      case 404: message = absl::StrCat("no such path: ", req.method, " ", req.path); break;
      case 413: message = "the request body is larger than the server's --max-request-bytes"; break;
      default: message = absl::StrCat("the request could not be handled (HTTP ", res.status, ")"); break;
    }
    const int status = res.status;
    WriteError(WithHttpStatus(absl::InvalidArgumentError(message), status), res);
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    spdlog::error("HTTP {} {}: {}", req.method, req.path, what);
    WriteError(absl::InternalError("internal error"), res);
  });
}

}  // namespace llmserve
