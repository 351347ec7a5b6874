// The TCP socket an HTTP request arrived on, so that a worker thread waiting for the
// engine notices when its client goes away (the request is then aborted).
//
// cpp-httplib 0.11 (Debian 12's) hands handlers no socket. Over TLS the request's SSL
// object knows it; over plain HTTP it is the one open socket of the process whose local
// and peer addresses are the request's (a TCP 4-tuple names one connection), found once
// per connection and remembered by the worker thread, which serves one connection at a
// time.
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
