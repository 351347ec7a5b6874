// MetricsExposer: the HTTP server serving a Prometheus registry at /metrics, over plain
// HTTP or TLS (an HttpListener, server/http_listener.h, which also reloads a renewed
// certificate).
//
//   connections:  a pool of kThreads workers; a connection that sends no complete request
//                 within a short read timeout is dropped, so idle or stuck connections (a
//                 port scanner, a stalled client) cannot keep the scrapers out. No keep-alive.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "prometheus/registry.h"
#include "server/http_listener.h"
#include "server/tls_credentials.h"

namespace llmserve {

class MetricsExposer {
 public:
  // Listens on host:port (port 0 = any free one; host as for gRPC, an IPv6 literal bare or
  // bracketed) and serves `registry`; over TLS with `tls` (its client CA is not used).
  // UNAVAILABLE naming the address when it cannot be bound; the TLS file errors of
  // CheckTlsFiles.
  static absl::StatusOr<std::unique_ptr<MetricsExposer>> Start(const std::string& host, int port,
                                                               std::shared_ptr<prometheus::Registry> registry,
                                                               const TlsFiles* tls = nullptr);
  MetricsExposer(const MetricsExposer&) = delete;
  MetricsExposer& operator=(const MetricsExposer&) = delete;

  int port() const { return listener_->port(); }

 private:
  explicit MetricsExposer(std::unique_ptr<HttpListener> listener) : listener_(std::move(listener)) {}

  std::unique_ptr<HttpListener> listener_;  // its destructor stops listening and joins the workers
};

}  // namespace llmserve
