// The gRPC port's credentials: plaintext, TLS (--tls-cert, --tls-key) or mutual TLS
// (--tls-client-ca as well).
//
//   start-up:   the files are read and checked here (PEM, the key matches the certificate,
//               the CA bundle holds a certificate), so a bad file is a clear start-up
//               error rather than failed handshakes
//   serving:    gRPC's FileWatcherCertificateProvider re-reads the files every
//               `reload_seconds`; a renewed certificate (and key, CA bundle) is served to
//               new connections without a restart. Replace the files atomically (rename,
//               or a Kubernetes Secret's symlink swap), the key and certificate together.
//   mutual TLS: a client must present a certificate signed by the CA bundle; one without
//               fails the handshake.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"

namespace llmserve {

struct TlsFiles {
  std::string cert_path;       // --tls-cert: PEM certificate chain, leaf first ("" = plaintext)
  std::string key_path;        // --tls-key: its PEM private key
  std::string client_ca_path;  // --tls-client-ca: PEM CA bundle clients' certificates must chain to ("" = none)
  int32_t reload_seconds = 60; // --tls-reload-interval: how often the files are checked for changes

  bool enabled() const { return !cert_path.empty(); }
  // INVALID_ARGUMENT naming the flag: --tls-cert and --tls-key come together; a client CA
  // needs them; the interval in [1, 86400].
  absl::Status Validate() const;
  // "plaintext", "TLS" or "mutual TLS", with the reload interval.
  std::string Describe() const;
};

// Reads and checks the files (FAILED_PRECONDITION naming the flag and file when one is
// missing, unreadable, not PEM, or the key does not match the certificate). `files`
// must be valid.
absl::Status CheckTlsFiles(const TlsFiles& files);

// InsecureServerCredentials when TLS is off; otherwise CheckTlsFiles, then TLS credentials
// watching the files.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const TlsFiles& files);

}  // namespace llmserve
