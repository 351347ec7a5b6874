#include "server/tls_credentials.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"
#include "server/engine_spec.h"

namespace llmserve {
namespace {

absl::StatusOr<std::string> ReadPem(const char* flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::FailedPreconditionError(absl::StrCat("--", flag, "=", path, ": cannot read the file"));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Bio = std::unique_ptr<BIO, BioFree>;

Bio MemoryBio(const std::string& text) { return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size()))); }

// The first certificate in `pem`, or null.
std::unique_ptr<X509, X509Free> FirstCertificate(const std::string& pem) {
  Bio bio = MemoryBio(pem);
  return std::unique_ptr<X509, X509Free>(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

absl::Status NotPem(const char* flag, const std::string& path, const char* what) {
  return absl::FailedPreconditionError(absl::StrCat("--", flag, "=", path, ": not a PEM ", what));
}

}  // namespace

absl::Status TlsFiles::Validate() const {
  if (cert_path.empty() != key_path.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together: give both (or neither, for plaintext)");
  }
  if (!client_ca_path.empty() && !enabled()) {
    return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)");
  }
  return FlagInRange("tls-reload-interval", reload_seconds, 1, 86400, " seconds");
}

std::string TlsFiles::Describe() const {
  if (!enabled()) return "plaintext";
  return absl::StrCat(client_ca_path.empty() ? "TLS" : "mutual TLS (client certificates required)",
                      ", files re-read every ", reload_seconds, " s");
}

absl::Status CheckTlsFiles(const TlsFiles& files) {
  absl::StatusOr<std::string> cert = ReadPem("tls-cert", files.cert_path);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem("tls-key", files.key_path);
  if (!key.ok()) return key.status();
  auto x509 = FirstCertificate(*cert);
  if (x509 == nullptr) return NotPem("tls-cert", files.cert_path, "certificate");
  Bio key_bio = MemoryBio(*key);
  std::unique_ptr<EVP_PKEY, KeyFree> pkey(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (pkey == nullptr) return NotPem("tls-key", files.key_path, "private key (or it is encrypted)");
  if (X509_check_private_key(x509.get(), pkey.get()) != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("--tls-key=", files.key_path, " is not the key of the certificate in --tls-cert=", files.cert_path));
  }
  if (!files.client_ca_path.empty()) {
    absl::StatusOr<std::string> ca = ReadPem("tls-client-ca", files.client_ca_path);
    if (!ca.ok()) return ca.status();
    if (FirstCertificate(*ca) == nullptr) return NotPem("tls-client-ca", files.client_ca_path, "certificate bundle");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const TlsFiles& files) {
  if (!files.enabled()) return grpc::InsecureServerCredentials();
  if (absl::Status s = CheckTlsFiles(files); !s.ok()) return s;
  const bool mutual = !files.client_ca_path.empty();
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      files.key_path, files.cert_path, files.client_ca_path, static_cast<unsigned>(files.reload_seconds));
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (mutual) {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::experimental::TlsServerCredentials(options);
  if (credentials == nullptr) return absl::InternalError("gRPC could not make TLS server credentials");
  return credentials;
}

}  // namespace llmserve
