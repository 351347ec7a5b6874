// A minimal gRPC server reflection client for the integration tests: one
// ServerReflectionInfo exchange asking list_services, and the parts of the answer the
// tests check. Debian's gRPC ships no reflection client (no grpcurl, no
// ProtoReflectionDescriptorDatabase header) and no reflection stubs, so the two messages
// are hand-encoded/decoded (grpc/reflection/v1alpha/reflection.proto; v1 has the same
// field numbers):
//
//   ServerReflectionRequest   list_services = 7 (string)
//   ServerReflectionResponse  list_services_response = 6 { service = 1 { name = 1 } }
//                             error_response = 7 { error_code = 1 (int32), error_message = 2 }
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"

namespace llmserve::testing {

struct ReflectionListing {
  grpc::Status status;                // how the call ended
  bool got_response = false;          // whether a response message arrived
  std::string raw;                    // its bytes
  std::vector<std::string> services;  // list_services_response's names
  int error_code = 0;                 // error_response.error_code (0: none)
  std::string error_message;          // error_response.error_message
};

// list_services over `channel`; with `authorization` ("" = none) as that metadata.
ReflectionListing ListServices(const std::shared_ptr<grpc::Channel>& channel, const std::string& authorization = "");

}  // namespace llmserve::testing
