// MetricsExposer: prometheus-cpp's HTTP exposer (civetweb) serving a registry at /metrics.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"

namespace llmserve {

// The running exposer and the port it bound (useful when asked for port 0).
struct MetricsExposer {
  std::unique_ptr<prometheus::Exposer> exposer;
  int port = 0;
};

// Listens on `address` ("host:port", IPv6 bracketed) and serves `registry` at /metrics.
// Connections that send no request are dropped after a short timeout, so idle or stuck
// connections cannot keep the scrapers out.
// UNAVAILABLE naming the address when it cannot be bound (e.g. the port is in use).
absl::StatusOr<MetricsExposer> StartMetricsExposer(const std::string& address,
                                                   const std::shared_ptr<prometheus::Registry>& registry);

}  // namespace llmserve
