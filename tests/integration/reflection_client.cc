#include "tests/integration/reflection_client.h"

#include <cstdint>
#include <string_view>

#include "absl/time/clock.h"
#include "grpcpp/generic/generic_stub.h"

namespace llmserve::testing {
namespace {

// Protobuf wire format, just enough to walk a message's fields.
class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : rest_(bytes) {}

  // The next field's number and, for a length-delimited one, *bytes (a varint's value in
  // *varint); false at the end or on malformed input.
  bool Next(int* field, std::string_view* bytes, uint64_t* varint) {
    uint64_t key = 0;
    if (rest_.empty() || !Varint(&key)) return false;
    *field = static_cast<int>(key >> 3);
    switch (key & 7) {
      case 0: return Varint(varint);
      case 1: return Skip(8);
      case 2: {
        uint64_t n = 0;
        if (!Varint(&n) || n > rest_.size()) return false;
        *bytes = rest_.substr(0, n);
        rest_.remove_prefix(n);
        return true;
      }
      case 5: return Skip(4);
      default: return false;
    }
  }

 private:
  bool Varint(uint64_t* out) {
    *out = 0;
    for (int shift = 0; shift < 64 && !rest_.empty(); shift += 7) {
      const auto b = static_cast<uint8_t>(rest_.front());
      rest_.remove_prefix(1);
      *out |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  bool Skip(size_t n) {
    if (n > rest_.size()) return false;
    rest_.remove_prefix(n);
    return true;
  }

  std::string_view rest_;
};

// Fills the services and error of `listing` from listing->raw.
void Decode(ReflectionListing* listing) {
  WireReader response(listing->raw);
  int field = 0;
  std::string_view bytes;
  uint64_t varint = 0;
  while (response.Next(&field, &bytes, &varint)) {
    if (field == 6) {  // list_services_response
      WireReader list(bytes);
      std::string_view service;
      while (list.Next(&field, &service, &varint)) {
        if (field != 1) continue;
        WireReader named(service);
        std::string_view name;
        while (named.Next(&field, &name, &varint)) {
          if (field == 1) listing->services.emplace_back(name);
        }
      }
    } else if (field == 7) {  // error_response
      WireReader error(bytes);
      std::string_view message;
      while (error.Next(&field, &message, &varint)) {
        if (field == 1) listing->error_code = static_cast<int>(varint);
        if (field == 2) listing->error_message = std::string(message);
      }
    }
  }
}

}  // namespace

ReflectionListing ListServices(const std::shared_ptr<grpc::Channel>& channel, const std::string& authorization) {
  ReflectionListing listing;
  grpc::GenericStub generic(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  if (!authorization.empty()) ctx.AddMetadata("authorization", authorization);
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
  call->Finish(&listing.status, reinterpret_cast<void*>(5));
  cq.Next(&tag, &ok);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  std::vector<grpc::Slice> slices;
  if (good && reply.Dump(&slices).ok()) {
    listing.got_response = true;
    for (const grpc::Slice& s : slices) listing.raw.append(reinterpret_cast<const char*>(s.begin()), s.size());
    Decode(&listing);
  }
  return listing;
}

}  // namespace llmserve::testing
