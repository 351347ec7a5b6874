// ServiceGate: the llmserve.v1.LlmService the gRPC server registers at startup, before
// the model is loaded (gRPC services cannot be added to a running server).
//
//   with API keys:  a call without `authorization: Bearer <key>` naming one of them is
//                   refused first, UNAUTHENTICATED (counted: Metrics::RecordUnauthenticated)
//   before Open():  every method answers UNAVAILABLE "model loading"
//   after Open(s):  every method is forwarded to s (the real LlmService)
//
// So the port, health (NOT_SERVING) and reflection answer while a large model loads.
// Health and reflection are other services: they need no key.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "llmserve/v1/llmserve.grpc.pb.h"
#include "server/api_keys.h"
#include "server/llm_service.h"
#include "server/metrics.h"

namespace llmserve {

// The gate derives from LlmService's own base, so it registers the same method kinds.
static_assert(std::is_base_of_v<LlmServiceBase, LlmService>, "ServiceGate must mirror LlmService's base");

// Thread-safe (gRPC threads).
class ServiceGate final : public LlmServiceBase {
 public:
  // No keys: every call is let through; `metrics` (may be null) counts the refusals.
  explicit ServiceGate(std::optional<ApiKeys> keys = std::nullopt, Metrics* metrics = nullptr);
  // With the key store another front end (the HTTP API) shares.
  ServiceGate(std::shared_ptr<ApiKeyStore> keys, Metrics* metrics);

  // Replaces the keys (SIGHUP re-reads --api-key-file); calls from now on are checked
  // against the new ones. Only where keys were given at construction.
  void ReplaceApiKeys(ApiKeys keys) { keys_->Replace(std::move(keys)); }
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
  // UNAUTHENTICATED unless the call carries an accepted key (or no keys are set).
  std::optional<grpc::Status> Refusal(grpc::CallbackServerContext* ctx);

  std::atomic<LlmService*> target_{nullptr};
  const std::shared_ptr<ApiKeyStore> keys_;  // never null
  Metrics* metrics_;
};

}  // namespace llmserve
