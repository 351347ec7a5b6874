#include "server/openai_server.h"

#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/http_status.h"
#include "spdlog/spdlog.h"

namespace llmserve {
namespace {

using http::HttpRequest;
using http::HttpResponse;

// The API's routes.
enum class Route { kNone, kHealth, kModels, kModel, kCompletions, kChatCompletions };

constexpr std::string_view kModelPrefix = "/v1/models/";

Route RouteOf(std::string_view path) {
  if (path == "/health") return Route::kHealth;
  if (path == "/v1/models") return Route::kModels;
  if (path.starts_with(kModelPrefix) && path.size() > kModelPrefix.size()) return Route::kModel;
  if (path == "/v1/completions") return Route::kCompletions;
  if (path == "/v1/chat/completions") return Route::kChatCompletions;
  return Route::kNone;
}

// The method a route takes ("GET" routes take HEAD too).
const char* MethodOf(Route route) {
  return route == Route::kCompletions || route == Route::kChatCompletions ? "POST" : "GET";
}

bool MethodFits(Route route, std::string_view method) {
  const std::string_view want = MethodOf(route);
  return method == want || (want == "GET" && method == "HEAD");
}

bool IsJson(const HttpRequest& req) {
  const std::string_view raw = req.Header("Content-Type");
  const std::string type = absl::AsciiStrToLower(absl::string_view(raw.data(), raw.size()));
  return type == "application/json" || absl::StartsWith(type, "application/json;");
}

}  // namespace

absl::StatusOr<std::unique_ptr<OpenAiServer>> OpenAiServer::Start(const ServerConfig& config,
                                                                   std::shared_ptr<const AccessGate> access) {
  std::unique_ptr<OpenAiServer> server(new OpenAiServer(std::move(access)));
  http::HttpServerOptions options = config.HttpOptions("the HTTP API");
  options.use_client_ca = true;
  absl::StatusOr<std::unique_ptr<http::HttpServer>> bound =
      http::HttpServer::Bind(config.host, config.http_port, &config.tls, options, server.get());
  if (!bound.ok()) return bound.status();
  server->server_ = *std::move(bound);
  server->server_->Start();
  return server;
}

OpenAiServer::~OpenAiServer() {
  if (server_ != nullptr) server_->Stop();  // before the handler goes
}

int64_t OpenAiServer::open_requests() const {
  const OpenAiService* s = target_.load();
  return s == nullptr ? 0 : s->open_requests();
}

std::optional<HttpResponse> OpenAiServer::Screen(const HttpRequest& head) {
  const Route route = RouteOf(head.path);
  if (route == Route::kNone) {
    return ErrorResponse(WithHttpStatus(absl::NotFoundError(absl::StrCat("no such path: ", head.method, " ", head.path)),
                                        404));
  }
  if (!MethodFits(route, head.method)) {
    HttpResponse r = ErrorResponse(WithHttpStatus(
        absl::InvalidArgumentError(absl::StrCat(head.method, " ", head.path, ": the method must be ", MethodOf(route))),
        405));
    r.headers.push_back({"Allow", MethodOf(route)});
    return r;
  }
  if (route == Route::kHealth) return std::nullopt;
  // The API: the gate (the key, then the server's phase), then the content.
  const std::vector<std::string_view> authorization = head.HeaderValues("Authorization");
  if (absl::Status admitted = access_->Admit(AccessSurface::kHttpApi, authorization); !admitted.ok()) {
    HttpResponse r = ErrorResponse(admitted);
    // Refusing: like gRPC's GOAWAY, the connection closes and the client retries elsewhere.
    r.close = access_->phase() == ServingPhase::kRefusing;
    return r;
  }
  if (target_.load() == nullptr) return ErrorResponse(absl::UnavailableError("model loading: try again shortly"));
  if (MethodOf(route) == std::string_view("POST") && !IsJson(head)) {
    return ErrorResponse(WithHttpStatus(
        absl::InvalidArgumentError(absl::StrCat("the request body must be JSON with Content-Type: application/json, got '",
                                                std::string(head.Header("Content-Type")), "'")),
        415));
  }
  return std::nullopt;
}

http::HttpAnswer OpenAiServer::Handle(HttpRequest request) {
  const Route route = RouteOf(request.path);
  if (route == Route::kHealth) {
    const absl::Status health = access_->Health();  // kServing comes after Open
    return health.ok() ? JsonResponse(R"({"status":"ok"})") : ErrorResponse(health);
  }
  OpenAiService* service = target_.load();  // Screen saw it open
  switch (route) {
    case Route::kModels: return service->Models("");
    case Route::kModel: return service->Models(request.path.substr(kModelPrefix.size()));
    case Route::kCompletions: return service->Generate(OpenAiEndpoint::kCompletions, request);
    case Route::kChatCompletions: return service->Generate(OpenAiEndpoint::kChatCompletions, request);
    default: break;
  }
  return ErrorResponse(absl::InternalError("unrouted request"));
}

HttpResponse OpenAiServer::TransportError(int status, std::string message) {
  return ErrorResponse(WithHttpStatus(absl::InvalidArgumentError(std::move(message)), status));
}

}  // namespace llmserve
