// HTTP/1.1 response bytes: the head and the body's framing (Content-Length, chunked, or
// delimited by the connection's close for an HTTP/1.0 stream).
#pragma once

#include <string>
#include <string_view>

#include "server/http/http_message.h"

namespace llmserve::http {

// How a response's body is framed on the wire.
enum class BodyFraming {
  kLength,   // Content-Length: the body follows whole
  kChunked,  // Transfer-Encoding: chunked (a stream over HTTP/1.1)
  kClose,    // neither: the body ends when the connection closes (a stream over HTTP/1.0)
};

// The status line and headers of `response` (Date, Content-Type, the framing header and,
// when `close`, Connection: close), with the blank line. `body_size` is the Content-Length
// for kLength.
std::string ResponseHead(const HttpResponse& response, BodyFraming framing, size_t body_size, bool close);
// Appends `data` as one chunk (nothing for empty data: an empty chunk ends the body).
void AppendChunk(std::string_view data, std::string* out);
// The chunked body's end.
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";
// A 100 Continue interim response.
inline constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

}  // namespace llmserve::http
