// ServiceGate: the llmserve.v1.LlmService the gRPC server registers at startup, before
// the model is loaded (gRPC services cannot be added to a running server).
//
//   before Open():  every method answers UNAVAILABLE "model loading"
//   after Open(s):  every method is forwarded to s (the real LlmService)
//
// So the port, health (NOT_SERVING) and reflection answer while a large model loads.
#pragma once

#include <atomic>
#include <type_traits>

#include "llmserve/v1/llmserve.grpc.pb.h"
#include "server/llm_service.h"

namespace llmserve {

// The gate derives from LlmService's own base, so it registers the same method kinds.
static_assert(std::is_base_of_v<LlmServiceBase, LlmService>, "ServiceGate must mirror LlmService's base");

// Thread-safe (gRPC threads).
class ServiceGate final : public LlmServiceBase {
 public:
  // From now on calls go to `service`, which must outlive the gRPC server. Once only.
  void Open(LlmService* service) { target_.store(service); }
  bool is_open() const { return target_.load() != nullptr; }

  grpc::ServerWriteReactor<grpc::ByteBuffer>* Generate(grpc::CallbackServerContext* ctx,
                                                       const grpc::ByteBuffer* request) override;
  grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ApplyChatTemplate(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                              grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Detokenize(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetModelInfo(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override;

 private:
  std::atomic<LlmService*> target_{nullptr};
};

}  // namespace llmserve
