// One accepted HTTP/1.1 connection of an HttpServer (server/http/http_server.h says what it
// does for the client): internal to the server.
//
//   reader (reads ahead)                         writer (answers in order)
//   ─────────────────────                        ─────────────────────────
//   bytes → Beast's request parser               pending.front() → Handle → response | producer
//   head  → Screen (refusal: canned answer)      producer: Start(wake), Next() per write,
//   body  → pending (≤ max_pipelined)            last piece → next pending, or idle
//   EOF / error → the client is gone:            write error or write deadline → gone
//     the producer's ClientGone, close
//
// Everything runs on the connection's strand; the producer's wake posts to it.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "boost/asio/ip/tcp.hpp"
#include "server/http/http_message.h"
#include "server/http/http_server.h"

namespace boost::asio::ssl {
class context;
}

namespace llmserve::http {

class Connection;

// The connections of one server, counted per peer address for the caps. Thread-safe.
class ConnectionRegistry {
 public:
  explicit ConnectionRegistry(const HttpServerOptions& options) : options_(options) {}
  // Counts a new connection from `address`; false (nothing counted) when a cap is reached.
  bool TryAdd(const std::string& address);
  void Track(const std::shared_ptr<Connection>& connection);
  // A connection ended (its destructor).
  void Remove(const std::string& address, Connection* connection);
  int size() const;
  // Asks every connection to close now.
  void CloseAll();

 private:
  const HttpServerOptions options_;
  mutable std::mutex mu_;
  int total_ = 0;
  std::unordered_map<std::string, int> per_address_;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> live_;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  virtual ~Connection() = default;
  // Starts serving (TLS: the handshake first, within header_timeout).
  virtual void Run() = 0;
  // Closes the connection now (posted to its strand); a producer is told ClientGone.
  virtual void Abort() = 0;
};

// What every connection of a server shares (each holds a reference: a connection may be
// destroyed as late as the server's io_context).
struct ConnectionEnv {
  explicit ConnectionEnv(const HttpServerOptions& o, HttpHandler* h) : options(o), handler(h), registry(o) {}
  const HttpServerOptions options;
  HttpHandler* const handler;  // outlives the server
  ConnectionRegistry registry;
  std::atomic<int> lingering_refusals{0};  // RefuseConnection's drains in progress
};

// A counted connection (ConnectionRegistry::TryAdd succeeded) on `socket`, plain or over
// TLS with `tls` (null: plain).
std::shared_ptr<Connection> MakeConnection(boost::asio::ip::tcp::socket socket, std::string address,
                                           std::shared_ptr<ConnectionEnv> env, boost::asio::ssl::context* tls);

// Answers a connection over a cap: a 503 with Connection: close, best effort (bounded by a
// second), then closes it. TLS connections are closed at once.
void RefuseConnection(boost::asio::ip::tcp::socket socket, std::shared_ptr<ConnectionEnv> env, bool tls);

}  // namespace llmserve::http
