// Raw HTTP/1.1 over POSIX sockets for the hostile-client tests (tests/integration/
// http_hardening_test.cc): the test controls every byte and its timing.
//
//   ConnectTo(port, source)   a TCP connection to 127.0.0.1:port, optionally from another
//                             loopback source address (127.0.0.2) and with a small SO_RCVBUF
//   RawConnection             the socket plus a read buffer: ReadResponse reads exactly one
//                             response (status line, headers, Content-Length or chunked body),
//                             so pipelined responses are read one after another
//   WaitPeerClosed            reads (discarding) until EOF or ECONNRESET, bounded
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace llmserve::testing {

struct ConnectOptions {
  const char* source_ip = nullptr;  // bind to this local address first (e.g. "127.0.0.2")
  int rcvbuf = 0;                   // SO_RCVBUF before connect; 0 = the default
  int maxseg = 0;                   // TCP_MAXSEG before connect (a small MSS keeps the peer's send buffer small)
};

// A connected socket to 127.0.0.1:port, or -1 (errno-based reason in *error).
int ConnectTo(int port, const ConnectOptions& options = {}, std::string* error = nullptr);

// Sends all of `data` (MSG_NOSIGNAL); false if the connection broke.
bool SendAll(int fd, std::string_view data);

// One HTTP response as read off the wire.
struct RawResponse {
  int status = 0;
  std::string status_line;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                            // de-chunked
  bool chunked = false;
  // The header's value, or "" (name in any case).
  std::string Header(const std::string& name) const;
  // The body as JSON (null if it is not JSON).
  nlohmann::json Json() const;
};

// What a read ended with.
enum class ReadEnd {
  kOk,        // a whole response
  kClosed,    // EOF before a whole response (the peer closed)
  kReset,     // ECONNRESET (or another socket error)
  kTimeout,   // nothing more within the timeout
  kMalformed  // bytes that are not an HTTP/1.1 response
};
const char* ReadEndName(ReadEnd end);
// For gtest messages.
inline void PrintTo(ReadEnd end, std::ostream* os) { *os << ReadEndName(end); }

// A socket and what was read from it but not consumed yet.
class RawConnection {
 public:
  RawConnection() = default;
  explicit RawConnection(int fd) : fd_(fd) {}
  ~RawConnection();
  RawConnection(RawConnection&& other) noexcept;
  RawConnection& operator=(RawConnection&& other) noexcept;
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Close();
  bool Send(std::string_view data) { return SendAll(fd_, data); }

  // Reads one response (a 1xx counts as one) within `timeout`.
  ReadEnd ReadResponse(RawResponse* out, absl::Duration timeout);
  // Reads until `needle` is among the unconsumed bytes; false on EOF, error or timeout.
  bool ReadUntil(std::string_view needle, absl::Duration timeout);
  // Reads (discarding) until the peer closes or resets; kClosed / kReset / kTimeout.
  // `*bytes` (optional) counts what was read, buffered bytes included; `*tail` keeps the
  // last 256 bytes.
  ReadEnd WaitPeerClosed(absl::Duration timeout, size_t* bytes = nullptr, std::string* tail = nullptr);
  // True if the peer has closed (or reset) without blocking; pending data is read into the buffer.
  bool PeerClosedNow();

 private:
  // Reads more into buf_ before `deadline`: kOk when something arrived.
  ReadEnd Fill(absl::Time deadline);

  int fd_ = -1;
  std::string buf_;
};

// A request: method, path, extra header lines ("Name: value"), body; adds Host and (when
// there is a body or it is a POST) Content-Length and Content-Type: application/json.
std::string HttpRequest(const std::string& method, const std::string& path, const std::string& body = "",
                        const std::vector<std::string>& headers = {});

// True if `body` is an OpenAI error object {"error": {"message": str, "type": str, "param", "code"}}.
bool IsOpenAiError(const nlohmann::json& body);

}  // namespace llmserve::testing
