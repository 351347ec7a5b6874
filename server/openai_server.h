// OpenAiServer: the OpenAI-compatible HTTP/1.1 API on its own port (--http-port), up from
// start-up, before the model loads, like the gRPC port's ServiceGate. An http::HttpHandler
// on an http::HttpServer (server/http/http_server.h: deadlines, connection caps, pipelining).
//
//   GET  /health                              200 {"status": "ok"} serving; 503 loading or draining
//   GET  /v1/models, /v1/models/{id}          ┐ screened on the head, before the body is read,
//   POST /v1/completions                      │ by the AccessGate both front ends share: the API
//   POST /v1/chat/completions                 ┘ key ("Authorization: Bearer <key>"; 401 without),
//                                               then 503 "model loading" until Open, then
//                                               OpenAiService
//   another path 404, another method 405 (with Allow), a POST body that is not
//   application/json 415, a body over --max-request-bytes 413, a handler that throws 500:
//   always OpenAI's error object.
//
// Draining follows the gate's phase: kDraining turns /health to 503 (load balancers stop
// sending); Close() refuses new connections while the requests in flight finish; kRefusing
// answers the requests that still arrive on open keep-alive connections 503 and closes them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "server/access_gate.h"
#include "server/http/http_server.h"
#include "server/metrics.h"
#include "server/openai_service.h"
#include "server/server_config.h"

namespace llmserve {

// Thread-safe.
class OpenAiServer final : public http::HttpHandler {
 public:
  // Binds --host:--http-port (TLS with --tls-cert; mutual TLS with --tls-client-ca) and
  // starts serving (health 503, the API "model loading" until Open and the gate's
  // kServing). UNAVAILABLE for a busy port.
  static absl::StatusOr<std::unique_ptr<OpenAiServer>> Start(const ServerConfig& config,
                                                             std::shared_ptr<const AccessGate> access);
  ~OpenAiServer() override;  // closes every connection

  // From now on the API goes to `service` (which must outlive the server). Once only.
  void Open(OpenAiService* service) { target_.store(service); }
  // Refuses new connections; requests in flight go on.
  void Close() { server_->Close(); }

  int port() const { return server_->port(); }
  const std::string& address() const { return server_->address(); }
  // Completions being generated (0 before Open).
  int64_t open_requests() const;

  // http::HttpHandler.
  std::optional<http::HttpResponse> Screen(const http::HttpRequest& head) override;
  http::HttpAnswer Handle(http::HttpRequest request) override;
  http::HttpResponse TransportError(int status, std::string message) override;

 private:
  explicit OpenAiServer(std::shared_ptr<const AccessGate> access) : access_(std::move(access)) {}

  const std::shared_ptr<const AccessGate> access_;
  std::atomic<OpenAiService*> target_{nullptr};
  std::unique_ptr<http::HttpServer> server_;  // last: stopped first
};

}  // namespace llmserve
