#include "server/http/http_connection.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "boost/asio/dispatch.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/ssl/stream.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http/error.hpp"
#include "boost/beast/http/parser.hpp"
#include "boost/beast/http/string_body.hpp"
#include "server/http/http_wire.h"
#include "spdlog/spdlog.h"

namespace llmserve::http {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using ErrorCode = boost::system::error_code;

// After the last response of a connection that closes: how long its unread input is drained
// (so that the kernel does not answer it with a reset that could destroy the response).
constexpr auto kLinger = std::chrono::seconds(2);
// Bytes asked of one read.
constexpr size_t kReadSize = 64 << 10;

Clock::duration ToChrono(absl::Duration d) { return absl::ToChronoNanoseconds(d); }

// The transport's refusal for a parse error: the HTTP status and what to tell the client.
std::pair<int, std::string> ParseRefusal(const ErrorCode& ec, const HttpServerOptions& o) {
  if (ec == bhttp::error::header_limit) {
    return {431, absl::StrCat("the request head is larger than ", o.max_header_bytes, " bytes")};
  }
  if (ec == bhttp::error::body_limit) {
    return {413, absl::StrCat("the request body is larger than the server's --max-request-bytes (", o.max_body_bytes,
                              " bytes)")};
  }
  if (ec == bhttp::error::bad_content_length || ec == bhttp::error::multiple_content_length) {
    return {400, "bad framing: Content-Length must be one non-negative decimal number below 2^64 (and not sent "
                 "with Transfer-Encoding)"};
  }
  if (ec == bhttp::error::bad_transfer_encoding) {
    return {400, "bad framing: Transfer-Encoding must not be repeated or sent with Content-Length"};
  }
  if (ec == bhttp::error::bad_chunk || ec == bhttp::error::bad_chunk_extension) {
    return {400, "bad framing: a malformed chunk in the chunked body"};
  }
  return {400, absl::StrCat("malformed request: ", ec.message())};
}

// A request read, or the refusal that answers it in its turn.
struct Pending {
  HttpRequest request;
  std::optional<HttpResponse> canned;  // answered without Handle
  bool keep_alive = true;
  bool head_method = false;
  int version = 11;
};

// The producer's way back to its connection: alive until the connection is destroyed.
struct Waker {
  std::mutex mu;
  bool alive = true;
  std::function<void()> post;  // posts a Pump to the connection's strand; cleared with `alive`
};

template <class Stream>
class ConnectionImpl final : public Connection {
 public:
  ConnectionImpl(Stream stream, std::string address, std::shared_ptr<ConnectionEnv> env)
      : stream_(std::move(stream)),
        address_(std::move(address)),
        env_(std::move(env)),
        options_(env_->options),
        read_timer_(stream_.get_executor()),
        write_timer_(stream_.get_executor()),
        in_(options_.max_header_bytes + kReadSize) {}

  ~ConnectionImpl() override {
    if (waker_ != nullptr) {
      // A wake kept by its producer's owner may outlive the server: it must hold nothing of
      // the io_context (the strand in `post`) past this point.
      std::lock_guard<std::mutex> l(waker_->mu);
      waker_->alive = false;
      waker_->post = nullptr;
    }
    if (producer_ != nullptr) producer_->ClientGone();  // never closed (the server's threads stopped)
    env_->registry.Remove(address_, this);
  }

  void Run() override {
    asio::dispatch(stream_.get_executor(), [self = Self()] { self->Begin(); });
  }

  void Abort() override {
    asio::post(stream_.get_executor(), [self = Self()] { self->CloseNow(); });
  }

 private:
  std::shared_ptr<ConnectionImpl> Self() { return std::static_pointer_cast<ConnectionImpl>(shared_from_this()); }

  void Begin() {
    if constexpr (std::is_same_v<Stream, tcp::socket>) {
      Parse();
    } else {
      SetReadDeadline(Clock::now() + ToChrono(options_.header_timeout));
      stream_.async_handshake(asio::ssl::stream_base::server, [self = Self()](const ErrorCode& ec) {
        if (self->closed_) return;
        if (ec) {
          spdlog::debug("{}: TLS handshake with {} failed: {}", self->options_.name, self->address_, ec.message());
          self->CloseNow();
          return;
        }
        self->SetReadDeadline(std::nullopt);
        self->Parse();
      });
    }
  }

  // ---- Deadlines. A timer's generation tells a stale expiry from the current one.

  void SetReadDeadline(std::optional<Clock::time_point> at) {
    ++read_generation_;
    if (!at.has_value()) {
      read_timer_.cancel();
      return;
    }
    read_timer_.expires_at(*at);
    read_timer_.async_wait([self = Self(), generation = read_generation_](const ErrorCode& ec) {
      if (!ec && generation == self->read_generation_) self->CloseNow();
    });
  }

  void SetWriteDeadline(std::optional<Clock::time_point> at) {
    ++write_generation_;
    if (!at.has_value()) {
      write_timer_.cancel();
      return;
    }
    write_timer_.expires_at(*at);
    write_timer_.async_wait([self = Self(), generation = write_generation_](const ErrorCode& ec) {
      if (!ec && generation == self->write_generation_) {
        spdlog::debug("{}: {} read nothing for {}: dropped", self->options_.name, self->address_,
                      absl::FormatDuration(self->options_.write_timeout));
        self->CloseNow();
      }
    });
  }

  // The body must have arrived by: head + body_timeout + received / body_min_rate.
  void ArmBodyDeadline() {
    Clock::duration allowance = ToChrono(options_.body_timeout);
    if (options_.body_min_rate > 0) {
      allowance += std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(static_cast<double>(body_received_) / options_.body_min_rate));
    }
    SetReadDeadline(head_time_ + allowance);
  }

  // Nothing is being answered or waits to be: the client is the one to speak.
  bool Idle() const { return !answering_ && pending_.empty(); }
  bool QueueFull() const {
    return pending_.size() >= static_cast<size_t>(options_.max_pipelined) || pending_bytes_ >= options_.max_body_bytes;
  }

  // ---- Reading: requests are read ahead of the answers, so a closed connection is seen.

  void ReadMore() {
    if (reading_ || read_closed_ || closed_) return;
    const size_t room = in_.max_size() - in_.size();
    if (room == 0) {  // a head that does not fit: the parser would say so with more bytes
      Refuse(431, absl::StrCat("the request head is larger than ", options_.max_header_bytes, " bytes"));
      return;
    }
    reading_ = true;
    stream_.async_read_some(in_.prepare(std::min(room, kReadSize)),
                            [self = Self()](const ErrorCode& ec, size_t n) { self->OnRead(ec, n); });
  }

  void OnRead(const ErrorCode& ec, size_t n) {
    reading_ = false;
    if (closed_) return;
    in_.commit(n);
    if (closing_) {  // draining before the close
      in_.consume(in_.size());
      if (ec) {
        CloseNow();
      } else {
        ReadMore();
      }
      return;
    }
    if (ec) {
      OnClientGone();
      return;
    }
    Parse();
  }

  // The client closed its side or the connection broke: nobody reads an answer.
  void OnClientGone() {
    read_closed_ = true;
    pending_.clear();
    if (producer_ == nullptr && writing_) {
      close_after_ = true;  // a whole response in flight: let it go out, then close
      return;
    }
    CloseNow();
  }

  // Parses what was read: heads, bodies, whole requests (queued), until more bytes are needed.
  void Parse() {
    while (!closed_ && !closing_ && !stop_reading_) {
      if (!parser_.has_value()) {
        if (QueueFull()) {
          paused_ = true;  // resumed when an answer ends
          return;
        }
        if (in_.size() == 0) {
          // Between requests: only an idle connection's client is on the clock.
          SetReadDeadline(Idle() ? std::optional(Clock::now() + ToChrono(options_.idle_timeout)) : std::nullopt);
          ReadMore();
          return;
        }
        StartRequest();
      }
      if (in_.size() == 0) {
        ReadMore();
        return;
      }
      ErrorCode ec;
      const size_t used = parser_->put(in_.data(), ec);
      in_.consume(used);
      if (ec && ec != bhttp::error::need_more) {
        auto [status, message] = ParseRefusal(ec, options_);
        Refuse(status, std::move(message));
        return;
      }
      if (!head_seen_ && parser_->is_header_done() && !OnHead()) return;
      if (head_seen_) body_received_ += used;
      if (parser_->is_done()) {
        FinishRequest();
        continue;
      }
      if (ec == bhttp::error::need_more || used == 0) {  // no progress without more bytes
        if (head_seen_) ArmBodyDeadline();
        ReadMore();
        return;
      }
    }
  }

  void StartRequest() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(options_.max_header_bytes));
    parser_->body_limit(options_.max_body_bytes);
    parser_->eager(true);
    head_seen_ = false;
    body_received_ = 0;
    refusal_.reset();
    SetReadDeadline(Clock::now() + ToChrono(options_.header_timeout));
  }

  // The head is in: the handler screens it before the body is read. False when reading ends.
  bool OnHead() {
    head_seen_ = true;
    head_time_ = Clock::now();
    const auto& m = parser_->get();
    head_ = HttpRequest();
    head_.method = std::string(m.method_string());
    head_.target = std::string(m.target());
    head_.path = head_.target.substr(0, head_.target.find('?'));
    head_.version = static_cast<int>(m.version());
    head_.remote_address = address_;
    for (const auto& field : m) head_.headers.push_back({std::string(field.name_string()), std::string(field.value())});
    if (const std::string_view te = head_.Header("Transfer-Encoding"); head_.HasHeader("Transfer-Encoding")) {
      // RFC 9112 6.1: chunked must be the last coding, or the body's length is unknown.
      if (!parser_->chunked()) {
        Refuse(400, "bad framing: Transfer-Encoding must end with chunked");
        return false;
      }
      if (!absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(absl::string_view(te.data(), te.size())), "chunked") ||
          head_.HeaderValues("Transfer-Encoding").size() > 1) {
        Refuse(501, "only the chunked transfer coding is supported");
        return false;
      }
    }
    std::optional<HttpResponse> refusal;
    try {
      refusal = env_->handler->Screen(head_);
    } catch (const std::exception& e) {
      spdlog::error("{}: {} {}: {}", options_.name, head_.method, head_.path, e.what());
      refusal = env_->handler->TransportError(500, "internal error");
    }
    if (refusal.has_value()) {
      if (!parser_->is_done()) {  // its body is left unread: the connection cannot go on
        refusal->close = true;
        Queue(std::move(*refusal), /*keep_alive=*/false);
        return false;
      }
      refusal_ = std::move(refusal);
      return true;
    }
    if (!parser_->is_done() && absl::EqualsIgnoreCase(std::string(head_.Header("Expect")), "100-continue") && in_.size() == 0 &&
        Idle() && !writing_) {
      WriteContinue();
    }
    return true;
  }

  void FinishRequest() {
    auto message = parser_->release();
    parser_.reset();
    head_seen_ = false;
    Pending p;
    p.keep_alive = message.keep_alive();
    p.head_method = message.method() == bhttp::verb::head;
    p.version = static_cast<int>(message.version());
    if (refusal_.has_value()) {
      p.canned = std::move(refusal_);
      refusal_.reset();
    } else {
      head_.body = std::move(message.body());
      pending_bytes_ += head_.body.size();
      p.request = std::move(head_);
    }
    pending_.push_back(std::move(p));
    SetReadDeadline(std::nullopt);
    MaybeAnswer();
  }

  // Ends reading and answers `status` in turn; the connection closes after it.
  void Refuse(int status, std::string message) {
    spdlog::debug("{}: {} refused: {} {}", options_.name, address_, status, message);
    HttpResponse r = env_->handler->TransportError(status, std::move(message));
    r.close = true;
    Queue(std::move(r), /*keep_alive=*/false);
  }

  void Queue(HttpResponse response, bool keep_alive) {
    stop_reading_ = true;
    parser_.reset();
    SetReadDeadline(std::nullopt);
    Pending p;
    p.canned = std::move(response);
    p.keep_alive = keep_alive;
    pending_.push_back(std::move(p));
    MaybeAnswer();
  }

  // ---- Writing: one answer at a time, in order.

  void MaybeAnswer() {
    if (answering_ || writing_ || closed_ || closing_ || pending_.empty()) return;
    Pending p = std::move(pending_.front());
    pending_.pop_front();
    pending_bytes_ -= p.request.body.size();
    answering_ = true;
    keep_alive_ = p.keep_alive;
    head_only_ = p.head_method;
    http10_ = p.version < 11;
    if (!parser_.has_value() && in_.size() == 0) SetReadDeadline(std::nullopt);  // busy: the client may wait
    if (p.canned.has_value()) {
      WriteWhole(std::move(*p.canned));
      return;
    }
    HttpAnswer answer;
    try {
      answer = env_->handler->Handle(std::move(p.request));
    } catch (const std::exception& e) {
      spdlog::error("{}: a handler threw: {}", options_.name, e.what());
      answer = env_->handler->TransportError(500, "internal error");
    }
    if (auto* whole = std::get_if<HttpResponse>(&answer)) {
      WriteWhole(std::move(*whole));
      return;
    }
    producer_ = std::move(std::get<std::unique_ptr<HttpProducer>>(answer));
    producer_->Start(MakeWake());
    Pump();
  }

  void WriteWhole(HttpResponse response) {
    close_after_ = close_after_ || response.close || !keep_alive_;
    out_ = ResponseHead(response, BodyFraming::kLength, response.body.size(), close_after_);
    if (!head_only_) out_ += response.body;
    StartWrite(/*last=*/true);
  }

  // Writes the producer's next piece, if one is ready and no write is in flight.
  void Pump() {
    while (producer_ != nullptr && !writing_ && !closed_) {
      std::optional<HttpPiece> piece = producer_->Next();
      if (!piece.has_value()) return;  // the producer wakes us
      out_.clear();
      if (piece->head.has_value()) {
        HttpResponse& head = *piece->head;
        if (head.stream) {
          framing_ = http10_ ? BodyFraming::kClose : BodyFraming::kChunked;
          close_after_ = close_after_ || head.close || !keep_alive_ || framing_ == BodyFraming::kClose;
          out_ = ResponseHead(head, framing_, 0, close_after_);
          AppendBody(head.body);
        } else {
          framing_ = BodyFraming::kLength;
          close_after_ = close_after_ || head.close || !keep_alive_;
          out_ = ResponseHead(head, framing_, head.body.size() + piece->data.size(), close_after_);
          AppendBody(head.body);
          piece->last = true;  // a whole response is the answer
        }
      }
      AppendBody(piece->data);
      if (piece->last && framing_ == BodyFraming::kChunked && !head_only_) out_ += kLastChunk;
      if (out_.empty() && !piece->last) continue;
      StartWrite(piece->last);
    }
  }

  void AppendBody(std::string_view data) {
    if (head_only_ || data.empty()) return;
    if (framing_ == BodyFraming::kChunked) {
      AppendChunk(data, &out_);
    } else {
      out_.append(data);
    }
  }

  void StartWrite(bool last) {
    writing_ = true;
    SetWriteDeadline(Clock::now() + ToChrono(options_.write_timeout));
    asio::async_write(stream_, asio::buffer(out_),
                      [self = Self(), last](const ErrorCode& ec, size_t) { self->OnWritten(ec, last); });
  }

  void OnWritten(const ErrorCode& ec, bool last) {
    writing_ = false;
    SetWriteDeadline(std::nullopt);
    if (closed_) return;
    if (ec) {
      CloseNow();  // the producer, if any, is told ClientGone
      return;
    }
    if (!last) {
      Pump();
      return;
    }
    producer_.reset();  // done: its last piece is out
    answering_ = false;
    framing_ = BodyFraming::kLength;
    if (close_after_ || read_closed_) {
      CloseGracefully();
      return;
    }
    MaybeAnswer();
    paused_ = false;
    Parse();  // resumes reading ahead; arms the idle deadline when nothing is left to answer
  }

  void WriteContinue() {
    writing_ = true;
    out_ = std::string(kContinue);
    SetWriteDeadline(Clock::now() + ToChrono(options_.write_timeout));
    asio::async_write(stream_, asio::buffer(out_), [self = Self()](const ErrorCode& ec, size_t) {
      self->writing_ = false;
      self->SetWriteDeadline(std::nullopt);
      if (self->closed_) return;
      if (ec) {
        self->CloseNow();
        return;
      }
      self->MaybeAnswer();
    });
  }

  std::function<void()> MakeWake() {
    if (waker_ == nullptr) {
      waker_ = std::make_shared<Waker>();
      waker_->post = [executor = stream_.get_executor(), weak = std::weak_ptr<Connection>(shared_from_this())] {
        asio::post(executor, [weak] {
          if (std::shared_ptr<Connection> c = weak.lock()) static_cast<ConnectionImpl*>(c.get())->Pump();
        });
      };
    }
    return [waker = waker_] {
      std::lock_guard<std::mutex> l(waker->mu);
      if (waker->alive) waker->post();
    };
  }

  // ---- Closing.

  // After the last response: no more requests; the client's unread input is drained for a
  // moment so that it receives the response whole, then the connection closes.
  void CloseGracefully() {
    closing_ = true;
    pending_.clear();
    ErrorCode ignored;
    stream_.lowest_layer().shutdown(tcp::socket::shutdown_send, ignored);
    if (read_closed_) {
      CloseNow();
      return;
    }
    SetReadDeadline(Clock::now() + std::min<Clock::duration>(kLinger, ToChrono(options_.idle_timeout)));
    in_.consume(in_.size());
    ReadMore();
  }

  void CloseNow() {
    if (closed_) return;
    closed_ = true;
    SetReadDeadline(std::nullopt);
    SetWriteDeadline(std::nullopt);
    if (producer_ != nullptr) {
      producer_->ClientGone();
      producer_.reset();
    }
    pending_.clear();
    ErrorCode ignored;
    stream_.lowest_layer().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.lowest_layer().close(ignored);
  }

  Stream stream_;
  const std::string address_;
  const std::shared_ptr<ConnectionEnv> env_;
  const HttpServerOptions& options_;
  asio::steady_timer read_timer_;
  asio::steady_timer write_timer_;
  uint64_t read_generation_ = 0;
  uint64_t write_generation_ = 0;

  // Reading.
  boost::beast::flat_buffer in_;  // read, not yet parsed
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  bool reading_ = false;       // a read in flight
  bool read_closed_ = false;   // EOF or a read error: the client is gone
  bool stop_reading_ = false;  // a refusal ends the connection: nothing more is parsed
  bool paused_ = false;        // the queue is full
  bool head_seen_ = false;
  HttpRequest head_;           // the request being read
  std::optional<HttpResponse> refusal_;  // Screen's answer to it
  Clock::time_point head_time_;
  size_t body_received_ = 0;
  std::deque<Pending> pending_;
  size_t pending_bytes_ = 0;

  // Writing.
  bool answering_ = false;  // an answer is being produced or written
  bool writing_ = false;
  bool keep_alive_ = true;
  bool head_only_ = false;
  bool http10_ = false;
  bool close_after_ = false;
  BodyFraming framing_ = BodyFraming::kLength;
  std::unique_ptr<HttpProducer> producer_;
  std::shared_ptr<Waker> waker_;
  std::string out_;  // the bytes in flight

  bool closing_ = false;
  bool closed_ = false;
};

}  // namespace

std::shared_ptr<Connection> MakeConnection(tcp::socket socket, std::string address,
                                           std::shared_ptr<ConnectionEnv> env, asio::ssl::context* tls) {
  ConnectionRegistry& registry = env->registry;
  std::shared_ptr<Connection> c;
  if (tls != nullptr) {
    c = std::make_shared<ConnectionImpl<asio::ssl::stream<tcp::socket>>>(
        asio::ssl::stream<tcp::socket>(std::move(socket), *tls), std::move(address), std::move(env));
  } else {
    c = std::make_shared<ConnectionImpl<tcp::socket>>(std::move(socket), std::move(address), std::move(env));
  }
  registry.Track(c);
  return c;
}

}  // namespace llmserve::http
