// AccessGate: the one access check of both front ends (the gRPC port's ServiceGate and
// reflection interceptor, the HTTP API): who may call what, in which serving phase.
//
//   surface      key (with --api-key-file)        kLoading     kServing  kDraining  kRefusing
//   kGrpcApi     required                         UNAVAILABLE  OK        OK         OK (GOAWAY)
//   kHttpApi     required                         UNAVAILABLE  OK        OK         UNAVAILABLE
//   kReflection  required unless reflection open  OK           OK        OK         OK
//   kHealth      -                                OK           OK        OK         OK
//   kMetrics     -                                OK           OK        OK         OK
//
// The key comes first: a caller without one learns nothing about the server's state.
// Health() is what the health checks report: SERVING only in kServing.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "server/api_keys.h"
#include "server/metrics.h"

namespace llmserve {

// Which door a caller knocks on.
enum class AccessSurface {
  kGrpcApi,     // llmserve.v1 calls: the key, then loading (gRPC drains by GOAWAY at the transport)
  kHttpApi,     // the HTTP API (/v1/...): the key, then loading, then refusing (503 draining;
                //   the HTTP server then closes the connection)
  kReflection,  // gRPC server reflection: the key, unless reflection is open
  kHealth,      // health checks: always admitted
  kMetrics,     // /metrics: always admitted (keep it private with --metrics-host)
};

// Where the server is in its life (server_runner.cc moves it forward).
enum class ServingPhase {
  kLoading,   // the model is loading: API calls UNAVAILABLE "model loading: try again shortly"; health not serving
  kServing,   // health serving; everything admitted (with a key where keys are set)
  kDraining,  // shutdown began: health not serving, calls still admitted
  kRefusing,  // the HTTP API refuses new requests: UNAVAILABLE "draining: the server is shutting down, retry elsewhere"
};

class AccessGate {  // Thread-safe.
 public:
  // `keys` null: no keys (as an ApiKeyStore without any). `metrics` may be null; it counts
  // the UNAUTHENTICATED refusals. `reflection_needs_key`: false for --reflection=open.
  // Starts in kLoading.
  AccessGate(std::shared_ptr<ApiKeyStore> keys, Metrics* metrics /*may be null*/, bool reflection_needs_key);

  // Moves to `phase` (any order; the server only goes forward).
  void SetPhase(ServingPhase phase);
  ServingPhase phase() const;

  // OK, or the refusal: UNAUTHENTICATED (counted with Metrics::RecordUnauthenticated) saying
  // whether no key or a wrong key was sent, in the surface's words (HTTP: "send the header
  // 'Authorization: Bearer <key>'"; gRPC: "send metadata 'authorization: Bearer <key>'");
  // UNAVAILABLE for loading / refusing as above. `authorization`: every value of the
  // caller's Authorization header / authorization metadata (any one may hold an accepted key).
  absl::Status Admit(AccessSurface surface, std::span<const std::string_view> authorization) const;
  // What health says: OK when serving; UNAVAILABLE "model loading" or "draining: shutting down".
  absl::Status Health() const;
  // Whether --api-key-file gave keys (fixed at construction).
  bool keys_enabled() const;
  // SIGHUP: replaces the keys (ignored without keys at construction).
  void ReplaceApiKeys(ApiKeys keys);

 private:
  // UNAUTHENTICATED unless one of `authorization` holds an accepted key (or no keys are set).
  absl::Status CheckKey(AccessSurface surface, std::span<const std::string_view> authorization) const;

  const std::shared_ptr<ApiKeyStore> keys_;  // never null
  Metrics* const metrics_;
  const bool reflection_needs_key_;
  std::atomic<ServingPhase> phase_{ServingPhase::kLoading};
};

}  // namespace llmserve
