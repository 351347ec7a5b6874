// ServiceGate: the llmserve.v1.LlmService the gRPC server registers at startup, before
// the model is loaded (gRPC services cannot be added to a running server).
//
//   every call:     AccessGate::Admit(kGrpcApi, its authorization metadata) first: without
//                   an accepted key UNAUTHENTICATED, while loading UNAVAILABLE "model loading"
//   once admitted:  forwarded to the LlmService given to Open()
//
// So the port, health (NOT_SERVING) and reflection answer while a large model loads.
// Health and reflection are other services (reflection is checked by its interceptor,
// server/reflection_guard.h).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <type_traits>


#include "llmserve/v1/llmserve.grpc.pb.h"
#include "server/access_gate.h"
#include "server/llm_service.h"

namespace llmserve {

// The gate derives from LlmService's own base, so it registers the same method kinds.
static_assert(std::is_base_of_v<LlmServiceBase, LlmService>, "ServiceGate must mirror LlmService's base");

// Thread-safe (gRPC threads).
class ServiceGate final : public LlmServiceBase {
 public:
  // A gate of its own: no keys, loading until its phase is set (access()).
  ServiceGate();
  // Checks every call with `access` (never null), which the HTTP API shares.
  explicit ServiceGate(std::shared_ptr<AccessGate> access);

  // The check in force (its phase, its keys).
  AccessGate& access() const { return *access_; }
  // From now on admitted calls go to `service`, which must outlive the gRPC server. Once
  // only; the phase is the AccessGate's (set kServing after this).
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
  // AccessGate's refusal of the call (or "model loading" when admitted before Open), or
  // null with the service to forward it to.
  std::optional<grpc::Status> Refusal(grpc::CallbackServerContext* ctx, LlmService** target);

  std::atomic<LlmService*> target_{nullptr};
  const std::shared_ptr<AccessGate> access_;  // never null
};

}  // namespace llmserve
