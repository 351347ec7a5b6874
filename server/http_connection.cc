#include "server/http_connection.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "httplib.h"

namespace llmserve {
namespace {

// "HEX:PORT" from /proc/net/tcp{,6} as an address (inet_ntop's text, which is what httplib's
// getnameinfo(NI_NUMERICHOST) gives too) and a port; false if malformed. The address is
// the kernel's in-memory words, printed per 32-bit word in host order.
bool ParseEndpoint(const std::string& field, std::string* addr, int* port) {
  const size_t colon = field.find(':');
  if (colon == std::string::npos) return false;
  const std::string hex = field.substr(0, colon);
  *port = static_cast<int>(std::strtol(field.c_str() + colon + 1, nullptr, 16));
  if (hex.size() != 8 && hex.size() != 32) return false;
  std::array<uint32_t, 4> words{};
  for (size_t w = 0; w < hex.size() / 8; ++w) {
    words[w] = static_cast<uint32_t>(std::strtoul(hex.substr(w * 8, 8).c_str(), nullptr, 16));
  }
  char text[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(hex.size() == 8 ? AF_INET : AF_INET6, words.data(), text, sizeof(text)) == nullptr) return false;
  *addr = text;
  return true;
}

// The inode of this network namespace's TCP connection with the request's local port and
// peer; 0 if none. (The kernel's table, read by path: no other thread's descriptor is used.)
unsigned long ConnectionInode(const httplib::Request& req) {
  for (const char* table : {"/proc/net/tcp6", "/proc/net/tcp"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, skip;
      unsigned long inode = 0;
      fields >> slot >> local >> remote >> state;
      for (int i = 0; i < 5; ++i) fields >> skip;  // tx:rx queues, timer, retransmits, uid, timeout
      fields >> inode;
      std::string local_addr, remote_addr;
      int local_port = 0, remote_port = 0;
      if (state == "0A" || !ParseEndpoint(local, &local_addr, &local_port) ||  // 0A: a listening socket
          !ParseEndpoint(remote, &remote_addr, &remote_port)) {
        continue;
      }
      if (local_port == req.local_port && remote_port == req.remote_port && remote_addr == req.remote_addr &&
          inode != 0) {
        return inode;
      }
    }
  }
  return 0;
}

// The descriptor of this process that is socket `inode` (readlink of /proc/self/fd/N, a
// path operation); -1 if none.
int DescriptorOf(unsigned long inode) {
  const std::string target = "socket:[" + std::to_string(inode) + "]";
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int found = -1;
  char link[64];
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = readlink(path.c_str(), link, sizeof(link) - 1);
    if (n <= 0) continue;
    link[n] = '\0';
    if (target == link) {
      found = std::atoi(e->d_name);
      break;
    }
  }
  closedir(dir);
  return found;
}

// What a worker thread found for the connection it serves: requests on a keep-alive
// connection repeat its endpoints. While this thread serves the connection, its
// descriptor cannot be closed or reused, so the remembered one is still it.
struct CachedConnection {
  int fd = -1;
  int local_port = 0;
  int remote_port = 0;
  std::string remote_addr;
  unsigned long inode = 0;
};

}  // namespace

int ConnectionSocket(const httplib::Request& req) {
  if (req.ssl != nullptr) return SSL_get_fd(req.ssl);
  thread_local CachedConnection cached;
  if (cached.fd >= 0 && cached.local_port == req.local_port && cached.remote_port == req.remote_port &&
      cached.remote_addr == req.remote_addr) {
    // The same endpoints: the same connection unless the client reused its port for a new
    // one that this thread now serves; the descriptor is then another, which its inode tells.
    struct stat st {};
    if (fstat(cached.fd, &st) == 0 && st.st_ino == cached.inode) return cached.fd;
  }
  cached = CachedConnection();
  const unsigned long inode = ConnectionInode(req);
  if (inode == 0) return -1;
  const int fd = DescriptorOf(inode);
  if (fd < 0) return -1;
  cached = {fd, req.local_port, req.remote_port, req.remote_addr, inode};
  return fd;
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
