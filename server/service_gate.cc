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

grpc::ServerUnaryReactor* Refuse(grpc::CallbackServerContext* ctx) {
  grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
  r->Finish(Loading());
  return r;
}

}  // namespace

grpc::ServerWriteReactor<grpc::ByteBuffer>* ServiceGate::Generate(grpc::CallbackServerContext* ctx,
                                                                  const grpc::ByteBuffer* request) {
  if (auto* t = target_.load()) return t->Generate(ctx, request);
  return new RefusedStream(Loading());
}

grpc::ServerUnaryReactor* ServiceGate::Tokenize(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                                grpc::ByteBuffer* response) {
  if (auto* t = target_.load()) return t->Tokenize(ctx, request, response);
  return Refuse(ctx);
}

grpc::ServerUnaryReactor* ServiceGate::ApplyChatTemplate(grpc::CallbackServerContext* ctx,
                                                         const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
  if (auto* t = target_.load()) return t->ApplyChatTemplate(ctx, request, response);
  return Refuse(ctx);
}

grpc::ServerUnaryReactor* ServiceGate::Detokenize(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                                  grpc::ByteBuffer* response) {
  if (auto* t = target_.load()) return t->Detokenize(ctx, request, response);
  return Refuse(ctx);
}

grpc::ServerUnaryReactor* ServiceGate::GetModelInfo(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                                    grpc::ByteBuffer* response) {
  if (auto* t = target_.load()) return t->GetModelInfo(ctx, request, response);
  return Refuse(ctx);
}

grpc::ServerUnaryReactor* ServiceGate::GetServerInfo(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                                     grpc::ByteBuffer* response) {
  if (auto* t = target_.load()) return t->GetServerInfo(ctx, request, response);
  return Refuse(ctx);
}

}  // namespace llmserve
