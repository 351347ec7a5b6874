// PrometheusServer: a real Prometheus (/usr/bin/prometheus, Debian package `prometheus`)
// started on a free loopback port for end-to-end tests, with a generated configuration and
// its TSDB in a scratch directory, plus a tiny HTTP/1.0 client for its query API.
//
//   Start(config_yaml)  write prometheus.yml, fork/exec prometheus (log → a file), wait
//                       (bounded) until GET /-/ready answers 200
//   Query(expr)         GET /api/v1/query?query=... (instant query at "now"), parsed
//   Rules()             GET /api/v1/rules: the loaded recording rules
//   the destructor SIGKILLs the process (also on every failure path) and removes the
//   scratch directory; the child gets PDEATHSIG so a killed test leaves nothing behind.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace llmserve::testing {

// Path of the Prometheus server binary ("" if not installed).
std::string PrometheusBinary();

// GET http://127.0.0.1:port/target over a bare socket (HTTP/1.0, the server closes):
// the body, or an error for a failed connection or a status other than 200.
absl::StatusOr<std::string> HttpGet(int port, const std::string& target, absl::Duration timeout = absl::Seconds(10));

// Percent-encodes everything but RFC 3986 unreserved characters (for a query parameter).
std::string UrlEncode(const std::string& s);

// One series of an instant query's result.
struct PromSeries {
  std::map<std::string, std::string> labels;  // __name__ included when the result keeps it
  double value = 0;                           // NaN / ±Inf as Prometheus says
};

// One rule as Prometheus loaded it.
struct PromRule {
  std::string group;
  bool recording = false;  // a recording rule (else an alerting rule)
  std::string name;        // the recorded series' name, or the alert's
  std::string query;      // its expression
  std::string health;     // "ok", "err" or "unknown" (not evaluated yet)
  std::string last_error;
};

class PrometheusServer {
 public:
  // Starts Prometheus with `config_yaml` as its configuration file and waits until it is
  // ready (up to `timeout`). nullptr (with the reason and the log in *error) otherwise.
  static std::unique_ptr<PrometheusServer> Start(const std::string& config_yaml, std::string* error,
                                                 absl::Duration timeout = absl::Seconds(30));
  ~PrometheusServer();

  int port() const { return port_; }
  // Instant query at the current time: the result series (vector, scalar or matrix
  // results; a scalar is one series without labels), or the API's error.
  absl::StatusOr<std::vector<PromSeries>> Query(const std::string& expr) const;
  // Every rule (recording and alerting) of every loaded group.
  absl::StatusOr<std::vector<PromRule>> Rules() const;
  // Everything Prometheus logged so far.
  std::string Log() const;

 private:
  PrometheusServer() = default;

  pid_t pid_ = -1;
  int port_ = 0;
  std::string dir_;
};

}  // namespace llmserve::testing
