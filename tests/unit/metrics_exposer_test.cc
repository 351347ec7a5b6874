// The metrics exposer keeps serving scrapes while idle TCP connections are open: idle
// connections neither take every worker nor hold one for long.
#include "server/metrics_exposer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <string>
#include <vector>

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
    auto started = StartMetricsExposer("127.0.0.1:0", registry_);
    ASSERT_TRUE(started.ok()) << started.status();
    exposer_ = *std::move(started);
    ASSERT_GT(exposer_.port, 0);
  }
  void TearDown() override {
    for (int fd : idle_) close(fd);
  }
  void OpenIdle(int n) {
    for (int i = 0; i < n; ++i) {
      const int fd = Connect(exposer_.port, 1);
      ASSERT_GE(fd, 0);
      idle_.push_back(fd);
    }
  }

  std::shared_ptr<prometheus::Registry> registry_;
  MetricsExposer exposer_;
  std::vector<int> idle_;
};

TEST_F(MetricsExposerTest, ServesAScrape) {
  const std::string r = Scrape(exposer_.port, 10);
  EXPECT_NE(r.find("200 OK"), std::string::npos) << r;
  EXPECT_NE(r.find("exposer_test_total 1"), std::string::npos) << r;
}

// A few silent connections (fewer than the workers) do not delay a scrape at all: the
// 5 s read timeout is far below how long a silent connection may hold a worker.
TEST_F(MetricsExposerTest, FewIdleConnectionsDoNotBlockAScrape) {
  OpenIdle(4);
  const std::string r = Scrape(exposer_.port, 5);
  EXPECT_NE(r.find("exposer_test_total 1"), std::string::npos) << "scrape with 4 idle connections open: " << r;
}

// More silent connections than workers: each is dropped after the exposer's short request
// timeout, so the scrape is answered within seconds, not after tens of seconds.
TEST_F(MetricsExposerTest, ManyIdleConnectionsAreDroppedSoon) {
  OpenIdle(24);
  const std::string r = Scrape(exposer_.port, 15);
  EXPECT_NE(r.find("exposer_test_total 1"), std::string::npos) << "scrape with 24 idle connections open: " << r;
  // The idle connections themselves were closed by the exposer (a read returns 0, not a
  // timeout).
  char c;
  EXPECT_EQ(recv(idle_.front(), &c, 1, 0), 0);
}

}  // namespace
}  // namespace llmserve
