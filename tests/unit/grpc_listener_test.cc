// GrpcListener: llmserve's own listening socket in front of a port-less grpc::Server.
// Calls go through it; a busy port fails to bind; after Close() the port refuses new
// connections while a connection accepted before still carries calls.
#include "server/grpc_listener.h"

#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "gtest/gtest.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "server/service_gate.h"

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
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  (*listener)->Start(server.get());

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

TEST(GrpcListenerTest, UnresolvableHostFails) {
  absl::StatusOr<std::unique_ptr<GrpcListener>> listener = GrpcListener::Bind("no-such-host.invalid", 0);
  ASSERT_FALSE(listener.ok());
  EXPECT_NE(listener.status().message().find("no-such-host.invalid"), std::string::npos) << listener.status();
}

}  // namespace
}  // namespace llmserve
