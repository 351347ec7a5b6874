#include "server/service_gate.h"

namespace llmserve {
namespace {

grpc::Status Loading() { return grpc::Status(grpc::StatusCode::UNAVAILABLE, "model loading: try again shortly"); }

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

ServiceGate::ServiceGate(std::optional<ApiKeys> keys, Metrics* metrics)
    : ServiceGate(std::make_shared<ApiKeyStore>(std::move(keys)), metrics) {}

ServiceGate::ServiceGate(std::shared_ptr<ApiKeyStore> keys, Metrics* metrics)
    : keys_(std::move(keys)), metrics_(metrics) {}

std::optional<grpc::Status> ServiceGate::Refusal(grpc::CallbackServerContext* ctx) {
  if (!keys_->enabled()) return std::nullopt;
  const auto& metadata = ctx->client_metadata();
  const auto [begin, end] = metadata.equal_range("authorization");
  for (auto it = begin; it != end; ++it) {
    if (keys_->Accepts(absl::string_view(it->second.data(), it->second.size()))) return std::nullopt;
  }
  if (metrics_ != nullptr) metrics_->RecordUnauthenticated();
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      begin == end ? "no API key: send metadata 'authorization: Bearer <key>'"
                                   : "the API key is not valid");
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* ServiceGate::Generate(grpc::CallbackServerContext* ctx,
                                                                  const grpc::ByteBuffer* request) {
  if (std::optional<grpc::Status> refused = Refusal(ctx)) return new RefusedStream(*refused);
  if (auto* t = target_.load()) return t->Generate(ctx, request);
  return new RefusedStream(Loading());
}

grpc::ServerUnaryReactor* ServiceGate::Tokenize(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                                grpc::ByteBuffer* response) {
  if (std::optional<grpc::Status> refused = Refusal(ctx)) return Refuse(ctx, *refused);
  if (auto* t = target_.load()) return t->Tokenize(ctx, request, response);
  return Refuse(ctx, Loading());
}

grpc::ServerUnaryReactor* ServiceGate::ApplyChatTemplate(grpc::CallbackServerContext* ctx,
                                                         const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
  if (std::optional<grpc::Status> refused = Refusal(ctx)) return Refuse(ctx, *refused);
  if (auto* t = target_.load()) return t->ApplyChatTemplate(ctx, request, response);
  return Refuse(ctx, Loading());
}

grpc::ServerUnaryReactor* ServiceGate::Detokenize(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                                  grpc::ByteBuffer* response) {
  if (std::optional<grpc::Status> refused = Refusal(ctx)) return Refuse(ctx, *refused);
  if (auto* t = target_.load()) return t->Detokenize(ctx, request, response);
  return Refuse(ctx, Loading());
}

grpc::ServerUnaryReactor* ServiceGate::GetModelInfo(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                                    grpc::ByteBuffer* response) {
  if (std::optional<grpc::Status> refused = Refusal(ctx)) return Refuse(ctx, *refused);
  if (auto* t = target_.load()) return t->GetModelInfo(ctx, request, response);
  return Refuse(ctx, Loading());
}

grpc::ServerUnaryReactor* ServiceGate::GetServerInfo(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                                     grpc::ByteBuffer* response) {
  if (std::optional<grpc::Status> refused = Refusal(ctx)) return Refuse(ctx, *refused);
  if (auto* t = target_.load()) return t->GetServerInfo(ctx, request, response);
  return Refuse(ctx, Loading());
}

}  // namespace llmserve
