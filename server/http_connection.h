// The TCP socket an HTTP request arrived on, so that a worker thread waiting for the
// engine notices when its client goes away (the request is then aborted).
//
// cpp-httplib 0.11 (Debian 12's) hands handlers no socket. Over TLS the request's SSL
// object knows it. Over plain HTTP it is found by path, never by trying other threads'
// descriptors (which they may be closing): the kernel's TCP table (/proc/net/tcp, tcp6)
// gives the inode of the connection with the request's local port and peer (a TCP 4-tuple
// names one connection), and /proc/self/fd the descriptor that is that socket. Once per
// connection: the worker thread, which serves one connection at a time, remembers it.
#pragma once

#include "absl/time/time.h"

namespace httplib {
struct Request;
}

namespace llmserve {

// The request's socket, or -1 when it cannot be found (then disconnects go unnoticed until
// a write fails). Call on the thread that serves the request.
int ConnectionSocket(const httplib::Request& request);

// What ended a wait.
enum class SocketWake {
  kReady,       // `wake_fd` became readable
  kPeerClosed,  // the client closed its side of the connection, or it broke
  kTimeout,
};

// Waits until `wake_fd` is readable, the peer closes `socket_fd` (POLLRDHUP; -1: not
// watched), or `timeout` (InfiniteDuration: none) passes.
SocketWake WaitReadableOrPeerClosed(int wake_fd, int socket_fd, absl::Duration timeout);

}  // namespace llmserve
