// GrpcListener: llmserve's own listening socket for the gRPC server. It accepts TCP
// connections on its thread and hands each to the (port-less) grpc::Server with
// grpc::AddInsecureChannelFromFd. Owning the socket lets a drain close the port — new
// connections are refused by the kernel, so a proxy retries the call elsewhere — while
// the connections already accepted (and the calls arriving on them) are still served:
// grpc::Server::Shutdown alone would refuse those calls too, with a gRPC status that a
// proxy cannot retry.
//
//   Bind(host, port)    socket, bind and listen on every address `host` resolves to (no
//                       SO_REUSEPORT: a port in use fails); port 0 = any free port
//   Start(server)       the accept thread
//   Close()             stops accepting and closes the sockets (idempotent; the destructor
//                       calls it)
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/server.h"

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
  // Starts accepting; `server` (started, without ports of its own) must outlive Close().
  void Start(grpc::Server* server);
  // Thread-safe. Stops accepting and closes the listening sockets.
  void Close();

 private:
  GrpcListener() = default;
  void Run();
  // Accepts every queued connection on `fd` and hands it to the server.
  void AcceptAll(int fd);

  std::vector<int> fds_;
  int wake_[2] = {-1, -1};  // a pipe: Close() writes, the accept thread wakes and exits
  int port_ = 0;
  grpc::Server* server_ = nullptr;
  std::thread thread_;
  std::atomic<bool> closed_{false};
};

}  // namespace llmserve
