// What the HTTP server (server/http/http_server.h) and the handlers behind it exchange:
// requests as read, whole responses, and answers produced over time (a generation).
//
//   connection ──head──▶ HttpHandler::Screen ──refusal──▶ response, body left unread
//        │ nullopt: read the body
//        ▼
//   HttpHandler::Handle(request) ──▶ HttpResponse                      (written at once)
//                                └─▶ HttpProducer: Start(wake) ... Next() per write ... last piece
//                                    ClientGone() when the client leaves first
//
// No networking library type appears here: handlers are testable without a socket.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace llmserve::http {

struct HttpHeader {
  std::string name;
  std::string value;
};

// A request as the server read it.
struct HttpRequest {
  std::string method;          // "GET", "POST", ...
  std::string target;          // as sent: "/v1/models?x=1"
  std::string path;            // the target up to '?'
  int version = 11;            // 10 (HTTP/1.0) or 11
  std::vector<HttpHeader> headers;
  std::string body;            // empty until the body is read (Screen sees none)
  std::string remote_address;  // the peer's IP address as text

  // The first value of header `name` (ASCII case-insensitive); "" when absent.
  std::string_view Header(std::string_view name) const;
  bool HasHeader(std::string_view name) const;
  // Every value of header `name`, in order.
  std::vector<std::string_view> HeaderValues(std::string_view name) const;
};

// A response head and, unless `stream`, its whole body.
struct HttpResponse {
  int status = 200;
  std::string content_type;         // "" : no Content-Type
  std::vector<HttpHeader> headers;  // besides Content-Type, Content-Length, Transfer-Encoding, Connection, Date
  std::string body;
  // Only in an HttpProducer's first piece: the body follows in pieces (chunked over HTTP/1.1,
  // delimited by the connection's close over HTTP/1.0).
  bool stream = false;
  bool close = false;  // the connection closes after this response
};

// A piece of an answer produced over time. The first carries the head; a head without
// `stream` carries the whole body and is the last piece.
struct HttpPiece {
  std::optional<HttpResponse> head;
  std::string data;   // body bytes of a streamed answer (the head's body, if any, comes first)
  bool last = false;  // nothing follows
};

// An answer produced over time, pulled by its connection one piece per write (so a client
// that reads slowly holds back only its own answer). Every method but the wake function
// runs on the connection's strand, never two at once.
class HttpProducer {
 public:
  virtual ~HttpProducer() = default;
  // Called once, first. `wake` is thread-safe and may be called from any thread at any time,
  // also after the connection is gone (then it does nothing): the connection calls Next()
  // again soon.
  virtual void Start(std::function<void()> wake) = 0;
  // The next piece, or nullopt when none is ready yet (the producer calls wake when one is).
  // Called only while no write is in flight and until a piece with `last`.
  virtual std::optional<HttpPiece> Next() = 0;
  // The client went away (closed its side, broke the connection, or read nothing for the
  // write timeout) before the last piece was written. Nothing is called after it.
  virtual void ClientGone() = 0;
};

using HttpAnswer = std::variant<HttpResponse, std::unique_ptr<HttpProducer>>;

// What a server routes to. Thread-safe: the server's threads call it concurrently.
class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // Once a request's head has arrived, before its body is read: a response refuses the
  // request (a body not yet read is then left unread and the connection closes after the
  // response); nullopt reads the body and calls Handle.
  virtual std::optional<HttpResponse> Screen(const HttpRequest& head) = 0;
  // The whole request.
  virtual HttpAnswer Handle(HttpRequest request) = 0;
  // The transport's own refusals (malformed or over-limit requests: 400, 408, 413, 431, 501,
  // 503 when full) in the handler's error shape.
  virtual HttpResponse TransportError(int status, std::string message) = 0;
};

}  // namespace llmserve::http
