#include "server/metrics_exposer.h"

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "httplib.h"
#include "prometheus/text_serializer.h"
#include "spdlog/spdlog.h"

namespace llmserve {
namespace {

constexpr size_t kThreads = 8;
// A scraper sends its request right after connecting: a connection silent for this long
// (before its request, or within it) is dropped.
constexpr int kIdleSeconds = 1;
constexpr int kReadTimeoutSeconds = 2;

// A certificate chain and its key, as OpenSSL objects.
struct CertifiedKey {
  X509* leaf = nullptr;
  STACK_OF(X509)* chain = nullptr;  // the certificates after the leaf
  EVP_PKEY* key = nullptr;
  ~CertifiedKey() {
    X509_free(leaf);
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
  }
};

// Reads the PEM files; null (and *error) if they do not hold a certificate and its key.
std::shared_ptr<const CertifiedKey> LoadCertifiedKey(const TlsFiles& files, std::string* error) {
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
  return out;
}

// The modification times of the two files (0 when missing), to notice a renewal.
std::pair<int64_t, int64_t> Mtimes(const TlsFiles& files) {
  const auto mtime = [](const std::string& path) -> int64_t {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return 0;
    return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  };
  return {mtime(files.cert_path), mtime(files.key_path)};
}

// The pair a handshake presents: re-read when the files' times change, looked at no more
// often than every reload_seconds.
class ReloadingCertificate {
 public:
  static absl::StatusOr<std::unique_ptr<ReloadingCertificate>> Load(const TlsFiles& files) {
    std::unique_ptr<ReloadingCertificate> r(new ReloadingCertificate(files));
    std::string error;
    r->current_ = LoadCertifiedKey(files, &error);
    if (r->current_ == nullptr) return absl::FailedPreconditionError(error);
    r->mtimes_ = Mtimes(files);
    r->checked_ = absl::Now();
    return r;
  }

  std::shared_ptr<const CertifiedKey> Current() {
    std::lock_guard<std::mutex> lock(mu_);
    const absl::Time now = absl::Now();
    if (now - checked_ >= absl::Seconds(files_.reload_seconds)) {
      checked_ = now;
      const auto mtimes = Mtimes(files_);
      if (mtimes != mtimes_) {
        std::string error;
        if (auto fresh = LoadCertifiedKey(files_, &error)) {
          current_ = std::move(fresh);
          mtimes_ = mtimes;
          spdlog::info("metrics: TLS certificate re-read from {}", files_.cert_path);
        } else {
          spdlog::error("metrics: keeping the TLS certificate in use: {}", error);
        }
      }
    }
    return current_;
  }

 private:
  explicit ReloadingCertificate(TlsFiles files) : files_(std::move(files)) {}

  const TlsFiles files_;
  std::mutex mu_;
  std::shared_ptr<const CertifiedKey> current_;
  std::pair<int64_t, int64_t> mtimes_;
  absl::Time checked_;
};

// OpenSSL's certificate callback: each handshake gets the current pair.
int UseCurrentCertificate(SSL* ssl, void* arg) {
  const std::shared_ptr<const CertifiedKey> pair = static_cast<ReloadingCertificate*>(arg)->Current();
  return SSL_use_cert_and_key(ssl, pair->leaf, pair->key, pair->chain, 1) == 1 ? 1 : 0;
}

// The httplib SSLServer keeps no pointer to the callback's argument: it lives with the
// server object.
class TlsMetricsServer final : public httplib::SSLServer {
 public:
  explicit TlsMetricsServer(std::unique_ptr<ReloadingCertificate> certificate)
      : httplib::SSLServer([cert = certificate.get()](SSL_CTX& ctx) {
          SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
          SSL_CTX_set_cert_cb(&ctx, UseCurrentCertificate, cert);
          return true;
        }),
        certificate_(std::move(certificate)) {}

 private:
  std::unique_ptr<ReloadingCertificate> certificate_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsExposer>> MetricsExposer::Start(const std::string& host, int port,
                                                                     std::shared_ptr<prometheus::Registry> registry,
                                                                     const TlsFiles* tls) {
  std::unique_ptr<MetricsExposer> e(new MetricsExposer());
  if (tls != nullptr && tls->enabled()) {
    absl::StatusOr<std::unique_ptr<ReloadingCertificate>> cert = ReloadingCertificate::Load(*tls);
    if (!cert.ok()) return cert.status();
    e->server_ = std::make_unique<TlsMetricsServer>(*std::move(cert));
  } else {
    e->server_ = std::make_unique<httplib::Server>();
  }
  httplib::Server& s = *e->server_;
  s.new_task_queue = [] { return new httplib::ThreadPool(kThreads); };
  s.set_keep_alive_timeout(kIdleSeconds);
  s.set_read_timeout(kReadTimeoutSeconds, 0);
  s.set_keep_alive_max_count(1);
  // httplib's default adds SO_REUSEPORT, which would let a second server share the port.
  s.set_socket_options([](int sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  s.Get("/metrics", [registry](const httplib::Request&, httplib::Response& res) {
    res.set_content(prometheus::TextSerializer().Serialize(registry->Collect()), "text/plain; version=0.0.4");
  });
  std::string bare = host;
  if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') bare = bare.substr(1, bare.size() - 2);
  const bool v6 = bare.find(':') != std::string::npos;
  const std::string address = v6 ? absl::StrCat("[", bare, "]:", port) : absl::StrCat(bare, ":", port);
  e->port_ = port == 0 ? s.bind_to_any_port(bare) : (s.bind_to_port(bare, port) ? port : -1);
  if (e->port_ <= 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", address, ": the address is in use or not available"));
  }
  e->thread_ = std::thread([&s] { s.listen_after_bind(); });
  // stop() only ends a server that is running: wait for it, so the destructor cannot hang.
  while (!s.is_running()) absl::SleepFor(absl::Milliseconds(1));
  return e;
}

MetricsExposer::~MetricsExposer() {
  if (server_ != nullptr) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace llmserve
