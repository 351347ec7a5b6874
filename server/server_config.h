// ServerConfig: everything the llmserve binary is told on its command line (server/main.cc
// fills it from flags): the engine's EngineSpec (server/engine_spec.h, shared with llmrun
// and engine_bench) plus the server's own settings, with the defaults and one Validate().
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/engine_spec.h"
#include "server/http/http_server.h"
#include "server/tls_credentials.h"

namespace llmserve {

// --reflection: whether gRPC server reflection (grpc.reflection.v1alpha.ServerReflection)
// is served, and whether it needs an API key.
enum class ReflectionMode {
  kOff,   // not served (UNIMPLEMENTED)
  kOn,    // served; with --api-key-file it needs a key like llmserve.v1 (it names every method)
  kOpen,  // served to anyone, keys or not (health always is)
};

struct ServerConfig : EngineSpec {
  // Model (the files are EngineSpec's).
  std::string model_name;          // reported by GetModelInfo; "" = from the path ("demo" for the demo)
  std::string chat_template_path;  // --chat-template: a Jinja file overriding the model's own ("" = the model's)

  // Network.
  std::string host = "0.0.0.0";    // address to listen on (IPv4, IPv6 or a name)
  int32_t port = 50051;            // 0 = any free port (the chosen one is logged)
  int32_t metrics_port = 9400;     // Prometheus /metrics on metrics_host:metrics_port; 0 = off
  std::string metrics_host;        // "" = host (a pod's Prometheus scrapes the pod address)
  bool metrics_tls = false;        // serve /metrics over HTTPS with the --tls-cert pair
  std::string metrics_prefix = "llmserve_";  // metric name prefix, [a-zA-Z_:][a-zA-Z0-9_:]* ("vllm:")
  ReflectionMode reflection = ReflectionMode::kOn;  // gRPC server reflection, if the binary links it
  int32_t http_port = 0;           // the OpenAI-compatible HTTP API on host:http_port; 0 = off
  // The HTTP servers (the API and metrics ports; server/http/http_server.h). No connection
  // holds a thread: the threads read, write and run the handlers (parse, tokenize).
  int32_t http_threads = 4;                        // I/O threads of the HTTP API (metrics: 1)
  int32_t http_max_connections = 1024;             // open at once; beyond: refused at once
  int32_t http_max_connections_per_address = 256;  // from one client address (0 = no cap)
  int32_t http_idle_timeout_seconds = 5;           // a connection silent before a request's first byte
  int32_t http_header_timeout_seconds = 10;        // first byte → the whole request head
  int32_t http_body_timeout_seconds = 10;          // the body's allowance, beyond which ...
  int32_t http_body_min_rate = 1024;               // ... it must average this many bytes/s (0 = no rate)
  int32_t http_write_timeout_seconds = 30;         // a client that accepts none of a response this long
  int32_t http_max_header_bytes = 16 << 10;        // a request's line and headers; beyond: 431
  int32_t http_max_pipelined = 16;                 // requests read ahead of the one being answered

  // Security (docs/OPERATIONS.md "Security").
  TlsFiles tls;                    // --tls-cert, --tls-key, --tls-client-ca, --tls-reload-interval
  std::string api_key_file;        // keys every llmserve.v1 RPC must carry (server/api_keys.h); "" = none

  // Bounded work per request.
  int64_t max_request_bytes = 4 << 20;  // largest request message gRPC accepts (RESOURCE_EXHAUSTED beyond)
  int64_t max_prompt_bytes = 0;         // text checked before tokenizing (request_convert.h); 0 = derived
                                        // from the context (DefaultMaxPromptBytes), capped at max_request_bytes
  int32_t max_streams_per_connection = 256;  // HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS: a client's further
                                             // calls wait in the client until one ends

  // Lifecycle.
  int32_t drain_delay_seconds = 0;     // SIGTERM: serve on (health NOT_SERVING) this long before refusing
  int32_t drain_timeout_seconds = 30;  // then: how long in-flight streams may finish
  std::string log_level = "info";  // trace, debug, info, warn, error

  // INVALID_ARGUMENT naming the flag (--name) and the allowed range (EngineSpec's checks
  // included).
  absl::Status Validate() const;

  // "host:port", with an IPv6 literal bracketed.
  std::string ListenAddress() const;
  // The same for metrics_port, on metrics_host (or host).
  std::string MetricsAddress() const;
  // The same for http_port, on host.
  std::string HttpAddress() const;
  // The HTTP server's bounds from the http_* settings (and max_request_bytes), named `name`.
  http::HttpServerOptions HttpOptions(std::string name) const;
  // max_prompt_bytes, or when 0 the default for a context of `max_context` tokens.
  int64_t EffectiveMaxPromptBytes(int32_t max_context) const;
};

// --reflection's value: "on", "off" or "open"; INVALID_ARGUMENT otherwise.
absl::StatusOr<ReflectionMode> ParseReflectionMode(const std::string& value);
// The flag value of `mode`.
const char* ReflectionModeName(ReflectionMode mode);

// A Prometheus metric name prefix: non-empty, [a-zA-Z_:][a-zA-Z0-9_:]*.
bool ValidMetricsPrefix(const std::string& prefix);

}  // namespace llmserve
