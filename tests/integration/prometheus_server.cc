#include "tests/integration/prometheus_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/server_process.h"

namespace llmserve::testing {
namespace {

using json = nlohmann::json;

// Parses a sample value as Prometheus writes it ("1.5", "NaN", "+Inf").
double ParseValue(const json& v) {
  if (!v.is_string()) return std::nan("");
  return std::strtod(v.get<std::string>().c_str(), nullptr);
}

// GETs `target` and returns the "data" member of a {"status":"success"} answer.
absl::StatusOr<json> ApiGet(int port, const std::string& target) {
  absl::StatusOr<std::string> body = HttpGet(port, target);
  if (!body.ok()) return body.status();
  json j = json::parse(*body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return absl::InternalError("not JSON: " + body->substr(0, 300));
  if (j.value("status", "") != "success" || !j.contains("data")) {
    return absl::InvalidArgumentError(absl::StrCat(j.value("errorType", "?"), ": ", j.value("error", *body)));
  }
  return j["data"];
}

}  // namespace

std::string PrometheusBinary() {
  std::error_code ec;
  return std::filesystem::exists("/usr/bin/prometheus", ec) ? "/usr/bin/prometheus" : "";
}

absl::StatusOr<std::string> HttpGet(int port, const std::string& target, absl::Duration timeout) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  timeval tv = absl::ToTimeval(timeout);  // a hung server fails the test instead of hanging it
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return absl::UnavailableError(absl::StrCat("connect to 127.0.0.1:", port, " failed"));
  }
  const std::string req = "GET " + target + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";  // 1.0: the server closes
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return absl::UnavailableError("send failed");
  }
  std::string resp;
  char buf[16384];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) resp.append(buf, static_cast<size_t>(n));
  close(fd);
  if (n < 0) return absl::DeadlineExceededError(absl::StrCat("no complete answer from ", target));
  const size_t body = resp.find("\r\n\r\n");
  const size_t line_end = resp.find("\r\n");
  if (resp.rfind("HTTP/1.", 0) != 0 || body == std::string::npos) {
    return absl::InternalError("not an HTTP response: " + resp.substr(0, 200));
  }
  const std::string status_line = resp.substr(0, line_end);
  // A 400 from the query API carries the PromQL error in its JSON body: hand it back.
  if (status_line.find(" 200 ") == std::string::npos && status_line.find(" 400 ") == std::string::npos &&
      status_line.find(" 422 ") == std::string::npos) {
    return absl::InternalError(absl::StrCat(status_line, ": ", resp.substr(body + 4, 300)));
  }
  return resp.substr(body + 4);
}

std::string UrlEncode(const std::string& s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

std::unique_ptr<PrometheusServer> PrometheusServer::Start(const std::string& config_yaml, std::string* error,
                                                          absl::Duration timeout) {
  const std::string binary = PrometheusBinary();
  if (binary.empty()) {
    *error = "/usr/bin/prometheus not found";
    return nullptr;
  }
  static int counter = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {  // a port taken between choosing and binding: retry
    std::unique_ptr<PrometheusServer> p(new PrometheusServer());
    p->port_ = PickFreePort();
    p->dir_ = (std::filesystem::temp_directory_path() / absl::StrCat("llmserve_prometheus_", getpid(), "_", counter++))
                  .string();
    std::filesystem::remove_all(p->dir_);
    std::filesystem::create_directories(p->dir_ + "/data");
    const std::string config_path = p->dir_ + "/prometheus.yml";
    std::ofstream(config_path) << config_yaml;
    // Everything the child needs is prepared before fork (this process has gRPC threads).
    std::vector<std::string> argv = {binary,
                                     "--config.file=" + config_path,
                                     "--storage.tsdb.path=" + p->dir_ + "/data",
                                     absl::StrCat("--web.listen-address=127.0.0.1:", p->port_),
                                     "--log.level=info"};
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    const int log_fd = open((p->dir_ + "/prometheus.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (log_fd < 0 || null_fd < 0) {
      *error = "cannot open the log file in " + p->dir_;
      return nullptr;
    }
    p->pid_ = fork();
    if (p->pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      dup2(null_fd, 0);
      dup2(log_fd, 1);
      dup2(log_fd, 2);
      execv(cargv[0], cargv.data());
      _exit(127);
    }
    close(log_fd);
    close(null_fd);
    if (p->pid_ < 0) {
      *error = "fork failed";
      return nullptr;
    }
    const absl::Time end = absl::Now() + timeout;
    bool exited = false;
    while (absl::Now() < end) {
      int status = 0;
      if (waitpid(p->pid_, &status, WNOHANG) == p->pid_) {
        exited = true;
        p->pid_ = -1;
        break;
      }
      if (HttpGet(p->port_, "/-/ready", absl::Seconds(2)).ok()) return p;
      absl::SleepFor(absl::Milliseconds(100));
    }
    *error = absl::StrCat(exited ? "prometheus exited" : "prometheus not ready in time", "; its log:\n", p->Log());
    if (!exited || p->Log().find("address already in use") == std::string::npos) return nullptr;
  }
  return nullptr;
}

PrometheusServer::~PrometheusServer() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const bool failed = test != nullptr && test->result()->Failed();
  if (failed && !dir_.empty()) std::cerr << "---- prometheus log (" << dir_ << ") ----\n" << Log() << "----\n";
  if (!dir_.empty() && std::getenv("LLMSERVE_TEST_KEEP_LOGS") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

absl::StatusOr<std::vector<PromSeries>> PrometheusServer::Query(const std::string& expr) const {
  absl::StatusOr<json> data = ApiGet(port_, "/api/v1/query?query=" + UrlEncode(expr));
  if (!data.ok()) return data.status();
  const std::string type = data->value("resultType", "");
  const json& result = (*data)["result"];
  std::vector<PromSeries> out;
  if (type == "scalar" || type == "string") {
    out.push_back({{}, result.is_array() && result.size() == 2 ? ParseValue(result[1]) : std::nan("")});
    return out;
  }
  if (!result.is_array()) return absl::InternalError("unexpected result: " + data->dump());
  for (const json& s : result) {
    PromSeries series;
    if (s.contains("metric") && s["metric"].is_object()) {
      for (const auto& [k, v] : s["metric"].items()) series.labels[k] = v.get<std::string>();
    }
    if (s.contains("value")) {
      series.value = ParseValue(s["value"][1]);
    } else if (s.contains("values") && !s["values"].empty()) {  // a matrix: its last sample
      series.value = ParseValue(s["values"].back()[1]);
    }
    out.push_back(std::move(series));
  }
  return out;
}

absl::StatusOr<std::vector<PromRule>> PrometheusServer::Rules() const {
  absl::StatusOr<json> data = ApiGet(port_, "/api/v1/rules");
  if (!data.ok()) return data.status();
  std::vector<PromRule> out;
  for (const json& g : data->value("groups", json::array())) {
    for (const json& r : g.value("rules", json::array())) {
      out.push_back({g.value("name", ""), r.value("type", "") == "recording", r.value("name", ""),
                     r.value("query", ""), r.value("health", ""), r.value("lastError", "")});
    }
  }
  return out;
}

std::string PrometheusServer::Log() const {
  std::ifstream in(dir_ + "/prometheus.log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace llmserve::testing
