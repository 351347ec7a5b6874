// What a client or load balancer discovers on the real llmserve (demo model): standard
// health for the server and for llmserve.v1.LlmService, and server reflection listing
// the services.
#include <string>
#include <vector>

#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "tests/integration/server_process.h"

namespace llmserve::testing {
namespace {

using HealthStatus = grpc::health::v1::HealthCheckResponse;

// One ServerReflectionInfo exchange asking list_services; the raw response bytes.
// (No reflection stubs ship with Debian's gRPC, so the two messages are hand-encoded:
// ServerReflectionRequest.list_services is field 7, a string.)
bool ListServices(const std::shared_ptr<grpc::Channel>& channel, std::string* response, grpc::Status* status) {
  grpc::GenericStub generic(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  auto call = generic.PrepareCall(&ctx, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  void* tag = nullptr;
  bool ok = false;
  // Runs one operation (tagged `n`) to completion.
  auto step = [&](intptr_t n) { return cq.Next(&tag, &ok) && tag == reinterpret_cast<void*>(n) && ok; };
  call->StartCall(reinterpret_cast<void*>(1));
  bool good = step(1);
  grpc::Slice slice(std::string("\x3a\x00", 2));  // list_services: ""
  grpc::ByteBuffer request(&slice, 1);
  if (good) {
    call->Write(request, reinterpret_cast<void*>(2));
    good = step(2);
  }
  if (good) {
    call->WritesDone(reinterpret_cast<void*>(3));
    good = step(3);
  }
  grpc::ByteBuffer reply;
  if (good) {
    call->Read(&reply, reinterpret_cast<void*>(4));
    good = step(4);
  }
  call->Finish(status, reinterpret_cast<void*>(5));
  cq.Next(&tag, &ok);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  std::vector<grpc::Slice> slices;
  if (good && reply.Dump(&slices).ok()) {
    for (const grpc::Slice& s : slices) response->append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return good;
}

TEST(ServerDiscoveryTest, HealthAndReflection) {
  std::string error;
  auto server = ServerProcess::Start({"--threads=2"}, &error);
  ASSERT_NE(server, nullptr) << error;
  EXPECT_EQ(server->Health(""), HealthStatus::SERVING);
  EXPECT_EQ(server->Health("llmserve.v1.LlmService"), HealthStatus::SERVING);
  grpc::Status unknown;
  server->Health("no.such.Service", &unknown);
  EXPECT_EQ(unknown.error_code(), grpc::NOT_FOUND);

  std::string listing;
  grpc::Status status;
  ASSERT_TRUE(ListServices(server->channel(), &listing, &status)) << status.error_code() << ": "
                                                                  << status.error_message();
  EXPECT_TRUE(status.ok()) << status.error_message();
  for (const char* service : {"llmserve.v1.LlmService", "grpc.health.v1.Health",
                              "grpc.reflection.v1alpha.ServerReflection"}) {
    EXPECT_NE(listing.find(service), std::string::npos) << service << " not listed";
  }
}

TEST(ServerDiscoveryTest, ReflectionOffIsNotServed) {
  std::string error;
  auto server = ServerProcess::Start({"--threads=2", "--reflection=off"}, &error);
  ASSERT_NE(server, nullptr) << error;
  EXPECT_EQ(server->Health(""), HealthStatus::SERVING);
  std::string listing;
  grpc::Status status;
  ListServices(server->channel(), &listing, &status);
  EXPECT_EQ(status.error_code(), grpc::UNIMPLEMENTED) << status.error_message();
  EXPECT_EQ(listing, "");
}

}  // namespace
}  // namespace llmserve::testing
