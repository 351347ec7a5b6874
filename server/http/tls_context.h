// The TLS context of an HTTP server: the --tls-cert pair (and --tls-client-ca), read at
// start and again when the files change, looked at no more often than every
// tls.reload_seconds, so a renewed certificate is served to new connections without a
// restart; a file that fails to load keeps the pair in use (logged). With a client CA,
// a client must present a certificate it signed.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/tls_credentials.h"

namespace boost::asio::ssl {
class context;
}

namespace llmserve::http {

class TlsContext {
 public:
  // The files' errors of CheckTlsFiles (FAILED_PRECONDITION naming the flag and file).
  // `name` prefixes the log lines ("the HTTP API", "metrics").
  static absl::StatusOr<std::unique_ptr<TlsContext>> Create(const TlsFiles& files, bool use_client_ca,
                                                            std::string name);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // The context every connection's handshake uses (TLS 1.2 or later).
  boost::asio::ssl::context& context();

  struct Certificate;  // the reloading pair, handed to OpenSSL's certificate callback

 private:
  TlsContext() = default;
  std::unique_ptr<Certificate> certificate_;
  std::unique_ptr<boost::asio::ssl::context> context_;
};

}  // namespace llmserve::http
