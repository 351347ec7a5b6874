#include "server/http_connection.h"

#include <dirent.h>
#include <netdb.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "httplib.h"

namespace llmserve {
namespace {

// A socket's local port, peer address (as httplib prints it: getnameinfo, numeric) and
// peer port; false when it is not a connected IP socket.
bool Endpoints(int fd, int* local_port, std::string* peer_addr, int* peer_port) {
  sockaddr_storage local{}, peer{};
  socklen_t local_len = sizeof(local), peer_len = sizeof(peer);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) return false;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return false;
  char host[NI_MAXHOST], local_serv[NI_MAXSERV], peer_serv[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&local), local_len, nullptr, 0, local_serv, sizeof(local_serv),
                  NI_NUMERICSERV) != 0 ||
      getnameinfo(reinterpret_cast<sockaddr*>(&peer), peer_len, host, sizeof(host), peer_serv, sizeof(peer_serv),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return false;
  }
  *local_port = std::atoi(local_serv);
  *peer_port = std::atoi(peer_serv);
  *peer_addr = host;
  return true;
}

bool Matches(int fd, const httplib::Request& req) {
  int local_port = 0, peer_port = 0;
  std::string peer_addr;
  return Endpoints(fd, &local_port, &peer_addr, &peer_port) && local_port == req.local_port &&
         peer_port == req.remote_port && peer_addr == req.remote_addr;
}

// The open socket whose endpoints are the request's, from /proc/self/fd; -1 if none.
int FindSocket(const httplib::Request& req) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int found = -1;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (Matches(static_cast<int>(fd), req)) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  return found;
}

}  // namespace

int ConnectionSocket(const httplib::Request& req) {
  if (req.ssl != nullptr) return SSL_get_fd(req.ssl);
  // The worker serves one connection at a time, often for several requests.
  thread_local int cached = -1;
  if (cached >= 0 && Matches(cached, req)) return cached;
  cached = FindSocket(req);
  return cached;
}

SocketWake WaitReadableOrPeerClosed(int wake_fd, int socket_fd, absl::Duration timeout) {
  pollfd fds[2] = {{wake_fd, POLLIN, 0}, {socket_fd, POLLRDHUP, 0}};
  const nfds_t n = socket_fd >= 0 ? 2 : 1;
  const int ms = timeout == absl::InfiniteDuration() ? -1
                                                     : static_cast<int>(absl::ToInt64Milliseconds(timeout) + 1);
  while (true) {
    const int r = poll(fds, n, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return SocketWake::kTimeout;
    if (r < 0) return SocketWake::kReady;  // cannot poll: let the caller look at the channel
    if (n == 2 && (fds[1].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0) return SocketWake::kPeerClosed;
    return SocketWake::kReady;
  }
}

}  // namespace llmserve
