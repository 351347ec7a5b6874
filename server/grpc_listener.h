// GrpcListener: llmserve's own listening socket for the gRPC server. It accepts TCP
// connections on its thread and hands each to the (port-less) grpc::Server through an
// external connection acceptor, which gives it the server's credentials (plaintext or
// TLS: grpc::AddInsecureChannelFromFd would be plaintext only). Owning the socket lets a drain close the port — new
// connections are refused by the kernel, so a proxy retries the call elsewhere — while
// the connections already accepted (and the calls arriving on them) are still served:
// grpc::Server::Shutdown alone would refuse those calls too, with a gRPC status that a
// proxy cannot retry.
//
//   Bind(host, port)    socket, bind and listen on every address `host` resolves to (no
//                       SO_REUSEPORT: a port in use fails); port 0 = any free port
//   Attach(builder, creds)  before BuildAndStart: the acceptor, with the credentials
//                       every connection gets (InsecureServerCredentials or TLS)
//   Start()             after BuildAndStart: the accept thread
//   Close()             stops accepting and closes the sockets (idempotent; the destructor
//                       calls it)
// An accept error (out of descriptors: EMFILE, ENFILE) leaves the connection queued, so
// poll wakes again at once: the accept thread backs off (10 ms, doubling to 1 s while the
// errors last) and logs the first error, then one line per 10 s with the count since.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

namespace llmserve {

class GrpcListener {
 public:
  // UNAVAILABLE naming host:port when nothing could be bound.
  static absl::StatusOr<std::unique_ptr<GrpcListener>> Bind(const std::string& host, int port);
  ~GrpcListener();
  GrpcListener(const GrpcListener&) = delete;
  GrpcListener& operator=(const GrpcListener&) = delete;

  // The bound port.
  int port() const { return port_; }
  // Registers the acceptor with `builder` (which then needs no ports of its own). Once,
  // before builder.BuildAndStart().
  void Attach(grpc::ServerBuilder& builder, std::shared_ptr<grpc::ServerCredentials> credentials);
  // Starts accepting, after Attach and BuildAndStart; the server must outlive Close().
  void Start();
  // Thread-safe. Stops accepting and closes the listening sockets.
  void Close();

 private:
  GrpcListener() = default;
  void Run();
  // Accepts every queued connection on `fd` and hands it to the server.
  void AcceptAll(int fd);
  // After a failed accept: logs (rate-limited) and sleeps the current backoff.
  void AcceptFailed(int error);

  std::vector<int> fds_;
  int wake_[2] = {-1, -1};  // a pipe: Close() writes, the accept thread wakes and exits
  int port_ = 0;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;
  std::thread thread_;
  std::atomic<bool> closed_{false};
  // Accept errors; touched by the accept thread only (Close() runs AcceptAll after the join).
  absl::Duration accept_backoff_ = absl::ZeroDuration();  // zero: no error since the last accept
  int64_t accept_errors_ = 0;                              // since the last log line
  absl::Time last_accept_log_ = absl::InfinitePast();
};

}  // namespace llmserve
