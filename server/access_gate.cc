#include "server/access_gate.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace llmserve {

AccessGate::AccessGate(std::shared_ptr<ApiKeyStore> keys, Metrics* metrics, bool reflection_needs_key)
    : keys_(keys != nullptr ? std::move(keys) : std::make_shared<ApiKeyStore>()),
      metrics_(metrics),
      reflection_needs_key_(reflection_needs_key) {}

void AccessGate::SetPhase(ServingPhase phase) { phase_.store(phase); }

ServingPhase AccessGate::phase() const { return phase_.load(); }

bool AccessGate::keys_enabled() const { return keys_->enabled(); }

void AccessGate::ReplaceApiKeys(ApiKeys keys) { keys_->Replace(std::move(keys)); }

absl::Status AccessGate::CheckKey(AccessSurface surface, std::span<const std::string_view> authorization) const {
  if (!keys_->enabled()) return absl::OkStatus();
  for (std::string_view value : authorization) {
    if (keys_->Accepts(absl::string_view(value.data(), value.size()))) return absl::OkStatus();
  }
  if (metrics_ != nullptr) metrics_->RecordUnauthenticated();
  if (!authorization.empty()) return absl::UnauthenticatedError("the API key is not valid");
  // How to send one, in the words of the caller's protocol.
  return absl::UnauthenticatedError(absl::StrCat(
      "no API key: send ", surface == AccessSurface::kHttpApi ? "the header 'Authorization: Bearer <key>'"
                                                                : "metadata 'authorization: Bearer <key>'"));
}

absl::Status AccessGate::Admit(AccessSurface surface, std::span<const std::string_view> authorization) const {
  switch (surface) {
    case AccessSurface::kHealth:
    case AccessSurface::kMetrics:
      return absl::OkStatus();
    case AccessSurface::kReflection:
      return reflection_needs_key_ ? CheckKey(surface, authorization) : absl::OkStatus();
    case AccessSurface::kGrpcApi:
    case AccessSurface::kHttpApi:
      break;
  }
  if (absl::Status key = CheckKey(surface, authorization); !key.ok()) return key;
  const ServingPhase phase = phase_.load();
  if (phase == ServingPhase::kLoading) return absl::UnavailableError("model loading: try again shortly");
  // gRPC is refused at the transport (GOAWAY, a closed port), never by a status a proxy
  // would not retry; only the HTTP API answers its open keep-alive connections.
  if (surface == AccessSurface::kHttpApi && phase == ServingPhase::kRefusing) {
    return absl::UnavailableError("draining: the server is shutting down, retry elsewhere");
  }
  return absl::OkStatus();
}

absl::Status AccessGate::Health() const {
  switch (phase_.load()) {
    case ServingPhase::kServing:
      return absl::OkStatus();
    case ServingPhase::kLoading:
      return absl::UnavailableError("model loading");
    case ServingPhase::kDraining:
    case ServingPhase::kRefusing:
      break;
  }
  return absl::UnavailableError("draining: shutting down");
}

}  // namespace llmserve
