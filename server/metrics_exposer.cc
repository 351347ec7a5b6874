#include "server/metrics_exposer.h"

#include <exception>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace llmserve {
namespace {

constexpr int kThreads = 8;
constexpr int kRequestTimeoutMs = 2000;

}  // namespace

absl::StatusOr<MetricsExposer> StartMetricsExposer(const std::string& address,
                                                   const std::shared_ptr<prometheus::Registry>& registry) {
  MetricsExposer out;
  try {  // civetweb's C++ wrapper throws when it cannot listen
    // civetweb gives each connection a worker thread until its request has been read. A
    // scrape sends its request at once, so a connection that stays silent for
    // kRequestTimeoutMs is dropped, and kThreads workers leave room for a few such
    // connections (a port scanner, a stuck client) beside the scrapers. No keep-alive.
    out.exposer = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", address, "num_threads", absl::StrCat(kThreads), "request_timeout_ms",
        absl::StrCat(kRequestTimeoutMs), "enable_keep_alive", "no"});
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", address, ": the address is in use or not available (",
                     e.what(), ")"));
  }
  out.exposer->RegisterCollectable(registry, "/metrics");
  const std::vector<int> ports = out.exposer->GetListeningPorts();
  out.port = ports.empty() ? 0 : ports.front();
  return out;
}

}  // namespace llmserve
