#include "server/service_gate.h"

#include <string_view>
#include <utility>
#include <vector>

#include "server/status_convert.h"

namespace llmserve {
namespace {

// A stream that ends at once with `status`.
class RefusedStream final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  explicit RefusedStream(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

grpc::ServerUnaryReactor* Refuse(grpc::CallbackServerContext* ctx, const grpc::Status& status) {
  grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
  r->Finish(status);
  return r;
}

}  // namespace

ServiceGate::ServiceGate() : ServiceGate(std::make_shared<AccessGate>(nullptr, nullptr, true)) {}

ServiceGate::ServiceGate(std::shared_ptr<AccessGate> access) : access_(std::move(access)) {}

std::optional<grpc::Status> ServiceGate::Refusal(grpc::CallbackServerContext* ctx, LlmService** target) {
  std::vector<std::string_view> authorization;
  const auto [begin, end] = ctx->client_metadata().equal_range("authorization");
  for (auto it = begin; it != end; ++it) authorization.emplace_back(it->second.data(), it->second.size());
  if (absl::Status admitted = access_->Admit(AccessSurface::kGrpcApi, authorization); !admitted.ok()) {
    return ToGrpcStatus(admitted);
  }
  *target = target_.load();
  // Admitted before Open (the phase moved first): still loading.
  if (*target == nullptr) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "model loading: try again shortly");
  return std::nullopt;
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* ServiceGate::Generate(grpc::CallbackServerContext* ctx,
                                                                  const grpc::ByteBuffer* request) {
  LlmService* t = nullptr;
  if (std::optional<grpc::Status> refused = Refusal(ctx, &t)) return new RefusedStream(*refused);
  return t->Generate(ctx, request);
}

grpc::ServerUnaryReactor* ServiceGate::Tokenize(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                                grpc::ByteBuffer* response) {
  LlmService* t = nullptr;
  if (std::optional<grpc::Status> refused = Refusal(ctx, &t)) return Refuse(ctx, *refused);
  return t->Tokenize(ctx, request, response);
}

grpc::ServerUnaryReactor* ServiceGate::ApplyChatTemplate(grpc::CallbackServerContext* ctx,
                                                         const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
  LlmService* t = nullptr;
  if (std::optional<grpc::Status> refused = Refusal(ctx, &t)) return Refuse(ctx, *refused);
  return t->ApplyChatTemplate(ctx, request, response);
}

grpc::ServerUnaryReactor* ServiceGate::Detokenize(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                                  grpc::ByteBuffer* response) {
  LlmService* t = nullptr;
  if (std::optional<grpc::Status> refused = Refusal(ctx, &t)) return Refuse(ctx, *refused);
  return t->Detokenize(ctx, request, response);
}

grpc::ServerUnaryReactor* ServiceGate::GetModelInfo(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                                    grpc::ByteBuffer* response) {
  LlmService* t = nullptr;
  if (std::optional<grpc::Status> refused = Refusal(ctx, &t)) return Refuse(ctx, *refused);
  return t->GetModelInfo(ctx, request, response);
}

grpc::ServerUnaryReactor* ServiceGate::GetServerInfo(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                                     grpc::ByteBuffer* response) {
  LlmService* t = nullptr;
  if (std::optional<grpc::Status> refused = Refusal(ctx, &t)) return Refuse(ctx, *refused);
  return t->GetServerInfo(ctx, request, response);
}

}  // namespace llmserve
