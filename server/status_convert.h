// The one place where absl::Status becomes grpc::Status (the service edge).
#pragma once

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace llmserve {

// Same code (absl and gRPC share the canonical code numbers) and message.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace llmserve
