#include "server/reflection_guard.h"

#include <string_view>
#include <utility>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "server/status_convert.h"

namespace llmserve {
namespace {

using grpc::experimental::InterceptionHookPoints;

// The methods of grpc.reflection.v1alpha (and v1, should the plugin serve it).
constexpr std::string_view kReflectionPrefix = "/grpc.reflection.";

// grpc.StatusCode's number for UNAUTHENTICATED, as ErrorResponse.error_code carries it.
constexpr int32_t kUnauthenticatedCode = 16;

// One reflection call. Used by gRPC on one thread at a time.
class ReflectionGuard final : public grpc::experimental::Interceptor {
 public:
  explicit ReflectionGuard(const AccessGate* access) : access_(access) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      std::vector<std::string_view> authorization;
      for (const auto& [key, value] : *methods->GetRecvInitialMetadata()) {
        if (key == "authorization") authorization.emplace_back(value.data(), value.size());
      }
      refusal_ = access_->Admit(AccessSurface::kReflection, authorization);
    }
    if (!refusal_.ok()) {
      if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE)) {
        // The deserialized ServerReflectionRequest: emptied, it asks for nothing.
        if (void* request = methods->GetRecvMessage()) static_cast<google::protobuf::Message*>(request)->Clear();
      }
      if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE)) ReplaceResponse(methods);
      if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
        methods->ModifySendStatus(ToGrpcStatus(refusal_));
      }
    }
    methods->Proceed();
  }

 private:
  // Puts the refusal in place of the outgoing ServerReflectionResponse.
  void ReplaceResponse(grpc::experimental::InterceptorBatchMethods* methods) {
    const auto* outgoing = static_cast<const google::protobuf::Message*>(methods->GetSendMessage());
    if (outgoing == nullptr) {
      // Already serialized (not so in grpc 1.51's sync streams): send an empty response,
      // which reveals nothing; the status still says UNAUTHENTICATED.
      grpc::Slice empty("", 0);
      *methods->GetSerializedSendMessage() = grpc::ByteBuffer(&empty, 1);
      return;
    }
    if (replacement_ == nullptr) replacement_ = ErrorResponse(*outgoing);
    // gRPC serializes it before POST_SEND_MESSAGE; it lives as long as this call.
    methods->ModifySendMessage(replacement_.get());
  }

  // A message of `like`'s type (ServerReflectionResponse) with error_response
  // {error_code: 16, error_message: the refusal}, built by field names so that it fits
  // whichever reflection version the plugin serves.
  std::unique_ptr<google::protobuf::Message> ErrorResponse(const google::protobuf::Message& like) const {
    std::unique_ptr<google::protobuf::Message> response(like.New());
    const google::protobuf::FieldDescriptor* error_field = response->GetDescriptor()->FindFieldByName("error_response");
    if (error_field == nullptr || error_field->message_type() == nullptr) return response;  // empty: reveals nothing
    google::protobuf::Message* error = response->GetReflection()->MutableMessage(response.get(), error_field);
    const google::protobuf::Descriptor* type = error->GetDescriptor();
    const google::protobuf::Reflection* reflection = error->GetReflection();
    if (const auto* code = type->FindFieldByName("error_code");
        code != nullptr && code->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_INT32) {
      reflection->SetInt32(error, code, kUnauthenticatedCode);
    }
    if (const auto* message = type->FindFieldByName("error_message");
        message != nullptr && message->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_STRING) {
      reflection->SetString(error, message, std::string(refusal_.message()));
    }
    return response;
  }

  const AccessGate* const access_;
  // Refused until the metadata (which gRPC receives first) is checked: fails closed.
  absl::Status refusal_ = absl::UnauthenticatedError("reflection: the caller's metadata was not checked");
  std::unique_ptr<google::protobuf::Message> replacement_;
};

}  // namespace

grpc::experimental::Interceptor* ReflectionGuardFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  if (info->method() == nullptr || !std::string_view(info->method()).starts_with(kReflectionPrefix)) return nullptr;
  return new ReflectionGuard(access_.get());
}

}  // namespace llmserve
