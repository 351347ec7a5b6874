// GrpcListener: llmserve's own listening socket in front of a port-less grpc::Server.
// Calls go through it; a busy port fails to bind; after Close() the port refuses new
// connections while a connection accepted before still carries calls. Out of file
// descriptors, the accept thread backs off and logs once, then accepts when they return.
#include "server/grpc_listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "gtest/gtest.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "server/service_gate.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace llmserve {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// A health Check on `channel` with a short deadline.
grpc::Status Check(const std::shared_ptr<grpc::Channel>& channel) {
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  HealthCheckResponse resp;
  return Health::NewStub(channel)->Check(&ctx, HealthCheckRequest(), &resp);
}

// A channel of its own (no subchannel shared with other channels).
std::shared_ptr<grpc::Channel> NewChannel(int port) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel("ipv4:127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(),
                                   args);
}

TEST(GrpcListenerTest, ServesThroughItsPortAndRefusesNewConnectionsAfterClose) {
  absl::StatusOr<std::unique_ptr<GrpcListener>> listener = GrpcListener::Bind("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok()) << listener.status();
  const int port = (*listener)->port();
  ASSERT_GT(port, 0);
  // The port is taken: a second listener on it fails.
  EXPECT_FALSE(GrpcListener::Bind("127.0.0.1", port).ok());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  ServiceGate gate;  // some callback service, as in llmserve (the gate stays closed)
  builder.RegisterService(&gate);
  (*listener)->Attach(builder, grpc::InsecureServerCredentials());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  (*listener)->Start();

  auto before = NewChannel(port);
  const grpc::Status first = Check(before);
  ASSERT_TRUE(first.ok()) << first.error_code() << ": " << first.error_message();

  (*listener)->Close();
  (*listener)->Close();  // idempotent
  const grpc::Status still = Check(before);  // the connection accepted before the close
  EXPECT_TRUE(still.ok()) << still.error_code() << ": " << still.error_message();
  const grpc::Status refused = Check(NewChannel(port));
  EXPECT_EQ(refused.error_code(), grpc::UNAVAILABLE) << refused.error_message();

  server->Shutdown(absl::ToChronoTime(absl::Now()));
}

TEST(GrpcListenerTest, OutOfDescriptorsBacksOffLogsOnceAndRecovers) {
  absl::StatusOr<std::unique_ptr<GrpcListener>> listener = GrpcListener::Bind("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok()) << listener.status();
  const int port = (*listener)->port();
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  ServiceGate gate;
  builder.RegisterService(&gate);
  (*listener)->Attach(builder, grpc::InsecureServerCredentials());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  (*listener)->Start();
  ASSERT_TRUE(Check(NewChannel(port)).ok());

  std::ostringstream log;
  const std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  spdlog::set_default_logger(
      std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  // One line through the same formatting first: under UBSan the first check of a type's
  // vptr may open a pipe, which fails once descriptors are gone (a false report).
  spdlog::warn("warm-up: {} ({} since; every {})", std::strerror(EMFILE), int64_t{0}, std::string("1s"));
  // A client socket made while descriptors remain; connecting it later needs none.
  const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(client, 0);
  // Use up every descriptor under a lowered soft limit.
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  rlimit low = old;
  low.rlim_cur = std::min<rlim_t>(old.rlim_cur, 1024);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> filler;
  for (int fd; (fd = dup(client)) >= 0;) filler.push_back(fd);
  ASSERT_EQ(errno, EMFILE);

  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  // The kernel completes the handshake (the backlog); the listener's accept fails.
  const int connected = connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  const int connect_errno = errno;
  absl::SleepFor(absl::Milliseconds(1500));
  for (int fd : filler) close(fd);
  setrlimit(RLIMIT_NOFILE, &old);
  spdlog::set_default_logger(previous);
  ASSERT_EQ(connected, 0) << std::strerror(connect_errno);

  // One line for ~1.5 s of failing accepts (not one per retry), naming the error.
  const std::string text = log.str();
  size_t lines = 0;
  for (size_t at = 0; (at = text.find("gRPC listener: accept", at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, 1u) << text;
  EXPECT_NE(text.find("Too many open files"), std::string::npos) << text;
  // With descriptors back, the queued connection and new ones are served.
  const grpc::Status after = Check(NewChannel(port));
  EXPECT_TRUE(after.ok()) << after.error_code() << ": " << after.error_message();
  close(client);
  (*listener)->Close();
  server->Shutdown(absl::ToChronoTime(absl::Now()));
}

TEST(GrpcListenerTest, UnresolvableHostFails) {
  absl::StatusOr<std::unique_ptr<GrpcListener>> listener = GrpcListener::Bind("no-such-host.invalid", 0);
  ASSERT_FALSE(listener.ok());
  EXPECT_NE(listener.status().message().find("no-such-host.invalid"), std::string::npos) << listener.status();
}

}  // namespace
}  // namespace llmserve
