// The metrics exposer keeps serving scrapes while idle TCP connections are open: idle
// connections neither take every worker nor hold one for long. A busy port is an error.
// Over TLS (certificates from tests/integration/make_test_certs.sh) it serves HTTPS only,
// and a renewed certificate without a restart.
#include "server/metrics_exposer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "httplib.h"
#include "tests/util/subprocess.h"

#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"

namespace llmserve {
namespace {

// A connected TCP socket to 127.0.0.1:port whose reads give up after `timeout_s`; -1 on
// failure.
int Connect(int port, int timeout_s) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval tv{timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// GET /metrics; the whole response, or what arrived before a read timed out.
std::string Scrape(int port, int timeout_s) {
  const int fd = Connect(port, timeout_s);
  if (fd < 0) return "";
  const std::string req = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  if (send(fd, req.data(), req.size(), 0) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return "";
  }
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

class MetricsExposerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_ = std::make_shared<prometheus::Registry>();
    prometheus::BuildCounter().Name("exposer_test_total").Help("test").Register(*registry_).Add({}).Increment();
    http::HttpServerOptions options;
    options.idle_timeout = absl::Seconds(1);  // silent connections go soon
    auto started = MetricsExposer::Start("127.0.0.1", 0, registry_, nullptr, options);
    ASSERT_TRUE(started.ok()) << started.status();
    exposer_ = *std::move(started);
    ASSERT_GT(exposer_->port(), 0);
  }
  void TearDown() override {
    for (int fd : idle_) close(fd);
  }
  void OpenIdle(int n) {
    for (int i = 0; i < n; ++i) {
      const int fd = Connect(exposer_->port(), 10);
      ASSERT_GE(fd, 0);
      idle_.push_back(fd);
    }
  }

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<MetricsExposer> exposer_;
  std::vector<int> idle_;
};

TEST_F(MetricsExposerTest, ServesAScrape) {
  const std::string r = Scrape(exposer_->port(), 10);
  EXPECT_NE(r.find("200 OK"), std::string::npos) << r;
  EXPECT_NE(r.find("exposer_test_total 1"), std::string::npos) << r;
}

// Silent connections hold no thread: with many open, a scrape is answered at once.
TEST_F(MetricsExposerTest, IdleConnectionsDoNotBlockAScrape) {
  OpenIdle(200);
  const std::string r = Scrape(exposer_->port(), 5);
  EXPECT_NE(r.find("exposer_test_total 1"), std::string::npos) << "scrape with 200 idle connections open: " << r;
}

// A silent connection is closed by the exposer after its idle timeout (a read returns 0,
// not the client's 10 s receive timeout).
TEST_F(MetricsExposerTest, IdleConnectionsAreClosed) {
  OpenIdle(24);
  char c;
  for (int fd : idle_) EXPECT_EQ(recv(fd, &c, 1, 0), 0);
}

TEST_F(MetricsExposerTest, ABusyPortIsUnavailable) {
  auto second = MetricsExposer::Start("127.0.0.1", exposer_->port(), registry_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find(absl::StrCat("127.0.0.1:", exposer_->port())), std::string::npos);
}

class MetricsExposerTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / absl::StrCat("llmserve-metrics-tls-", getpid());
    std::filesystem::create_directories(dir_ / "live");
    testing::Subprocess p({"/bin/bash", LLMSERVE_SOURCE_DIR "/tests/integration/make_test_certs.sh", dir_.string()});
    const testing::ProcessResult r = p.Wait();
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::filesystem::copy_file(dir_ / "server.pem", dir_ / "live/tls.crt");
    std::filesystem::copy_file(dir_ / "server.key", dir_ / "live/tls.key");
    files_.cert_path = (dir_ / "live/tls.crt").string();
    files_.key_path = (dir_ / "live/tls.key").string();
    files_.reload_seconds = 1;
    registry_ = std::make_shared<prometheus::Registry>();
    prometheus::BuildCounter().Name("exposer_test_total").Help("test").Register(*registry_).Add({}).Increment();
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // The subject CN of the certificate the server presents (openssl s_client), and whether
  // the chain verified against the test CA.
  std::string ServedCommonName(int port, bool* verified) {
    testing::Subprocess p({"/usr/bin/openssl", "s_client", "-connect", absl::StrCat("127.0.0.1:", port), "-CAfile",
                           (dir_ / "ca.pem").string(), "-verify_return_error"});
    const testing::ProcessResult r = p.Wait();
    *verified = r.out.find("Verify return code: 0 (ok)") != std::string::npos;
    const size_t at = r.out.find("subject=CN = ");
    if (at == std::string::npos) return "";
    return r.out.substr(at + 13, r.out.find('\n', at) - at - 13);
  }

  std::filesystem::path dir_;
  TlsFiles files_;
  std::shared_ptr<prometheus::Registry> registry_;
};

TEST_F(MetricsExposerTlsTest, ServesHttpsOnlyAndARenewedCertificate) {
  auto exposer = MetricsExposer::Start("127.0.0.1", 0, registry_, &files_);
  ASSERT_TRUE(exposer.ok()) << exposer.status();
  const int port = (*exposer)->port();

  httplib::SSLClient client("127.0.0.1", port);
  client.set_ca_cert_path((dir_ / "ca.pem").string().c_str());
  client.enable_server_certificate_verification(true);
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  httplib::Result got = client.Get("/metrics");
  ASSERT_TRUE(got) << "HTTPS scrape failed: " << httplib::to_string(got.error());
  EXPECT_EQ(got->status, 200);
  EXPECT_NE(got->body.find("exposer_test_total 1"), std::string::npos) << got->body;
  // Plain HTTP gets no metrics.
  EXPECT_EQ(Scrape(port, 5).find("exposer_test_total"), std::string::npos);

  bool verified = false;
  EXPECT_EQ(ServedCommonName(port, &verified), "llmserve-test-server");
  EXPECT_TRUE(verified);
  for (const char* name : {"key", "crt"}) {
    const std::filesystem::path live = dir_ / "live" / absl::StrCat("tls.", name);
    const std::filesystem::path tmp = live.string() + ".new";
    std::filesystem::copy_file(dir_ / (std::string("renewed.") + (name == std::string("key") ? "key" : "pem")), tmp);
    std::filesystem::rename(tmp, live);
  }
  std::string cn;
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while ((cn = ServedCommonName(port, &verified)) != "llmserve-test-renewed" && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(200));
  }
  EXPECT_EQ(cn, "llmserve-test-renewed");
  EXPECT_TRUE(verified);
}

TEST_F(MetricsExposerTlsTest, AKeyThatIsNotTheCertificatesIsAnError) {
  files_.key_path = (dir_ / "client.key").string();
  auto exposer = MetricsExposer::Start("127.0.0.1", 0, registry_, &files_);
  ASSERT_FALSE(exposer.ok());
  EXPECT_NE(exposer.status().message().find("is not the key of the certificate"), std::string::npos)
      << exposer.status();
}

}  // namespace
}  // namespace llmserve
