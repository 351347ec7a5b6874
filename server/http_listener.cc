#include "server/http_listener.h"

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "httplib.h"
#include "spdlog/spdlog.h"

namespace llmserve {
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

// The pair a handshake presents: re-read when the files' times change, looked at no more
// often than every reload_seconds.
class ReloadingCertificate {
 public:
  static absl::StatusOr<std::unique_ptr<ReloadingCertificate>> Load(const TlsFiles& files, bool use_client_ca,
                                                                    std::string name) {
    std::unique_ptr<ReloadingCertificate> r(new ReloadingCertificate(files, use_client_ca, std::move(name)));
    std::string error;
    r->current_ = LoadCertifiedKey(files, use_client_ca, &error);
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
        if (auto fresh = LoadCertifiedKey(files_, use_client_ca_, &error)) {
          current_ = std::move(fresh);
          mtimes_ = mtimes;
          spdlog::info("{}: TLS certificate re-read from {}", name_, files_.cert_path);
        } else {
          spdlog::error("{}: keeping the TLS certificate in use: {}", name_, error);
        }
      }
    }
    return current_;
  }

 private:
  ReloadingCertificate(TlsFiles files, bool use_client_ca, std::string name)
      : files_(std::move(files)), use_client_ca_(use_client_ca), name_(std::move(name)) {}

  const TlsFiles files_;
  const bool use_client_ca_;
  const std::string name_;
  std::mutex mu_;
  std::shared_ptr<const CertifiedKey> current_;
  std::array<int64_t, 3> mtimes_{};
  absl::Time checked_;
};

// OpenSSL's certificate callback: each handshake gets the current pair (and CA bundle,
// which verifies the client's certificate later in the same handshake).
int UseCurrentCertificate(SSL* ssl, void* arg) {
  const std::shared_ptr<const CertifiedKey> pair = static_cast<ReloadingCertificate*>(arg)->Current();
  if (SSL_use_cert_and_key(ssl, pair->leaf, pair->key, pair->chain, 1) != 1) return 0;
  if (pair->client_ca != nullptr && SSL_set1_verify_cert_store(ssl, pair->client_ca) != 1) return 0;
  return 1;
}

// The httplib SSLServer keeps no pointer to the callback's argument: it lives with the
// server object.
class TlsServer final : public httplib::SSLServer {
 public:
  TlsServer(std::unique_ptr<ReloadingCertificate> certificate, bool require_client_cert)
      : httplib::SSLServer([cert = certificate.get(), require_client_cert](SSL_CTX& ctx) {
          SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
          SSL_CTX_set_cert_cb(&ctx, UseCurrentCertificate, cert);
          if (require_client_cert) SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
          return true;
        }),
        certificate_(std::move(certificate)) {}

 private:
  std::unique_ptr<ReloadingCertificate> certificate_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<HttpListener>> HttpListener::Bind(const std::string& host, int port,
                                                                 const TlsFiles* tls,
                                                                 const HttpListenerOptions& options) {
  std::unique_ptr<HttpListener> l(new HttpListener());
  if (tls != nullptr && tls->enabled()) {
    const bool client_ca = options.use_client_ca && !tls->client_ca_path.empty();
    absl::StatusOr<std::unique_ptr<ReloadingCertificate>> cert =
        ReloadingCertificate::Load(*tls, client_ca, options.name);
    if (!cert.ok()) return cert.status();
    l->server_ = std::make_unique<TlsServer>(*std::move(cert), client_ca);
  } else {
    l->server_ = std::make_unique<httplib::Server>();
  }
  httplib::Server& s = *l->server_;
  const size_t threads = options.threads;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.set_keep_alive_timeout(options.idle_seconds);
  s.set_keep_alive_max_count(options.keep_alive_max);
  s.set_read_timeout(options.read_timeout_seconds, 0);
  s.set_write_timeout(options.write_timeout_seconds, 0);
  // Streams write one small event per token: Nagle would hold each behind the last one's ACK.
  s.set_tcp_nodelay(true);
  if (options.max_body_bytes > 0) s.set_payload_max_length(options.max_body_bytes);
  // httplib's default adds SO_REUSEPORT, which would let a second server share the port.
  // The last socket it makes is the one it binds (it tries the addresses in turn).
  s.set_socket_options([fd = &l->listen_fd_](int sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    fd->store(sock);
  });
  std::string bare = host;
  if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') bare = bare.substr(1, bare.size() - 2);
  const bool v6 = bare.find(':') != std::string::npos;
  l->port_ = port == 0 ? s.bind_to_any_port(bare) : (s.bind_to_port(bare, port) ? port : -1);
  const auto address = [&](int p) { return v6 ? absl::StrCat("[", bare, "]:", p) : absl::StrCat(bare, ":", p); };
  if (l->port_ <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot serve ", options.name, " on ", address(port),
                                               ": the address is in use or not available"));
  }
  l->address_ = address(l->port_);
  // httplib listens with a backlog of 5: a burst of connections (16 clients at once) would
  // overflow it and wait a second for the SYN to be retransmitted. listen() again raises it.
  if (const int fd = l->listen_fd_.load(); fd >= 0) ::listen(fd, SOMAXCONN);
  return l;
}

void HttpListener::Start() {
  if (started_.exchange(true)) return;
  httplib::Server& s = *server_;
  thread_ = std::thread([&s] { s.listen_after_bind(); });
  // stop() only ends a server that is running: wait for it, so that Close cannot miss it.
  while (!s.is_running()) absl::SleepFor(absl::Milliseconds(1));
}

void HttpListener::Close() {
  if (closed_.exchange(true)) return;
  const int fd = listen_fd_.load();
  if (fd < 0) return;
  if (!started_.load()) {
    close(fd);  // httplib never took it over
    return;
  }
  // Not httplib's stop(): that also ends the streams in flight (its chunked writer stops
  // when the server stops). A listening socket shut down refuses new connections, and
  // httplib's accept loop ends (accept fails) and waits for its workers; keep-alive
  // connections end after their request in flight, or idle_seconds.
  shutdown(fd, SHUT_RDWR);
}

void HttpListener::Join() {
  if (thread_.joinable()) thread_.join();
}

HttpListener::~HttpListener() {
  Close();
  Join();
}

}  // namespace llmserve
