// MetricsExposer: the HTTP server (cpp-httplib) serving a Prometheus registry at /metrics,
// over plain HTTP or TLS.
//
//   connections:  a pool of kThreads workers; a connection that sends no complete request
//                 within a short read timeout is dropped, so idle or stuck connections (a
//                 port scanner, a stalled client) cannot keep the scrapers out. No keep-alive.
//   TLS:          the certificate and key are read from their files at start (checked like
//                 the gRPC port's) and again when they change, checked at most every
//                 reload_seconds, so a renewed certificate is served without a restart; a
//                 file that fails to load keeps the pair in use (logged).
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "prometheus/registry.h"
#include "server/tls_credentials.h"

namespace httplib {
class Server;
}

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
  ~MetricsExposer();  // stops listening and joins the workers
  MetricsExposer(const MetricsExposer&) = delete;
  MetricsExposer& operator=(const MetricsExposer&) = delete;

  int port() const { return port_; }

 private:
  MetricsExposer() = default;

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace llmserve
