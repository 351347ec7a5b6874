// The fixture of http_hardening_test: llmserve with its HTTP API (and metrics) on free
// loopback ports and the HTTP hardening flags of issue 44 (--http-idle-timeout, ...). A
// server that does not know such a flag refuses to start ("Unknown command line flag"):
// the test then fails saying so, as expected of the cpp-httplib server.
#pragma once

#include <sys/resource.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/raw_http.h"
#include "tests/integration/server_process.h"
#include "tests/util/test_assets.h"

namespace llmserve::testing {

class HttpHardeningTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {  // slowloris opens hundreds of sockets
    rlimit r{};
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
      r.rlim_cur = r.rlim_max;
      setrlimit(RLIMIT_NOFILE, &r);
    }
  }

  // Starts llmserve on stories260K (or the built-in demo model: context 2048 and slower,
  // for long generations) with --http-port, --metrics-port and `flags`.
  void Start(const std::vector<std::string>& flags, bool demo = false) {
    std::vector<std::string> args = {"--threads=2"};
    if (!demo) {
      LLMSERVE_REQUIRE_ASSET(model, "models/llama2c/stories260K.bin");
      args = Stories260KArgs(model, AssetPath("models/llama2c/tok512.bin"));
    }
    http_port_ = PickFreePort();
    metrics_port_ = PickFreePort();
    args.push_back(absl::StrCat("--http-port=", http_port_));
    args.push_back(absl::StrCat("--metrics-port=", metrics_port_));
    args.insert(args.end(), flags.begin(), flags.end());
    std::string error;
    server_ = ServerProcess::Start(args, &error);
    if (server_ == nullptr) {
      const size_t at = error.find("Unknown command line flag");
      ASSERT_EQ(at, std::string::npos)
          << "llmserve does not know a flag this test needs (expected of the cpp-httplib server): "
          << error.substr(at, error.find('\n', at) - at);
      FAIL() << error;
    }
    stub_ = server_->stub();
  }

  // A fresh connection to the HTTP API (or `port`); fails the test when it cannot connect.
  RawConnection Connect(const ConnectOptions& options = {}, int port = 0) {
    std::string error;
    const int fd = ConnectTo(port > 0 ? port : http_port_, options, &error);
    EXPECT_GE(fd, 0) << error;
    return RawConnection(fd);
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<llmserve::v1::LlmService::Stub> stub_;
  int http_port_ = 0;
  int metrics_port_ = 0;
};

// Milliseconds, for log lines.
inline double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

}  // namespace llmserve::testing
