// HttpServer: HTTP/1.1 on Boost.Beast's parser and Asio, plain or TLS, for an open network:
// the OpenAI-compatible API and the metrics port run on it.
//
//   Bind ─▶ Start: `threads` I/O threads run every connection (a connection is not a thread:
//           a waiting or streaming request holds none). Each connection lives on its own strand.
//   accept: beyond max_connections, or max_connections_per_address from one peer address,
//           a connection is refused at once (plain: a 503 with Connection: close; TLS: closed).
//   a connection, per request (several may be sent in one write: pipelined; they are read
//   ahead, up to max_pipelined, and answered one after another in order):
//       waiting for its first byte .. idle_timeout (only while nothing is being answered)
//       first byte → whole head ..... header_timeout, at most max_header_bytes   (else closed; 431)
//       head → Screen (keys, route) . a refusal is answered and the body left unread
//       body ........................ by head + body_timeout + received / body_min_rate, at
//                                     most max_body_bytes (413 as soon as Content-Length says so)
//       Handle → the answer; each write must progress within write_timeout
//     Bad framing (a bad or negative Content-Length, Content-Length with Transfer-Encoding,
//     a transfer coding other than chunked, a malformed chunk) is answered 400 at once and
//     the connection closed. While an answer is produced, reading goes on, so a client that
//     closes its connection is seen at once (the producer's ClientGone).
//   Close: the port closes (the kernel refuses new connections); connections go on.
//   Stop (and the destructor): every connection is closed, producers told ClientGone.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/http/http_message.h"
#include "server/tls_credentials.h"

namespace llmserve::http {

struct HttpServerOptions {
  std::string name = "http";                  // for log lines and errors ("metrics", "the HTTP API")
  int threads = 2;                            // I/O threads (they also run the handlers)
  int max_connections = 1024;                 // open at once; beyond: refused
  int max_connections_per_address = 256;      // from one peer address; beyond: refused (0 = no cap)
  absl::Duration idle_timeout = absl::Seconds(5);     // waiting for a request's first byte
  absl::Duration header_timeout = absl::Seconds(10);  // first byte → the whole head
  absl::Duration body_timeout = absl::Seconds(10);    // the body's allowance before its rate counts
  int64_t body_min_rate = 1024;               // bytes/s the body must average beyond body_timeout
  absl::Duration write_timeout = absl::Seconds(30);   // a write that makes no progress this long: dropped
  size_t max_header_bytes = 16 << 10;         // request line + headers
  size_t max_body_bytes = 4 << 20;            // 413 beyond
  int max_pipelined = 16;                     // requests read ahead of the one being answered
  bool use_client_ca = false;                 // TLS: require a certificate signed by tls.client_ca_path

  // INVALID_ARGUMENT naming the field for a value out of range.
  absl::Status Validate() const;
  // "4 threads, 1024 connections (256 per address), idle 5s, head 10s (16384 bytes), body 10s +
  // 1024 B/s, write 30s, pipelining 16": the start-up line's.
  std::string Describe() const;
};

class HttpServer {
 public:
  // Binds host:port (host: an IPv4 or IPv6 literal, bare or bracketed, or a name; port 0:
  // any free one) over TLS when `tls` is enabled. UNAVAILABLE naming the address when it
  // cannot be bound; the TLS file errors of CheckTlsFiles; INVALID_ARGUMENT for bad options.
  // `handler` must outlive the server.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Bind(const std::string& host, int port, const TlsFiles* tls,
                                                          const HttpServerOptions& options, HttpHandler* handler);
  ~HttpServer();  // Stop
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;
  // "host:port" as bound (IPv6 bracketed).
  const std::string& address() const;

  // Starts the I/O threads and accepting. Once.
  void Start();
  // Closes the port; connections and their requests go on. Idempotent; thread-safe.
  void Close();
  // Closes every connection and joins the threads. Idempotent.
  void Stop();

  // Connections open now (for tests and logs).
  int connections() const;

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmserve::http
