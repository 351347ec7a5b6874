#include "server/server_config.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/request_convert.h"

namespace llmserve {
absl::Status ServerConfig::Validate() const {
  if (absl::Status s = EngineSpec::Validate(); !s.ok()) return s;
  if (host.empty()) return absl::InvalidArgumentError("--host must not be empty (0.0.0.0 = all interfaces)");
  if (absl::Status s = FlagInRange("port", port, 0, 65535, " (0 = any free port)"); !s.ok()) return s;
  if (absl::Status s = FlagInRange("metrics-port", metrics_port, 0, 65535, " (0 = no metrics)"); !s.ok()) return s;
  if (metrics_port != 0 && metrics_port == port) {
    return absl::InvalidArgumentError(absl::StrCat("--metrics-port=", metrics_port, " is the same as --port"));
  }
  if (absl::Status s = FlagInRange("http-port", http_port, 0, 65535, " (0 = no HTTP API)"); !s.ok()) return s;
  if (http_port != 0 && (http_port == port || http_port == metrics_port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http-port=", http_port, " is the same as --", http_port == port ? "port" : "metrics-port"));
  }
  if (absl::Status s = FlagInRange("http-threads", http_threads, 1, 256, ""); !s.ok()) return s;
  if (absl::Status s = FlagInRange("http-max-connections", http_max_connections, 1, 1 << 20, ""); !s.ok()) return s;
  if (absl::Status s = FlagInRange("http-max-connections-per-address", http_max_connections_per_address, 0, 1 << 20,
                                   " (0 = no cap)");
      !s.ok()) {
    return s;
  }
  for (const auto& [flag, value] : {std::pair{"http-idle-timeout", http_idle_timeout_seconds},
                                    std::pair{"http-header-timeout", http_header_timeout_seconds},
                                    std::pair{"http-body-timeout", http_body_timeout_seconds},
                                    std::pair{"http-write-timeout", http_write_timeout_seconds}}) {
    if (absl::Status s = FlagInRange(flag, value, 1, 86400, " seconds"); !s.ok()) return s;
  }
  if (absl::Status s = FlagInRange("http-body-min-rate", http_body_min_rate, 0, 1 << 30, " bytes/s (0 = no rate)");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = FlagInRange("http-max-header-bytes", http_max_header_bytes, 1 << 10, 1 << 20, " bytes");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = FlagInRange("http-max-pipelined", http_max_pipelined, 1, 1024, ""); !s.ok()) return s;
  if (!ValidMetricsPrefix(metrics_prefix)) {
    return absl::InvalidArgumentError(absl::StrCat("--metrics-prefix=", metrics_prefix,
                                                   ": must match [a-zA-Z_:][a-zA-Z0-9_:]* (e.g. llmserve_ or vllm:)"));
  }
  if (absl::Status s = FlagInRange("max-request-bytes", max_request_bytes, 1024, int64_t{1} << 30, " bytes");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = FlagInRange("max-prompt-bytes", max_prompt_bytes, 0, max_request_bytes,
                                   " bytes (0 = from the context length; at most --max-request-bytes)");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = FlagInRange("max-streams-per-connection", max_streams_per_connection, 1, 1 << 20, "");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = tls.Validate(); !s.ok()) return s;
  if (metrics_tls && !tls.enabled()) {
    return absl::InvalidArgumentError("--metrics-tls=on needs --tls-cert and --tls-key (the metrics port serves that pair)");
  }
  if (absl::Status s = FlagInRange("drain-delay", drain_delay_seconds, 0, 3600, " seconds"); !s.ok()) return s;
  if (absl::Status s = FlagInRange("drain-timeout", drain_timeout_seconds, 0, 24 * 3600, " seconds"); !s.ok()) return s;
  static constexpr const char* kLevels[] = {"trace", "debug", "info", "warn", "error"};
  if (std::find(std::begin(kLevels), std::end(kLevels), log_level) == std::end(kLevels)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-level=", log_level, ": must be one of trace, debug, info, warn, error"));
  }
  return absl::OkStatus();
}

std::string ServerConfig::ListenAddress() const {
  const bool v6 = host.find(':') != std::string::npos && host.front() != '[';
  return v6 ? absl::StrCat("[", host, "]:", port) : absl::StrCat(host, ":", port);
}

http::HttpServerOptions ServerConfig::HttpOptions(std::string name) const {
  http::HttpServerOptions o;
  o.name = std::move(name);
  o.threads = http_threads;
  o.max_connections = http_max_connections;
  o.max_connections_per_address = http_max_connections_per_address;
  o.idle_timeout = absl::Seconds(http_idle_timeout_seconds);
  o.header_timeout = absl::Seconds(http_header_timeout_seconds);
  o.body_timeout = absl::Seconds(http_body_timeout_seconds);
  o.body_min_rate = http_body_min_rate;
  o.write_timeout = absl::Seconds(http_write_timeout_seconds);
  o.max_header_bytes = static_cast<size_t>(http_max_header_bytes);
  o.max_body_bytes = static_cast<size_t>(max_request_bytes);
  o.max_pipelined = http_max_pipelined;
  return o;
}

int64_t ServerConfig::EffectiveMaxPromptBytes(int32_t max_context) const {
  return max_prompt_bytes > 0 ? max_prompt_bytes : std::min(max_request_bytes, DefaultMaxPromptBytes(max_context));
}

absl::StatusOr<ReflectionMode> ParseReflectionMode(const std::string& value) {
  if (value == "on") return ReflectionMode::kOn;
  if (value == "off") return ReflectionMode::kOff;
  if (value == "open") return ReflectionMode::kOpen;
  return absl::InvalidArgumentError(absl::StrCat(
      "--reflection=", value, ": must be on (needs a key with --api-key-file), off or open (never needs a key)"));
}

const char* ReflectionModeName(ReflectionMode mode) {
  switch (mode) {
    case ReflectionMode::kOff: return "off";
    case ReflectionMode::kOn: return "on";
    case ReflectionMode::kOpen: return "open";
  }
  return "?";
}

bool ValidMetricsPrefix(const std::string& p) {
  const auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; };
  if (p.empty() || !letter(p[0])) return false;
  for (char c : p) {
    if (!letter(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

std::string ServerConfig::HttpAddress() const {
  const bool v6 = host.find(':') != std::string::npos && host.front() != '[';
  return v6 ? absl::StrCat("[", host, "]:", http_port) : absl::StrCat(host, ":", http_port);
}

std::string ServerConfig::MetricsAddress() const {
  const std::string& h = metrics_host.empty() ? host : metrics_host;
  const bool v6 = h.find(':') != std::string::npos && h.front() != '[';
  return v6 ? absl::StrCat("[", h, "]:", metrics_port) : absl::StrCat(h, ":", metrics_port);
}

}  // namespace llmserve
