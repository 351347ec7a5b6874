// HttpListener: one cpp-httplib server on its own port, plain HTTP or TLS, shared by the
// metrics endpoint (server/metrics_exposer.h) and the OpenAI-compatible API
// (server/openai_service.h).
//
//   Bind:    the port is bound at once (port 0: any free one), so a busy port is an error
//            at start-up, never a silent second server: no SO_REUSEPORT (httplib's default).
//   routes:  the owner adds its handlers to server() before Start.
//   Start:   a thread accepts; a pool of `threads` workers serves the connections, one
//            connection per worker while it is open (further connections wait for a worker).
//   Close:   the port closes (new connections are refused by the kernel); requests and
//            streams in flight go on; keep-alive connections close after their request in
//            flight, or after idle_seconds. Join waits for the workers (the destructor does
//            both).
//   TLS:     the certificate and key are read from their files at start (checked like the
//            gRPC port's) and again when they change, looked at no more often than every
//            reload_seconds, so a renewed certificate is served without a restart; a file
//            that fails to load keeps the pair in use (logged). With a client CA (and
//            require_client_cert) a client must present a certificate it signed.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/tls_credentials.h"

namespace httplib {
class Server;
}

namespace llmserve {

struct HttpListenerOptions {
  std::string name = "http";      // for log lines and errors ("metrics", "HTTP API")
  size_t threads = 8;             // workers: connections served at once
  int idle_seconds = 1;           // keep-alive: a connection silent this long between requests is closed
  size_t keep_alive_max = 1;      // requests per connection before it is closed
  int read_timeout_seconds = 2;   // a request that stalls this long while being read is dropped
  int write_timeout_seconds = 5;  // a client that reads nothing for this long is dropped
  size_t max_body_bytes = 0;      // larger request bodies get 413 before they are read; 0 = no limit
  bool use_client_ca = false;     // TLS: require a client certificate signed by tls.client_ca_path
};

class HttpListener {
 public:
  // Binds host:port (host as for gRPC: an IPv6 literal bare or bracketed); over TLS with
  // `tls` when it is enabled. UNAVAILABLE naming the address when it cannot be bound; the
  // TLS file errors of CheckTlsFiles.
  static absl::StatusOr<std::unique_ptr<HttpListener>> Bind(const std::string& host, int port, const TlsFiles* tls,
                                                            const HttpListenerOptions& options);
  ~HttpListener();  // Close + Join
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Add routes here before Start.
  httplib::Server& server() { return *server_; }
  int port() const { return port_; }
  // "host:port" as bound (IPv6 bracketed).
  const std::string& address() const { return address_; }

  // Starts accepting (once); returns when the server runs.
  void Start();
  // Closes the port; requests in flight go on. Idempotent; thread-safe.
  void Close();
  // Waits until every worker is done (after Close).
  void Join();

 private:
  HttpListener() = default;

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> started_{false};
  std::atomic<bool> closed_{false};
  std::atomic<int> listen_fd_{-1};
  int port_ = 0;
  std::string address_;
};

}  // namespace llmserve
