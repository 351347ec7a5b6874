// ApiKeys: the credentials --api-key-file accepts. Every llmserve.v1 RPC (and reflection,
// unless --reflection=open) must carry metadata `authorization: Bearer <key>` with one of
// them (AccessGate checks it, before anything else); health checks need no key.
//
// The file: one key per line; blank lines and lines starting with '#' are skipped;
// surrounding whitespace is trimmed. A line "sha256:<64 hex digits>" is a hashed key (the
// SHA-256 of the key, e.g. `printf %s "$KEY" | sha256sum`), so the file need not hold the
// secret itself; any other line is the key (16 to 256 printable ASCII characters, no
// spaces). Only digests are kept in memory and compared (in constant time); keys are
// never logged, and an error names the line number, never its text.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace llmserve {

class ApiKeys {
 public:
  using Digest = std::array<uint8_t, 32>;

  // From the file's text; INVALID_ARGUMENT naming `source` and the line of the first bad
  // entry, or when there is no key at all.
  static absl::StatusOr<ApiKeys> Parse(absl::string_view text, absl::string_view source);
  // Reads `path` (FAILED_PRECONDITION when it cannot be read), then Parse.
  static absl::StatusOr<ApiKeys> Load(const std::string& path);

  // Whether `authorization` (the metadata value) is "Bearer <key>" (scheme
  // case-insensitive) with a known key.
  bool Accepts(absl::string_view authorization) const;
  size_t size() const { return digests_.size(); }

  static Digest Sha256(absl::string_view text);

 private:
  std::vector<Digest> digests_;
};

// The keys in force, shared by every front end (the gRPC gate, the HTTP API) so that a
// SIGHUP re-read applies to all of them at once. Thread-safe.
class ApiKeyStore {
 public:
  // No keys (nullopt): every request is let through, for good.
  explicit ApiKeyStore(std::optional<ApiKeys> keys = std::nullopt);

  // Whether keys are required (fixed at construction).
  bool enabled() const { return enabled_; }
  // Replaces the keys (only where keys were given at construction).
  void Replace(ApiKeys keys);
  // True when no keys are required, or `authorization` is "Bearer <key>" with a known key.
  bool Accepts(absl::string_view authorization) const;

 private:
  const bool enabled_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const ApiKeys> keys_ ABSL_GUARDED_BY(mu_);  // null: no keys
};

}  // namespace llmserve
