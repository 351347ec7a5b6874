// How llmserve's clients (llmctl, llmbench, the tests) reach a server that may use TLS,
// mutual TLS and API keys (docs/OPERATIONS.md "Security"):
//
//   plaintext      no TLS option given
//   TLS            --tls (the system's CA store) or --tls-ca FILE (a private CA)
//   mutual TLS     --tls-cert FILE --tls-key FILE as well: the client's certificate
//   API key        --api-key-file FILE: its first line that is neither blank nor a '#'
//                  comment is the key, sent as `authorization: Bearer <key>` on every call
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace llmserve::client {

struct ConnectOptions {
  bool tls = false;             // TLS with the system's CA store (implied by the files below)
  std::string tls_ca;           // PEM CA bundle that signed the server's certificate
  std::string tls_cert;         // PEM client certificate (mutual TLS), with tls_key
  std::string tls_key;          // its PEM private key
  std::string tls_server_name;  // the name checked against the server's certificate ("" = the address's host)
  std::string api_key_file;     // "" = no key

  bool UsesTls() const { return tls || !tls_ca.empty() || !tls_cert.empty(); }
  // INVALID_ARGUMENT naming the flag: the cert and key come together.
  absl::Status Validate() const;
};

// The options resolved: credentials read from their files, the key loaded.
struct Connection {
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  std::string server_name;  // SSL target name override, if any
  std::string api_key;      // "" = none

  // Adds the server name override (if any) to `args`.
  void ApplyTo(grpc::ChannelArguments* args) const;
  // A channel to `target` with these credentials and `args` (plus ApplyTo).
  std::shared_ptr<grpc::Channel> NewChannel(const std::string& target,
                                            grpc::ChannelArguments args = grpc::ChannelArguments()) const;
  // Adds the API key's metadata to a call (nothing without a key).
  void Authorize(grpc::ClientContext* ctx) const;
};

// Reads the files (FAILED_PRECONDITION naming the flag and file when one cannot be read or
// the key file has no key).
absl::StatusOr<Connection> Resolve(const ConnectOptions& options);

// The key in an --api-key-file (first line not blank nor a '#' comment, trimmed).
absl::StatusOr<std::string> ReadApiKey(const std::string& path);

}  // namespace llmserve::client
