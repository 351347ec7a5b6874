#include "server/proto_wire.h"

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/proto_buffer_writer.h"
#include "grpcpp/support/slice.h"
#include "model/tokenizer/utf8.h"

namespace llmserve {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::io::CodedInputStream;
using google::protobuf::internal::WireFormatLite;

constexpr int kMaxDepth = 32;

// Walks one message's fields from `in` (up to its current limit). Returns the first
// string field that is not valid UTF-8 as INVALID_ARGUMENT; anything it cannot read is
// left for the real parser to refuse (it stops and returns OK).
absl::Status CheckStrings(CodedInputStream& in, const Descriptor& d, const std::string& prefix, int depth) {
  if (depth > kMaxDepth) return absl::OkStatus();
  absl::flat_hash_map<int, int> seen;  // field number -> occurrences so far (repeated indices)
  std::string value;
  while (true) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return absl::OkStatus();  // end of the message (or malformed: the parser says)
    const int number = WireFormatLite::GetTagFieldNumber(tag);
    const FieldDescriptor* f = d.FindFieldByNumber(number);
    const bool delimited = WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    const bool text = f != nullptr && f->type() == FieldDescriptor::TYPE_STRING;
    const bool nested = f != nullptr && f->type() == FieldDescriptor::TYPE_MESSAGE;
    if (!delimited || !(text || nested)) {
      if (!WireFormatLite::SkipField(&in, tag)) return absl::OkStatus();
      continue;
    }
    std::string path = absl::StrCat(prefix, f->name());
    const int index = seen[number]++;
    if (f->is_repeated()) absl::StrAppend(&path, "[", index, "]");
    uint32_t length = 0;
    if (!in.ReadVarint32(&length)) return absl::OkStatus();
    if (text) {
      if (!in.ReadString(&value, static_cast<int>(length))) return absl::OkStatus();
      if (!utf8::IsValid(value)) return absl::InvalidArgumentError(absl::StrCat(path, " must be valid UTF-8"));
      continue;
    }
    const CodedInputStream::Limit limit = in.PushLimit(static_cast<int>(length));
    if (absl::Status s = CheckStrings(in, *f->message_type(), path + ".", depth + 1); !s.ok()) return s;
    if (!in.ConsumedEntireMessage()) return absl::OkStatus();
    in.PopLimit(limit);
  }
}

}  // namespace

absl::Status ParseRequest(std::string_view wire, google::protobuf::Message* msg) {
  const auto* data = reinterpret_cast<const uint8_t*>(wire.data());
  CodedInputStream in(data, static_cast<int>(wire.size()));
  if (absl::Status s = CheckStrings(in, *msg->GetDescriptor(), "", 0); !s.ok()) return s;
  if (!msg->ParseFromArray(wire.data(), static_cast<int>(wire.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("the request is not a valid ", msg->GetDescriptor()->full_name(), " message"));
  }
  return absl::OkStatus();
}

absl::Status ParseRequest(const grpc::ByteBuffer& buffer, google::protobuf::Message* msg) {
  if (!buffer.Valid() || buffer.Length() == 0) return ParseRequest(std::string_view(), msg);
  grpc::Slice slice;
  if (!buffer.DumpToSingleSlice(&slice).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the request is not a valid ", msg->GetDescriptor()->full_name(), " message"));
  }
  return ParseRequest(std::string_view(reinterpret_cast<const char*>(slice.begin()), slice.size()), msg);
}

absl::Status RequestArrived(const grpc::ByteBuffer& buffer) {
  if (buffer.Valid()) return absl::OkStatus();
  return absl::CancelledError("the call ended before its request message arrived");
}

absl::Status SerializeResponse(const google::protobuf::Message& msg, grpc::ByteBuffer* buffer) {
  buffer->Clear();  // the writer needs an empty buffer
  bool own = false;
  const grpc::Status s = grpc::GenericSerialize<grpc::ProtoBufferWriter, google::protobuf::Message>(msg, buffer, &own);
  if (!s.ok()) return absl::InternalError(absl::StrCat("could not serialize the response: ", s.error_message()));
  return absl::OkStatus();
}

}  // namespace llmserve
