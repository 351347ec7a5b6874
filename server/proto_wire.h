// proto_wire: requests parsed by the service itself (raw gRPC methods), so that a bad
// request gets INVALID_ARGUMENT naming the field instead of gRPC's bare UNIMPLEMENTED.
//
// Why: protobuf 3.21 fails to parse a proto3 `string` field holding invalid UTF-8, and a
// callback handler whose request fails to deserialize answers UNIMPLEMENTED with an empty
// message (grpcpp/support/server_callback_handlers.h). The raw methods receive the bytes;
// ParseRequest checks every string field's UTF-8 first (walking the wire format with the
// message's descriptor, nested messages included), then parses.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "google/protobuf/message.h"
#include "grpcpp/support/byte_buffer.h"

namespace llmserve {

// Parses `wire` into `msg`. INVALID_ARGUMENT: "<field> must be valid UTF-8" (the field's
// path, e.g. "text", "stop[1]") or "the request is not a valid <type> message".
absl::Status ParseRequest(std::string_view wire, google::protobuf::Message* msg);

// The same for a gRPC byte buffer (left unchanged).
absl::Status ParseRequest(const grpc::ByteBuffer& buffer, google::protobuf::Message* msg);

// OK when a request message arrived. A raw callback method is also started for a call that
// ended (cancelled, deadline passed, reset) before its message came: its buffer is then
// invalid, and the call is CANCELLED, not a malformed request.
absl::Status RequestArrived(const grpc::ByteBuffer& buffer);

// Serializes `msg` into `buffer` (replacing its contents). INTERNAL if protobuf refuses.
absl::Status SerializeResponse(const google::protobuf::Message& msg, grpc::ByteBuffer* buffer);

}  // namespace llmserve
