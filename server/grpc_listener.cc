#include "server/grpc_listener.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "spdlog/spdlog.h"

namespace llmserve {
namespace {

constexpr absl::Duration kMinAcceptBackoff = absl::Milliseconds(10);
constexpr absl::Duration kMaxAcceptBackoff = absl::Seconds(1);
constexpr absl::Duration kAcceptLogInterval = absl::Seconds(10);

// The port `fd` is bound to, or 0.
int BoundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return 0;
}

// A listening socket on `ai` with `port` (0: any), or -1.
int Listen(const addrinfo* ai, int port) {
  const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  // TIME_WAIT must not block a restart
  sockaddr_storage addr{};
  std::memcpy(&addr, ai->ai_addr, ai->ai_addrlen);
  if (addr.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&addr)->sin_port = htons(static_cast<uint16_t>(port));
  if (addr.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GrpcListener>> GrpcListener::Bind(const std::string& host, int port) {
  std::unique_ptr<GrpcListener> l(new GrpcListener());
  std::string name = host;
  if (name.size() > 2 && name.front() == '[' && name.back() == ']') name = name.substr(1, name.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (const int rc = getaddrinfo(name.c_str(), nullptr, &hints, &res); rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot resolve ", host, ": ", gai_strerror(rc)));
  }
  // Every address on one port: the first bound one's when `port` is 0.
  for (const addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    const int fd = Listen(ai, l->port_ != 0 ? l->port_ : port);
    if (fd < 0) continue;
    if (l->port_ == 0) l->port_ = BoundPort(fd);
    l->fds_.push_back(fd);
  }
  freeaddrinfo(res);
  if (l->fds_.empty() || l->port_ == 0) return absl::UnavailableError("the address is in use or not available");
  if (pipe2(l->wake_, O_CLOEXEC | O_NONBLOCK) != 0) return absl::InternalError("pipe2 failed");
  return l;
}

GrpcListener::~GrpcListener() {
  Close();
  for (int fd : wake_) {
    if (fd >= 0) close(fd);
  }
}

void GrpcListener::Attach(grpc::ServerBuilder& builder, std::shared_ptr<grpc::ServerCredentials> credentials) {
  acceptor_ = builder.experimental().AddExternalConnectionAcceptor(
      grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD, std::move(credentials));
}

void GrpcListener::Start() {
  thread_ = std::thread([this] { Run(); });
}

void GrpcListener::Close() {
  if (closed_.exchange(true)) return;
  if (wake_[1] >= 0) (void)!write(wake_[1], "x", 1);
  if (thread_.joinable()) thread_.join();
  // Closing a listening socket resets the connections still in its accept queue, whose
  // clients may have sent their call already (a proxy cannot retry it then): take them
  // first. What arrives between the last accept and the close (microseconds) is reset.
  for (int fd : fds_) {
    if (acceptor_ != nullptr) AcceptAll(fd);
    close(fd);  // from now on the kernel refuses connections
  }
  fds_.clear();
}

void GrpcListener::AcceptAll(int fd) {
  while (true) {
    const int conn = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (conn < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) AcceptFailed(errno);
      return;
    }
    accept_backoff_ = absl::ZeroDuration();
    const int one = 1;
    setsockopt(conn, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters params;
    params.listener_fd = fd;
    params.fd = conn;
    acceptor_->HandleNewConnection(&params);  // gRPC owns `conn` from here
  }
}

void GrpcListener::AcceptFailed(int error) {
  ++accept_errors_;
  accept_backoff_ = std::clamp(accept_backoff_ * 2, kMinAcceptBackoff, kMaxAcceptBackoff);
  const absl::Time now = absl::Now();
  if (now - last_accept_log_ >= kAcceptLogInterval) {
    spdlog::warn("gRPC listener: accept: {} ({} failed accepts since the last report; retrying every {} at most)",
                 std::strerror(error), accept_errors_, absl::FormatDuration(accept_backoff_));
    accept_errors_ = 0;
    last_accept_log_ = now;
  }
  absl::SleepFor(accept_backoff_);
}

void GrpcListener::Run() {
  std::vector<pollfd> polls;
  for (int fd : fds_) polls.push_back({fd, POLLIN, 0});
  polls.push_back({wake_[0], POLLIN, 0});
  while (!closed_.load()) {
    if (poll(polls.data(), polls.size(), -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("gRPC listener: poll: {}", std::strerror(errno));
      return;
    }
    if (polls.back().revents != 0) return;  // Close()
    for (size_t i = 0; i + 1 < polls.size(); ++i) {
      if (polls[i].revents != 0) AcceptAll(polls[i].fd);
    }
  }
}

}  // namespace llmserve
