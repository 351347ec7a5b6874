#include "server/http/http_wire.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "boost/beast/http/status.hpp"

namespace llmserve::http {
namespace {

absl::string_view Reason(int status) {
  const auto reason = boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(status));
  if (reason.empty() || reason == "<unknown-status>") return "Status";
  return absl::string_view(reason.data(), reason.size());
}

// Header names and values come from our handlers, never from a client; still, a CR or LF
// in them would split the head, so they are dropped.
bool Safe(std::string_view s) { return s.find_first_of("\r\n") == std::string_view::npos; }

}  // namespace

std::string ResponseHead(const HttpResponse& response, BodyFraming framing, size_t body_size, bool close) {
  std::string out = absl::StrCat("HTTP/1.1 ", response.status, " ", Reason(response.status), "\r\n");
  absl::StrAppend(&out, "Date: ", absl::FormatTime("%a, %d %b %Y %H:%M:%S GMT", absl::Now(), absl::UTCTimeZone()),
                  "\r\n");
  if (!response.content_type.empty() && Safe(response.content_type)) {
    absl::StrAppend(&out, "Content-Type: ", response.content_type, "\r\n");
  }
  for (const HttpHeader& h : response.headers) {
    if (!Safe(h.name) || !Safe(h.value) || h.name.empty()) continue;
    absl::StrAppend(&out, h.name, ": ", h.value, "\r\n");
  }
  switch (framing) {
    case BodyFraming::kLength: absl::StrAppend(&out, "Content-Length: ", body_size, "\r\n"); break;
    case BodyFraming::kChunked: out += "Transfer-Encoding: chunked\r\n"; break;
    case BodyFraming::kClose: break;
  }
  if (close) out += "Connection: close\r\n";
  out += "\r\n";
  return out;
}

void AppendChunk(std::string_view data, std::string* out) {
  if (data.empty()) return;
  absl::StrAppend(out, absl::Hex(data.size()), "\r\n", absl::string_view(data.data(), data.size()), "\r\n");
}

}  // namespace llmserve::http
