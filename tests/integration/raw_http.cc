#include "tests/integration/raw_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace llmserve::testing {
namespace {

int PollMs(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
}

}  // namespace

int ConnectTo(int port, const ConnectOptions& options, std::string* error) {
  const auto fail = [&](int fd, const char* what) {
    if (error != nullptr) *error = absl::StrCat(what, ": ", std::strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  };
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(fd, "socket");
  if (options.rcvbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &options.rcvbuf, sizeof(options.rcvbuf)) != 0) {
    return fail(fd, "SO_RCVBUF");
  }
  if (options.maxseg > 0 && setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &options.maxseg, sizeof(options.maxseg)) != 0) {
    return fail(fd, "TCP_MAXSEG");
  }
  if (options.source_ip != nullptr) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    local.sin_port = 0;
    if (inet_pton(AF_INET, options.source_ip, &local.sin_addr) != 1) return fail(fd, "inet_pton");
    if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) return fail(fd, "bind source address");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return fail(fd, "connect");
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string RawResponse::Header(const std::string& name) const {
  const auto it = headers.find(absl::AsciiStrToLower(name));
  return it == headers.end() ? "" : it->second;
}

nlohmann::json RawResponse::Json() const { return nlohmann::json::parse(body, nullptr, false); }

const char* ReadEndName(ReadEnd end) {
  switch (end) {
    case ReadEnd::kOk: return "a response";
    case ReadEnd::kClosed: return "EOF";
    case ReadEnd::kReset: return "reset";
    case ReadEnd::kTimeout: return "timeout";
    case ReadEnd::kMalformed: return "malformed response";
  }
  return "?";
}

RawConnection::~RawConnection() { Close(); }

RawConnection::RawConnection(RawConnection&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), buf_(std::move(other.buf_)) {}

RawConnection& RawConnection::operator=(RawConnection&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    buf_ = std::move(other.buf_);
  }
  return *this;
}

void RawConnection::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

ReadEnd RawConnection::Fill(absl::Time deadline) {
  while (true) {
    pollfd p{fd_, POLLIN, 0};
    const int r = poll(&p, 1, PollMs(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return ReadEnd::kTimeout;
    char chunk[65536];
    const ssize_t n = recv(fd_, chunk, sizeof(chunk), MSG_DONTWAIT);
    if (n > 0) {
      buf_.append(chunk, static_cast<size_t>(n));
      return ReadEnd::kOk;
    }
    if (n == 0) return ReadEnd::kClosed;
    if (errno == EINTR || errno == EAGAIN) continue;
    return ReadEnd::kReset;
  }
}

ReadEnd RawConnection::ReadResponse(RawResponse* out, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  *out = RawResponse();
  size_t head_end;
  while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos) {
    if (ReadEnd e = Fill(deadline); e != ReadEnd::kOk) return e;
  }
  const std::string head = buf_.substr(0, head_end);
  size_t pos = head.find("\r\n");
  out->status_line = head.substr(0, pos);
  if (!out->status_line.starts_with("HTTP/1.") || out->status_line.size() < 12 ||
      !absl::SimpleAtoi(out->status_line.substr(9, 3), &out->status)) {
    return ReadEnd::kMalformed;
  }
  while (pos != std::string::npos) {
    const size_t start = pos + 2;
    pos = head.find("\r\n", start);
    const std::string line = head.substr(start, pos == std::string::npos ? std::string::npos : pos - start);
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    out->headers[absl::AsciiStrToLower(line.substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
  }
  buf_.erase(0, head_end + 4);
  if (out->status / 100 == 1 || out->status == 204 || out->status == 304) return ReadEnd::kOk;
  if (absl::AsciiStrToLower(out->Header("Transfer-Encoding")).find("chunked") != std::string::npos) {
    out->chunked = true;
    while (true) {
      size_t line_end;
      while ((line_end = buf_.find("\r\n")) == std::string::npos) {
        if (ReadEnd e = Fill(deadline); e != ReadEnd::kOk) return e;
      }
      std::string size_text = buf_.substr(0, line_end);
      if (const size_t semi = size_text.find(';'); semi != std::string::npos) size_text.resize(semi);
      uint64_t size = 0;
      if (!absl::SimpleHexAtoi(absl::StripAsciiWhitespace(size_text), &size)) return ReadEnd::kMalformed;
      if (size == 0) {  // optional trailers, then an empty line
        size_t end;
        while ((end = buf_.find("\r\n\r\n", line_end)) == std::string::npos) {
          if (ReadEnd e = Fill(deadline); e != ReadEnd::kOk) return e;
        }
        buf_.erase(0, end + 4);
        return ReadEnd::kOk;
      }
      while (buf_.size() < line_end + 2 + size + 2) {
        if (ReadEnd e = Fill(deadline); e != ReadEnd::kOk) return e;
      }
      out->body.append(buf_, line_end + 2, size);
      buf_.erase(0, line_end + 2 + size + 2);
    }
  }
  const std::string length = out->Header("Content-Length");
  if (length.empty()) {  // the body runs to EOF
    while (true) {
      const ReadEnd e = Fill(deadline);
      if (e == ReadEnd::kClosed) break;
      if (e != ReadEnd::kOk) return e;
    }
    out->body = std::move(buf_);
    buf_.clear();
    return ReadEnd::kOk;
  }
  uint64_t n = 0;
  if (!absl::SimpleAtoi(length, &n)) return ReadEnd::kMalformed;
  while (buf_.size() < n) {
    if (ReadEnd e = Fill(deadline); e != ReadEnd::kOk) return e;
  }
  out->body = buf_.substr(0, n);
  buf_.erase(0, n);
  return ReadEnd::kOk;
}

bool RawConnection::ReadUntil(std::string_view needle, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (buf_.find(needle) == std::string::npos) {
    if (Fill(deadline) != ReadEnd::kOk) return false;
  }
  return true;
}

ReadEnd RawConnection::WaitPeerClosed(absl::Duration timeout, size_t* bytes, std::string* tail) {
  const absl::Time deadline = absl::Now() + timeout;
  size_t total = buf_.size();
  std::string last = buf_;
  buf_.clear();
  ReadEnd e;
  while ((e = Fill(deadline)) == ReadEnd::kOk) {
    total += buf_.size();
    last += buf_;
    buf_.clear();
    if (last.size() > 4096) last.erase(0, last.size() - 256);
  }
  if (last.size() > 256) last.erase(0, last.size() - 256);
  if (bytes != nullptr) *bytes = total;
  if (tail != nullptr) *tail = last;
  return e;
}

bool RawConnection::PeerClosedNow() {
  while (true) {
    const ReadEnd e = Fill(absl::Now());
    if (e == ReadEnd::kOk) continue;
    return e == ReadEnd::kClosed || e == ReadEnd::kReset;
  }
}

std::string HttpRequest(const std::string& method, const std::string& path, const std::string& body,
                        const std::vector<std::string>& headers) {
  std::string out = absl::StrCat(method, " ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  for (const std::string& h : headers) absl::StrAppend(&out, h, "\r\n");
  if (!body.empty() || method == "POST") {
    absl::StrAppend(&out, "Content-Type: application/json\r\nContent-Length: ", body.size(), "\r\n");
  }
  absl::StrAppend(&out, "\r\n", body);
  return out;
}

bool IsOpenAiError(const nlohmann::json& body) {
  if (!body.is_object() || !body.contains("error") || !body["error"].is_object()) return false;
  const nlohmann::json& e = body["error"];
  return e.contains("message") && e["message"].is_string() && e.contains("type") && e["type"].is_string() &&
         e.contains("param") && e.contains("code");
}

}  // namespace llmserve::testing
