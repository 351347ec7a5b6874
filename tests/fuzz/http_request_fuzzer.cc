// libFuzzer target: the HTTP server's request path (server/http/: Beast's parser, our
// framing checks, screening, pipelining, streamed and whole answers) over a real loopback
// connection. Each input is written to a fresh connection as a client would (the first
// byte picks how it is cut into writes), then the client closes its side and reads until
// the server closes. Whatever the bytes, the server must answer only well-formed HTTP/1.1
// responses and close the connection (no crash, hang, leak or sanitizer report).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "server/http/http_server.h"

namespace {

using llmserve::http::HttpAnswer;
using llmserve::http::HttpPiece;
using llmserve::http::HttpProducer;
using llmserve::http::HttpRequest;
using llmserve::http::HttpResponse;

// Streams three pieces, making the connection wait for a wake before each.
class ThreePieces final : public HttpProducer {
 public:
  void Start(std::function<void()> wake) override {
    wake_ = std::move(wake);
    wake_();
  }
  std::optional<HttpPiece> Next() override {
    if (!ready_) {
      ready_ = true;
      wake_();
      return std::nullopt;
    }
    ready_ = false;
    HttpPiece piece;
    if (sent_ == 0) {
      piece.head = HttpResponse();
      piece.head->stream = true;
      piece.head->content_type = "text/event-stream";
    }
    piece.data = "data: " + std::to_string(sent_) + "\n\n";
    piece.last = ++sent_ == 3;
    return piece;
  }
  void ClientGone() override {}

 private:
  std::function<void()> wake_;
  bool ready_ = false;
  int sent_ = 0;
};

class Handler final : public llmserve::http::HttpHandler {
 public:
  std::optional<HttpResponse> Screen(const HttpRequest& head) override {
    if (head.path == "/refuse") return TransportError(401, "no");
    return std::nullopt;
  }
  HttpAnswer Handle(HttpRequest request) override {
    if (request.path == "/stream") return std::make_unique<ThreePieces>();
    HttpResponse r;
    r.content_type = "text/plain";
    r.body = request.method + " " + request.target + " " + std::to_string(request.body.size());
    return r;
  }
  HttpResponse TransportError(int status, std::string message) override {
    HttpResponse r;
    r.status = status;
    r.body = std::move(message);
    return r;
  }
};

llmserve::http::HttpServer& Server() {
  static Handler handler;
  static std::unique_ptr<llmserve::http::HttpServer> server = [] {
    llmserve::http::HttpServerOptions o;
    o.threads = 1;
    o.idle_timeout = absl::Milliseconds(200);
    o.header_timeout = absl::Milliseconds(200);
    o.body_timeout = absl::Milliseconds(200);
    o.write_timeout = absl::Milliseconds(500);
    o.max_body_bytes = 4096;
    o.max_header_bytes = 2048;
    o.max_pipelined = 4;
    auto s = llmserve::http::HttpServer::Bind("127.0.0.1", 0, nullptr, o, &handler);
    if (!s.ok()) {
      fprintf(stderr, "cannot bind: %s\n", std::string(s.status().message()).c_str());
      abort();
    }
    (*s)->Start();
    return *std::move(s);
  }();
  return *server;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  llmserve::http::HttpServer& server = Server();
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  timeval tv{5, 0};  // far beyond every deadline above: a hang is a finding
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return 0;
  }
  const size_t cut = size > 0 ? 1 + data[0] % 64 : 1;  // bytes per write
  for (size_t at = size > 0 ? 1 : 0; at < size; at += cut) {
    const size_t n = std::min(cut, size - at);
    if (send(fd, data + at, n, MSG_NOSIGNAL) != static_cast<ssize_t>(n)) break;  // the server closed
  }
  shutdown(fd, SHUT_WR);
  std::string reply;
  char buf[4096];
  ssize_t n = 0;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) reply.append(buf, static_cast<size_t>(n));
  close(fd);
  if (n < 0 && errno == EAGAIN) {
    fprintf(stderr, "the server did not close the connection\n");
    abort();
  }
  if (!reply.empty() && reply.rfind("HTTP/1.1 ", 0) != 0) {
    fprintf(stderr, "not an HTTP/1.1 response: %.80s\n", reply.c_str());
    abort();
  }
  return 0;
}
