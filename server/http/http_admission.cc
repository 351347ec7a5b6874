// Admission to an HttpServer: the connection caps (ConnectionRegistry) and the answer a
// connection over them gets (RefuseConnection). Declared in http_connection.h.
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "boost/asio/steady_timer.hpp"
#include "boost/asio/write.hpp"
#include "server/http/http_connection.h"
#include "server/http/http_wire.h"

namespace llmserve::http {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;

// A refused connection's 503 and its drain together.
constexpr auto kRefusalLinger = std::chrono::seconds(1);
// Refused connections drained at once; beyond, a refused connection is closed bare.
constexpr int kMaxLingeringRefusals = 64;

}  // namespace

bool ConnectionRegistry::TryAdd(const std::string& address) {
  std::lock_guard<std::mutex> l(mu_);
  if (total_ >= options_.max_connections) return false;
  int& from = per_address_[address];
  if (options_.max_connections_per_address > 0 && from >= options_.max_connections_per_address) {
    if (from == 0) per_address_.erase(address);
    return false;
  }
  ++from;
  ++total_;
  return true;
}

void ConnectionRegistry::Track(const std::shared_ptr<Connection>& connection) {
  std::lock_guard<std::mutex> l(mu_);
  live_[connection.get()] = connection;
}

void ConnectionRegistry::Remove(const std::string& address, Connection* connection) {
  std::lock_guard<std::mutex> l(mu_);
  live_.erase(connection);
  --total_;
  if (auto it = per_address_.find(address); it != per_address_.end() && --it->second <= 0) per_address_.erase(it);
}

int ConnectionRegistry::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return total_;
}

void ConnectionRegistry::CloseAll() {
  std::vector<std::shared_ptr<Connection>> all;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [_, weak] : live_) {
      if (auto c = weak.lock()) all.push_back(std::move(c));
    }
  }
  for (auto& c : all) c->Abort();
}


namespace {

// A refused connection while its 503 goes out and its input drains.
struct Refusal : std::enable_shared_from_this<Refusal> {
  Refusal(tcp::socket s, std::shared_ptr<ConnectionEnv> e)
      : env(std::move(e)), socket(std::move(s)), timer(socket.get_executor()) {}
  ~Refusal() {
    ErrorCode ignored;
    socket.close(ignored);
    env->lingering_refusals.fetch_sub(1);
  }
  void Drain() {
    socket.async_read_some(asio::buffer(sink), [self = shared_from_this()](const ErrorCode& ec, size_t) {
      if (ec) {
        self->timer.cancel();
        return;
      }
      self->Drain();
    });
  }
  const std::shared_ptr<ConnectionEnv> env;
  tcp::socket socket;
  asio::steady_timer timer;
  std::string out;
  char sink[4096];
};

}  // namespace

void RefuseConnection(tcp::socket socket, std::shared_ptr<ConnectionEnv> env, bool tls) {
  ErrorCode ignored;
  if (tls || env->lingering_refusals.fetch_add(1) >= kMaxLingeringRefusals) {
    if (!tls) env->lingering_refusals.fetch_sub(1);
    socket.close(ignored);
    return;
  }
  auto r = std::make_shared<Refusal>(std::move(socket), env);
  HttpResponse response = env->handler->TransportError(
      503, "too many connections: the server is at its connection limit, retry later or elsewhere");
  r->out = ResponseHead(response, BodyFraming::kLength, response.body.size(), /*close=*/true) + response.body;
  r->timer.expires_after(kRefusalLinger);
  r->timer.async_wait([weak = std::weak_ptr<Refusal>(r)](const ErrorCode&) {
    if (auto self = weak.lock()) {
      ErrorCode ec;
      self->socket.close(ec);
    }
  });
  asio::async_write(r->socket, asio::buffer(r->out), [r](const ErrorCode& ec, size_t) {
    if (ec) return;
    ErrorCode ignored_shutdown;
    r->socket.shutdown(tcp::socket::shutdown_send, ignored_shutdown);
    r->Drain();
  });
}


}  // namespace llmserve::http
