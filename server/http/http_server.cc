#include "server/http/http_server.h"

#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "boost/asio/executor_work_guard.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/ssl/context.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/strand.hpp"
#include "server/http/http_connection.h"
#include "server/http/tls_context.h"
#include "spdlog/spdlog.h"

namespace llmserve::http {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;

// How long Stop waits for the connections it closed to finish closing.
constexpr absl::Duration kStopWait = absl::Seconds(2);
// Backoff after an accept error (out of descriptors): doubling up to a second.
constexpr auto kFirstBackoff = std::chrono::milliseconds(10);
constexpr auto kMaxBackoff = std::chrono::seconds(1);

absl::Status Bad(const char* field, const char* what) {
  return absl::InvalidArgumentError(absl::StrCat(field, " ", what));
}

bool InRange(absl::Duration d) { return d > absl::ZeroDuration() && d <= absl::Hours(24); }

}  // namespace

absl::Status HttpServerOptions::Validate() const {
  if (threads < 1 || threads > 256) return Bad("threads", "must be in [1, 256]");
  if (max_connections < 1 || max_connections > (1 << 20)) return Bad("max_connections", "must be in [1, 1048576]");
  if (max_connections_per_address < 0) return Bad("max_connections_per_address", "must be >= 0 (0 = no cap)");
  if (!InRange(idle_timeout)) return Bad("idle_timeout", "must be in (0, 24 h]");
  if (!InRange(header_timeout)) return Bad("header_timeout", "must be in (0, 24 h]");
  if (!InRange(body_timeout)) return Bad("body_timeout", "must be in (0, 24 h]");
  if (!InRange(write_timeout)) return Bad("write_timeout", "must be in (0, 24 h]");
  if (body_min_rate < 0) return Bad("body_min_rate", "must be >= 0 (0 = no rate)");
  if (max_header_bytes < 1024 || max_header_bytes > (1 << 20)) return Bad("max_header_bytes", "must be in [1 KiB, 1 MiB]");
  if (max_body_bytes < 1) return Bad("max_body_bytes", "must be >= 1");
  if (max_pipelined < 1 || max_pipelined > 1024) return Bad("max_pipelined", "must be in [1, 1024]");
  return absl::OkStatus();
}

std::string HttpServerOptions::Describe() const {
  return absl::StrFormat(
      "%d threads, %d connections (%s per address), idle %s, head %s (%d bytes), body %s + %d B/s, write %s, "
      "pipelining %d",
      threads, max_connections,
      max_connections_per_address > 0 ? std::to_string(max_connections_per_address) : std::string("no cap"),
      absl::FormatDuration(idle_timeout), absl::FormatDuration(header_timeout), max_header_bytes,
      absl::FormatDuration(body_timeout),
      body_min_rate, absl::FormatDuration(write_timeout), max_pipelined);
}

struct HttpServer::Impl {
  Impl(const HttpServerOptions& o, HttpHandler* handler)
      : env(std::make_shared<ConnectionEnv>(o, handler)), acceptor(asio::make_strand(io)), backoff_timer(io) {}

  void Accept() {
    acceptor.async_accept(asio::make_strand(io), [this](const ErrorCode& ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;  // closed
      if (ec) {
        AcceptFailed(ec);
        return;
      }
      backoff = std::chrono::milliseconds(0);
      ErrorCode peer_error;
      const tcp::endpoint peer = socket.remote_endpoint(peer_error);
      if (peer_error) {  // gone already
        Accept();
        return;
      }
      socket.set_option(tcp::no_delay(true), peer_error);  // one small event per token: no Nagle
      std::string address = peer.address().to_string();
      if (!env->registry.TryAdd(address)) {
        spdlog::debug("{}: connection from {} refused: at the connection limit", env->options.name, address);
        RefuseConnection(std::move(socket), env, tls != nullptr);
      } else {
        MakeConnection(std::move(socket), std::move(address), env, tls != nullptr ? &tls->context() : nullptr)
            ->Run();
      }
      Accept();
    });
  }

  // Out of descriptors (EMFILE, ENFILE) leaves the connection queued: back off, log rarely.
  void AcceptFailed(const ErrorCode& ec) {
    backoff = std::clamp<std::chrono::milliseconds>(backoff * 2, kFirstBackoff, kMaxBackoff);
    if (absl::Now() - last_accept_log >= absl::Seconds(10)) {
      spdlog::warn("{}: accept failed: {} (backing off {} ms)", env->options.name, ec.message(), backoff.count());
      last_accept_log = absl::Now();
    }
    backoff_timer.expires_after(backoff);
    backoff_timer.async_wait([this](const ErrorCode& timer_ec) {
      if (!timer_ec) asio::post(acceptor.get_executor(), [this] { Accept(); });
    });
  }

  asio::io_context io;
  std::shared_ptr<ConnectionEnv> env;
  std::unique_ptr<TlsContext> tls;
  tcp::acceptor acceptor;
  asio::steady_timer backoff_timer;
  std::chrono::milliseconds backoff{0};
  absl::Time last_accept_log = absl::InfinitePast();
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::vector<std::thread> threads;
  int port = 0;
  std::string address;
  std::mutex lifecycle_mu;  // Start / Close / Stop
  bool started = false;
  bool closed = false;
  bool stopped = false;
};

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Bind(const std::string& host, int port, const TlsFiles* tls,
                                                             const HttpServerOptions& options, HttpHandler* handler) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  auto impl = std::make_unique<Impl>(options, handler);
  if (tls != nullptr && tls->enabled()) {
    absl::StatusOr<std::unique_ptr<TlsContext>> context = TlsContext::Create(*tls, options.use_client_ca, options.name);
    if (!context.ok()) return context.status();
    impl->tls = *std::move(context);
  }
  std::string bare = host;
  if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') bare = bare.substr(1, bare.size() - 2);
  const bool v6 = bare.find(':') != std::string::npos;
  const auto address = [&](int p) { return v6 ? absl::StrCat("[", bare, "]:", p) : absl::StrCat(bare, ":", p); };
  const absl::Status unavailable = absl::UnavailableError(
      absl::StrCat("cannot serve ", options.name, " on ", address(port), ": the address is in use or not available"));
  ErrorCode ec;
  tcp::resolver resolver(impl->io);
  const auto endpoints = resolver.resolve(bare, std::to_string(port), tcp::resolver::passive, ec);
  if (ec) return unavailable;
  for (const auto& entry : endpoints) {
    tcp::acceptor& a = impl->acceptor;
    ErrorCode e;
    a.open(entry.endpoint().protocol(), e);
    // SO_REUSEADDR (a restart binds at once) but never SO_REUSEPORT: a port in use is an error.
    if (!e) a.set_option(tcp::acceptor::reuse_address(true), e);
    if (!e) a.bind(entry.endpoint(), e);
    if (!e) a.listen(SOMAXCONN, e);
    if (!e) break;
    ErrorCode ignored;
    a.close(ignored);
  }
  if (!impl->acceptor.is_open()) return unavailable;
  impl->port = impl->acceptor.local_endpoint(ec).port();
  impl->address = address(impl->port);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

int HttpServer::port() const { return impl_->port; }
const std::string& HttpServer::address() const { return impl_->address; }
int HttpServer::connections() const { return impl_->env->registry.size(); }

void HttpServer::Start() {
  std::lock_guard<std::mutex> l(impl_->lifecycle_mu);
  if (impl_->started || impl_->stopped) return;
  impl_->started = true;
  impl_->work.emplace(impl_->io.get_executor());
  if (!impl_->closed) asio::post(impl_->acceptor.get_executor(), [impl = impl_.get()] { impl->Accept(); });
  for (int i = 0; i < impl_->env->options.threads; ++i) {
    impl_->threads.emplace_back([impl = impl_.get()] { impl->io.run(); });
  }
}

void HttpServer::Close() {
  std::lock_guard<std::mutex> l(impl_->lifecycle_mu);
  if (impl_->closed) return;
  impl_->closed = true;
  if (!impl_->started || impl_->stopped) {
    ErrorCode ignored;
    impl_->acceptor.close(ignored);
    return;
  }
  // On the acceptor's strand (an acceptor is not thread-safe); wait, so that the port is
  // closed when Close returns.
  std::promise<void> done;
  asio::post(impl_->acceptor.get_executor(), [impl = impl_.get(), &done] {
    ErrorCode ignored;
    impl->acceptor.close(ignored);
    impl->backoff_timer.cancel();
    done.set_value();
  });
  done.get_future().wait();
}

void HttpServer::Stop() {
  Close();
  std::lock_guard<std::mutex> l(impl_->lifecycle_mu);
  if (impl_->stopped) return;
  impl_->stopped = true;
  if (!impl_->started) return;
  impl_->env->registry.CloseAll();
  const absl::Time deadline = absl::Now() + kStopWait;
  while (impl_->env->registry.size() > 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(2));
  impl_->work.reset();
  impl_->io.stop();
  for (std::thread& t : impl_->threads) t.join();
}

}  // namespace llmserve::http
