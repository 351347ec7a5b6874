#include "server/metrics_exposer.h"

#include <exception>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace llmserve {

absl::StatusOr<MetricsExposer> StartMetricsExposer(const std::string& address,
                                                   const std::shared_ptr<prometheus::Registry>& registry) {
  MetricsExposer out;
  try {  // civetweb's C++ wrapper throws when it cannot listen
    // Two worker threads (a scrape is one short request); no keep-alive needed.
    out.exposer = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", address, "num_threads", "2"});
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
