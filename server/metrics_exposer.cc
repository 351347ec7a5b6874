#include "server/metrics_exposer.h"

#include <utility>

#include "httplib.h"
#include "prometheus/text_serializer.h"

namespace llmserve {

absl::StatusOr<std::unique_ptr<MetricsExposer>> MetricsExposer::Start(const std::string& host, int port,
                                                                     std::shared_ptr<prometheus::Registry> registry,
                                                                     const TlsFiles* tls) {
  HttpListenerOptions options;
  options.name = "metrics";
  options.threads = 8;
  // A scraper sends its request right after connecting: a connection silent for a second
  // (before its request, or within it) is dropped.
  options.idle_seconds = 1;
  options.keep_alive_max = 1;
  options.read_timeout_seconds = 2;
  absl::StatusOr<std::unique_ptr<HttpListener>> listener = HttpListener::Bind(host, port, tls, options);
  if (!listener.ok()) return listener.status();
  (*listener)->server().Get("/metrics", [registry](const httplib::Request&, httplib::Response& res) {
    res.set_content(prometheus::TextSerializer().Serialize(registry->Collect()), "text/plain; version=0.0.4");
  });
  (*listener)->Start();
  return std::unique_ptr<MetricsExposer>(new MetricsExposer(*std::move(listener)));
}

}  // namespace llmserve
