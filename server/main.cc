// llmserve: the gRPC server binary. Flags → ServerConfig (validated) → RunServer
// (server/server_runner.h has the startup and shutdown sequence).
//
// Flags (absl's; the engine's shared with llmrun, server/engine_flags.h) take "--name=value"
// or "--name value"; dashes and underscores in names are interchangeable. A bad flag or
// value: a message on stderr and exit code 2 (kBadFlagsExitCode). --help: exit 0.
#include <iostream>
#include <string>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "server/engine_flags.h"
#include "server/model_setup.h"
#include "server/server_config.h"
#include "server/server_runner.h"
#include "server/signals.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

// Server-only flags; the engine's are in server/engine_flags.cc. Defaults: ServerConfig's.
ABSL_FLAG(std::string, model_name, llmserve::ServerConfig{}.model_name,
          "name GetModelInfo reports; empty = from the model path");
ABSL_FLAG(std::string, chat_template, llmserve::ServerConfig{}.chat_template_path,
          "Jinja chat template file for chat inputs; empty = the model's own (tokenizer_config.json, GGUF)");
ABSL_FLAG(std::string, host, llmserve::ServerConfig{}.host, "address to listen on");
ABSL_FLAG(int32_t, port, llmserve::ServerConfig{}.port, "gRPC port (0 = any free port, logged)");
ABSL_FLAG(int32_t, metrics_port, llmserve::ServerConfig{}.metrics_port,
          "Prometheus metrics port (GET /metrics on --host; 0 = off)");
ABSL_FLAG(std::string, metrics_host, llmserve::ServerConfig{}.metrics_host,
          "address the metrics port listens on; empty = --host (127.0.0.1 keeps /metrics off the network)");
ABSL_FLAG(std::string, metrics_tls, llmserve::ServerConfig{}.metrics_tls ? "on" : "off",
          "on: serve /metrics over HTTPS with the --tls-cert/--tls-key pair (scrape with scheme https); off: HTTP");
ABSL_FLAG(std::string, metrics_prefix, llmserve::ServerConfig{}.metrics_prefix,
          "metric name prefix, [a-zA-Z_:][a-zA-Z0-9_:]* (e.g. vllm: for vLLM dashboards)");
ABSL_FLAG(int32_t, http_port, llmserve::ServerConfig{}.http_port,
          "port of the OpenAI-compatible HTTP API (/v1/completions, /v1/chat/completions, /v1/models, /health) "
          "on --host, with the gRPC port's TLS and API keys; 0 = off");
ABSL_FLAG(int32_t, http_threads, llmserve::ServerConfig{}.http_threads,
          "I/O threads of the HTTP API: they read, write and run the handlers (parsing, tokenizing); a "
          "connection, streaming or waiting, holds none");
ABSL_FLAG(int32_t, http_max_connections, llmserve::ServerConfig{}.http_max_connections,
          "HTTP connections open at once (API and metrics ports each); beyond: refused at once with 503");
ABSL_FLAG(int32_t, http_max_connections_per_address, llmserve::ServerConfig{}.http_max_connections_per_address,
          "HTTP connections open at once from one client address (0 = no cap; a load balancer in front counts as "
          "one address)");
ABSL_FLAG(int32_t, http_idle_timeout, llmserve::ServerConfig{}.http_idle_timeout_seconds,
          "seconds an HTTP connection may stay silent before a request's first byte (new or keep-alive)");
ABSL_FLAG(int32_t, http_header_timeout, llmserve::ServerConfig{}.http_header_timeout_seconds,
          "seconds from a request's first byte to the end of its head (request line and headers); else closed");
ABSL_FLAG(int32_t, http_body_timeout, llmserve::ServerConfig{}.http_body_timeout_seconds,
          "seconds a request body may take before --http-body-min-rate counts: the connection closes when no "
          "byte arrives by head + this + received / rate");
ABSL_FLAG(int32_t, http_body_min_rate, llmserve::ServerConfig{}.http_body_min_rate,
          "bytes per second a request body must average beyond --http-body-timeout (0 = no rate)");
ABSL_FLAG(int32_t, http_max_header_bytes, llmserve::ServerConfig{}.http_max_header_bytes,
          "bytes of an HTTP request's line and headers; beyond: 431 and the connection closes");
ABSL_FLAG(int32_t, http_max_pipelined, llmserve::ServerConfig{}.http_max_pipelined,
          "HTTP requests read ahead on one connection (pipelined) while an earlier one is answered");
ABSL_FLAG(int32_t, http_write_timeout, llmserve::ServerConfig{}.http_write_timeout_seconds,
          "seconds a write to an HTTP client may take; a client that reads nothing that long is dropped (its "
          "request aborted)");
ABSL_FLAG(std::string, reflection, llmserve::ReflectionModeName(llmserve::ServerConfig{}.reflection),
          "on: serve gRPC server reflection (grpcurl, Postman list and describe the services), with "
          "--api-key-file only to callers with a key; open: serve it to anyone; off: do not serve it");
ABSL_FLAG(std::string, tls_cert, llmserve::ServerConfig{}.tls.cert_path,
          "PEM certificate chain for the gRPC port (with --tls-key: TLS; re-read when the file changes)");
ABSL_FLAG(std::string, tls_key, llmserve::ServerConfig{}.tls.key_path, "PEM private key of --tls-cert");
ABSL_FLAG(std::string, tls_client_ca, llmserve::ServerConfig{}.tls.client_ca_path,
          "PEM CA bundle: clients must present a certificate it signed (mutual TLS)");
ABSL_FLAG(int32_t, tls_reload_interval, llmserve::ServerConfig{}.tls.reload_seconds,
          "seconds between checks of the TLS files for a renewed certificate, key or CA");
ABSL_FLAG(std::string, api_key_file, llmserve::ServerConfig{}.api_key_file,
          "file of API keys (one per line, or sha256:<hex>); every llmserve.v1 call and reflection (unless "
          "--reflection=open) must send 'authorization: Bearer <key>' (health needs none); SIGHUP re-reads it");
ABSL_FLAG(int32_t, max_streams_per_connection, llmserve::ServerConfig{}.max_streams_per_connection,
          "calls one client connection may have open at once (HTTP/2 max concurrent streams)");
ABSL_FLAG(int64_t, max_request_bytes, llmserve::ServerConfig{}.max_request_bytes,
          "largest request message accepted, in bytes (larger: RESOURCE_EXHAUSTED before parsing)");
ABSL_FLAG(int64_t, max_prompt_bytes, llmserve::ServerConfig{}.max_prompt_bytes,
          "bytes of prompt text (Generate text, chat roles + contents, Tokenize text) accepted before tokenizing "
          "(larger: INVALID_ARGUMENT); 0 = 32 per token of context, at least 4096, at most --max-request-bytes");
ABSL_FLAG(int32_t, drain_delay, llmserve::ServerConfig{}.drain_delay_seconds,
          "seconds after SIGTERM/SIGINT during which the server still serves, health NOT_SERVING (time for load "
          "balancers to notice) before it refuses new calls");
ABSL_FLAG(int32_t, drain_timeout, llmserve::ServerConfig{}.drain_timeout_seconds,
          "seconds in-flight streams may take to finish once new calls are refused (after --drain-delay)");
ABSL_FLAG(std::string, log_level, llmserve::ServerConfig{}.log_level,
          "trace (adds a line per engine step), debug, info, warn or error");

namespace {

using llmserve::ServerConfig;

constexpr char kUsage[] =
    "[--flag=value ...]\n"
    "Serves a language model over gRPC (llmserve.v1.LlmService, grpc.health.v1.Health, reflection unless\n"
    "--reflection=off), and with --http-port over the OpenAI-compatible HTTP API.\n"
    "SIGHUP re-reads --api-key-file. SIGTERM/SIGINT: health NOT_SERVING; after --drain-delay the port closes (new calls are refused)\n"
    "and in-flight streams finish (up to --drain-timeout); exit 0. A second signal exits at once.\n"
    "Flags take --name=value or --name value; dashes and underscores are interchangeable\n"
    "(--max-running 8 is --max_running=8). --helpfull lists absl's own flags too.";

// The parsed flags as a validated config.
absl::StatusOr<ServerConfig> ConfigFromFlags() {
  auto spec = llmserve::EngineSpecFromFlags();
  if (!spec.ok()) return spec.status();
  ServerConfig c;
  static_cast<llmserve::EngineSpec&>(c) = *std::move(spec);
  c.model_name = absl::GetFlag(FLAGS_model_name);
  c.chat_template_path = absl::GetFlag(FLAGS_chat_template);
  c.host = absl::GetFlag(FLAGS_host);
  c.port = absl::GetFlag(FLAGS_port);
  c.metrics_port = absl::GetFlag(FLAGS_metrics_port);
  c.metrics_host = absl::GetFlag(FLAGS_metrics_host);
  c.metrics_prefix = absl::GetFlag(FLAGS_metrics_prefix);
  c.http_port = absl::GetFlag(FLAGS_http_port);
  c.http_threads = absl::GetFlag(FLAGS_http_threads);
  c.http_max_connections = absl::GetFlag(FLAGS_http_max_connections);
  c.http_max_connections_per_address = absl::GetFlag(FLAGS_http_max_connections_per_address);
  c.http_idle_timeout_seconds = absl::GetFlag(FLAGS_http_idle_timeout);
  c.http_header_timeout_seconds = absl::GetFlag(FLAGS_http_header_timeout);
  c.http_body_timeout_seconds = absl::GetFlag(FLAGS_http_body_timeout);
  c.http_body_min_rate = absl::GetFlag(FLAGS_http_body_min_rate);
  c.http_write_timeout_seconds = absl::GetFlag(FLAGS_http_write_timeout);
  c.http_max_header_bytes = absl::GetFlag(FLAGS_http_max_header_bytes);
  c.http_max_pipelined = absl::GetFlag(FLAGS_http_max_pipelined);
  absl::StatusOr<bool> metrics_tls = llmserve::ParseOnOff("metrics-tls", absl::GetFlag(FLAGS_metrics_tls));
  if (!metrics_tls.ok()) return metrics_tls.status();
  c.metrics_tls = *metrics_tls;
  c.tls.cert_path = absl::GetFlag(FLAGS_tls_cert);
  c.tls.key_path = absl::GetFlag(FLAGS_tls_key);
  c.tls.client_ca_path = absl::GetFlag(FLAGS_tls_client_ca);
  c.tls.reload_seconds = absl::GetFlag(FLAGS_tls_reload_interval);
  c.api_key_file = absl::GetFlag(FLAGS_api_key_file);
  c.max_streams_per_connection = absl::GetFlag(FLAGS_max_streams_per_connection);
  absl::StatusOr<llmserve::ReflectionMode> reflection = llmserve::ParseReflectionMode(absl::GetFlag(FLAGS_reflection));
  if (!reflection.ok()) return reflection.status();
  c.reflection = *reflection;
  c.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  c.max_prompt_bytes = absl::GetFlag(FLAGS_max_prompt_bytes);
  c.drain_delay_seconds = absl::GetFlag(FLAGS_drain_delay);
  c.drain_timeout_seconds = absl::GetFlag(FLAGS_drain_timeout);
  c.log_level = absl::GetFlag(FLAGS_log_level);
  if (absl::Status s = c.Validate(); !s.ok()) return s;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread exists, so that every thread inherits the blocked signals.
  auto signals = llmserve::SignalWatcher::Start();
  if (!signals.ok()) {
    std::cerr << "llmserve: " << signals.status().message() << "\n";
    return 1;
  }
  llmserve::CommandLineOptions options;
  options.usage = kUsage;
  options.version = absl::StrCat("llmserve ", llmserve::kLlmserveVersion);
  options.help_files = {"server/main.cc"};
  llmserve::ParseCommandLineOrExit(argc, argv, options);
  absl::StatusOr<ServerConfig> config = ConfigFromFlags();
  if (!config.ok()) {
    std::cerr << "llmserve: " << config.status().message() << "\n";
    return llmserve::kBadFlagsExitCode;
  }
  spdlog::set_default_logger(spdlog::stderr_logger_mt("llmserve"));
  spdlog::set_level(spdlog::level::from_str(config->log_level));
  // Every gRPC server built afterwards gets reflection, unless --reflection=off drops it
  // (server_runner.cc).
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  return llmserve::RunServer(*config, **signals);
}
