// What a client or load balancer discovers on the real llmserve (demo model): standard
// health for the server and for llmserve.v1.LlmService, and server reflection listing
// the services.
#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/reflection_client.h"
#include "tests/integration/server_process.h"

namespace llmserve::testing {
namespace {

using HealthStatus = grpc::health::v1::HealthCheckResponse;

TEST(ServerDiscoveryTest, HealthAndReflection) {
  std::string error;
  auto server = ServerProcess::Start({"--threads=2"}, &error);
  ASSERT_NE(server, nullptr) << error;
  EXPECT_EQ(server->Health(""), HealthStatus::SERVING);
  EXPECT_EQ(server->Health("llmserve.v1.LlmService"), HealthStatus::SERVING);
  grpc::Status unknown;
  server->Health("no.such.Service", &unknown);
  EXPECT_EQ(unknown.error_code(), grpc::NOT_FOUND);

  const ReflectionListing listing = ListServices(server->channel());
  ASSERT_TRUE(listing.got_response) << listing.status.error_code() << ": " << listing.status.error_message();
  EXPECT_TRUE(listing.status.ok()) << listing.status.error_message();
  EXPECT_EQ(listing.error_code, 0) << listing.error_message;
  for (const char* service : {"llmserve.v1.LlmService", "grpc.health.v1.Health",
                              "grpc.reflection.v1alpha.ServerReflection"}) {
    EXPECT_NE(std::find(listing.services.begin(), listing.services.end(), service), listing.services.end())
        << service << " not listed";
  }
}

TEST(ServerDiscoveryTest, ReflectionOffIsNotServed) {
  std::string error;
  auto server = ServerProcess::Start({"--threads=2", "--reflection=off"}, &error);
  ASSERT_NE(server, nullptr) << error;
  EXPECT_EQ(server->Health(""), HealthStatus::SERVING);
  const ReflectionListing listing = ListServices(server->channel());
  EXPECT_EQ(listing.status.error_code(), grpc::UNIMPLEMENTED) << listing.status.error_message();
  EXPECT_EQ(listing.raw, "");
}

}  // namespace
}  // namespace llmserve::testing
