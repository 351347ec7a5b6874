#include "server/http/tls_context.h"

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <sys/stat.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "boost/asio/ssl/context.hpp"
#include "spdlog/spdlog.h"

namespace llmserve::http {
namespace {

// A certificate chain and its key (and the client CA bundle), as OpenSSL objects.
struct CertifiedKey {
  X509* leaf = nullptr;
  STACK_OF(X509)* chain = nullptr;  // the certificates after the leaf
  EVP_PKEY* key = nullptr;
  X509_STORE* client_ca = nullptr;  // null: no client certificates asked for
  ~CertifiedKey() {
    X509_free(leaf);
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
    X509_STORE_free(client_ca);
  }
};

// Reads the PEM files; null (and *error) if they do not hold a certificate and its key
// (and, with `use_client_ca`, a CA bundle).
std::shared_ptr<const CertifiedKey> LoadCertifiedKey(const TlsFiles& files, bool use_client_ca, std::string* error) {
  if (absl::Status s = CheckTlsFiles(files); !s.ok()) {
    *error = std::string(s.message());
    return nullptr;
  }
  auto out = std::make_shared<CertifiedKey>();
  if (FILE* f = fopen(files.cert_path.c_str(), "r")) {
    out->leaf = PEM_read_X509(f, nullptr, nullptr, nullptr);
    out->chain = sk_X509_new_null();
    while (X509* next = PEM_read_X509(f, nullptr, nullptr, nullptr)) sk_X509_push(out->chain, next);
    fclose(f);
  }
  if (FILE* f = fopen(files.key_path.c_str(), "r")) {
    out->key = PEM_read_PrivateKey(f, nullptr, nullptr, nullptr);
    fclose(f);
  }
  if (out->leaf == nullptr || out->key == nullptr || X509_check_private_key(out->leaf, out->key) != 1) {
    *error = "the certificate or key changed while being read";
    return nullptr;
  }
  if (use_client_ca && !files.client_ca_path.empty()) {
    out->client_ca = X509_STORE_new();
    if (out->client_ca == nullptr || X509_STORE_load_file(out->client_ca, files.client_ca_path.c_str()) != 1) {
      *error = absl::StrCat("--tls-client-ca=", files.client_ca_path, ": cannot load the CA bundle");
      return nullptr;
    }
  }
  return out;
}

// The modification times of the files (0 when missing), to notice a renewal.
std::array<int64_t, 3> Mtimes(const TlsFiles& files) {
  const auto mtime = [](const std::string& path) -> int64_t {
    struct stat st {};
    if (path.empty() || stat(path.c_str(), &st) != 0) return 0;
    return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  };
  return {mtime(files.cert_path), mtime(files.key_path), mtime(files.client_ca_path)};
}

}  // namespace

// The pair a handshake presents: re-read when the files' times change, looked at no more
// often than every reload_seconds. Thread-safe.
struct TlsContext::Certificate {
  Certificate(TlsFiles f, bool ca, std::string n) : files(std::move(f)), use_client_ca(ca), name(std::move(n)) {}

  std::shared_ptr<const CertifiedKey> Current() {
    std::lock_guard<std::mutex> lock(mu);
    const absl::Time now = absl::Now();
    if (now - checked >= absl::Seconds(files.reload_seconds)) {
      checked = now;
      const auto fresh_mtimes = Mtimes(files);
      if (fresh_mtimes != mtimes) {
        std::string error;
        if (auto fresh = LoadCertifiedKey(files, use_client_ca, &error)) {
          current = std::move(fresh);
          mtimes = fresh_mtimes;
          spdlog::info("{}: TLS certificate re-read from {}", name, files.cert_path);
        } else {
          spdlog::error("{}: keeping the TLS certificate in use: {}", name, error);
        }
      }
    }
    return current;
  }

  const TlsFiles files;
  const bool use_client_ca;
  const std::string name;
  std::mutex mu;
  std::shared_ptr<const CertifiedKey> current;
  std::array<int64_t, 3> mtimes{};
  absl::Time checked;
};

namespace {

// OpenSSL's certificate callback: each handshake gets the current pair (and CA bundle,
// which verifies the client's certificate later in the same handshake).
int UseCurrentCertificate(SSL* ssl, void* arg) {
  const std::shared_ptr<const CertifiedKey> pair = static_cast<TlsContext::Certificate*>(arg)->Current();
  if (SSL_use_cert_and_key(ssl, pair->leaf, pair->key, pair->chain, 1) != 1) return 0;
  if (pair->client_ca != nullptr && SSL_set1_verify_cert_store(ssl, pair->client_ca) != 1) return 0;
  return 1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TlsContext>> TlsContext::Create(const TlsFiles& files, bool use_client_ca,
                                                               std::string name) {
  const bool client_ca = use_client_ca && !files.client_ca_path.empty();
  auto certificate = std::make_unique<Certificate>(files, client_ca, std::move(name));
  std::string error;
  certificate->current = LoadCertifiedKey(files, client_ca, &error);
  if (certificate->current == nullptr) return absl::FailedPreconditionError(error);
  certificate->mtimes = Mtimes(files);
  certificate->checked = absl::Now();

  std::unique_ptr<TlsContext> out(new TlsContext());
  out->context_ = std::make_unique<boost::asio::ssl::context>(boost::asio::ssl::context::tls_server);
  SSL_CTX* ctx = out->context_->native_handle();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_cert_cb(ctx, UseCurrentCertificate, certificate.get());
  if (client_ca) SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  out->certificate_ = std::move(certificate);
  return out;
}

TlsContext::~TlsContext() = default;

boost::asio::ssl::context& TlsContext::context() { return *context_; }

}  // namespace llmserve::http
