#include "server/metrics_exposer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "prometheus/text_serializer.h"

namespace llmserve {

absl::StatusOr<std::unique_ptr<MetricsExposer>> MetricsExposer::Start(const std::string& host, int port,
                                                                     std::shared_ptr<prometheus::Registry> registry,
                                                                     const TlsFiles* tls,
                                                                     http::HttpServerOptions options) {
  std::unique_ptr<MetricsExposer> exposer(new MetricsExposer(std::move(registry)));
  options.name = "metrics";
  options.threads = 1;  // a scrape serializes the registry; scrapers are few
  options.use_client_ca = false;
  absl::StatusOr<std::unique_ptr<http::HttpServer>> bound =
      http::HttpServer::Bind(host, port, tls, options, exposer.get());
  if (!bound.ok()) return bound.status();
  exposer->server_ = *std::move(bound);
  exposer->server_->Start();
  return exposer;
}

MetricsExposer::~MetricsExposer() {
  if (server_ != nullptr) server_->Stop();  // before the handler goes
}

std::optional<http::HttpResponse> MetricsExposer::Screen(const http::HttpRequest& head) {
  if (head.path != "/metrics") return TransportError(404, absl::StrCat("no such path: ", head.path, " (try /metrics)"));
  if (head.method != "GET" && head.method != "HEAD") {
    http::HttpResponse r = TransportError(405, "the method must be GET");
    r.headers.push_back({"Allow", "GET"});
    return r;
  }
  return std::nullopt;
}

http::HttpAnswer MetricsExposer::Handle(http::HttpRequest) {
  http::HttpResponse r;
  r.content_type = "text/plain; version=0.0.4";
  r.body = prometheus::TextSerializer().Serialize(registry_->Collect());
  return r;
}

http::HttpResponse MetricsExposer::TransportError(int status, std::string message) {
  http::HttpResponse r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::move(message) + "\n";
  return r;
}

}  // namespace llmserve
