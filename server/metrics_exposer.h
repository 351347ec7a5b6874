// MetricsExposer: GET /metrics, a Prometheus registry's text exposition, on its own port over
// plain HTTP or TLS: an http::HttpHandler on an http::HttpServer (server/http/http_server.h),
// the same server as the API's, with the same deadlines and connection caps, so idle or
// stuck connections (a port scanner, a stalled client) cannot keep the scrapers out.
// Needs no API key (keep it private with --metrics-host).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "prometheus/registry.h"
#include "server/http/http_server.h"
#include "server/tls_credentials.h"

namespace llmserve {

class MetricsExposer final : public http::HttpHandler {
 public:
  // Listens on host:port (port 0 = any free one; host as for gRPC, an IPv6 literal bare or
  // bracketed) and serves `registry`; over TLS with `tls` (its client CA is not used), with
  // `options`' bounds (named "metrics"). UNAVAILABLE naming the address when it cannot be
  // bound; the TLS file errors of CheckTlsFiles.
  static absl::StatusOr<std::unique_ptr<MetricsExposer>> Start(const std::string& host, int port,
                                                               std::shared_ptr<prometheus::Registry> registry,
                                                               const TlsFiles* tls = nullptr,
                                                               http::HttpServerOptions options = {});
  ~MetricsExposer() override;
  MetricsExposer(const MetricsExposer&) = delete;
  MetricsExposer& operator=(const MetricsExposer&) = delete;

  int port() const { return server_->port(); }

  // http::HttpHandler: GET (or HEAD) /metrics; 404 / 405 otherwise, as plain text.
  std::optional<http::HttpResponse> Screen(const http::HttpRequest& head) override;
  http::HttpAnswer Handle(http::HttpRequest request) override;
  http::HttpResponse TransportError(int status, std::string message) override;

 private:
  explicit MetricsExposer(std::shared_ptr<prometheus::Registry> registry) : registry_(std::move(registry)) {}

  const std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<http::HttpServer> server_;
};

}  // namespace llmserve
