// ReflectionGuard: puts gRPC server reflection (grpc.reflection.*) behind the API keys, by
// AccessGate::Admit(kReflection, the call's authorization metadata).
//
// gRPC's reflection plugin (Debian's grpc 1.51) has no hook of its own, and an
// AuthMetadataProcessor cannot be used with insecure credentials (it asserts), so a server
// interceptor does it. For a refused reflection call:
//
//   POST_RECV_MESSAGE  each request is cleared: the service looks nothing up (it answers
//                      its own "unimplemented" error_response to an empty request)
//   PRE_SEND_MESSAGE   each response is replaced by one whose error_response says
//                      16 (UNAUTHENTICATED) and why, as ServerReflectionResponse reports errors
//   PRE_SEND_STATUS    the call ends UNAUTHENTICATED with the same message
//
// so a client (grpcurl, Postman) sees UNAUTHENTICATED and no service, method or file name.
// Other methods are not intercepted at all (the factory returns no interceptor).
#pragma once

#include <memory>

#include "grpcpp/support/server_interceptor.h"
#include "server/access_gate.h"

namespace llmserve {

// For ServerBuilder::experimental().SetInterceptorCreators. Thread-safe.
class ReflectionGuardFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // `access` (never null) decides; shared with the rest of the server.
  explicit ReflectionGuardFactory(std::shared_ptr<const AccessGate> access) : access_(std::move(access)) {}

  // A guard for reflection methods; null (not intercepted) for every other method.
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override;

 private:
  const std::shared_ptr<const AccessGate> access_;
};

}  // namespace llmserve
