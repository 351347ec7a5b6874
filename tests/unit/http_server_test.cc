// http::HttpServer in-process with a scripted handler, over raw loopback sockets, so that it
// runs under ThreadSanitizer and ASan (scripts/tsan-test.sh): a producer woken from another
// thread streams in order, a client that closes is told to its producer at once, pipelined
// requests are answered in order, a refusal on the head leaves its body unread, HTTP/1.0
// streams end with the connection, HEAD gets no body, chunked request bodies are read, and
// Stop ends a producer still waiting.
#include "server/http/http_server.h"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/integration/raw_http.h"

namespace llmserve::http {
namespace {

using ::llmserve::testing::ConnectTo;
using ::llmserve::testing::RawConnection;
using ::llmserve::testing::RawResponse;
using ::llmserve::testing::ReadEnd;

constexpr absl::Duration kWait = absl::Seconds(20);  // a bound on work, not a latency target

// Streams `pieces` pieces, each released by another thread (as the engine's notifier does):
// Next() has nothing until the feeder has produced, then wakes the connection.
class FedProducer final : public HttpProducer {
 public:
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    int produced = 0;
    bool gone = false;
    bool destroyed = false;
    std::function<void()> wake;
  };

  FedProducer(std::shared_ptr<Shared> shared, int pieces) : shared_(std::move(shared)), pieces_(pieces) {}
  ~FedProducer() override {
    std::lock_guard<std::mutex> l(shared_->mu);
    shared_->destroyed = true;
    shared_->cv.notify_all();
  }
  void Start(std::function<void()> wake) override {
    std::lock_guard<std::mutex> l(shared_->mu);
    shared_->wake = std::move(wake);
    shared_->cv.notify_all();
  }
  std::optional<HttpPiece> Next() override {
    int produced = 0;
    {
      std::lock_guard<std::mutex> l(shared_->mu);
      produced = shared_->produced;
    }
    if (sent_ >= produced) return std::nullopt;
    HttpPiece piece;
    if (sent_ == 0) {
      piece.head = HttpResponse();
      piece.head->stream = true;
      piece.head->content_type = "text/event-stream";
    }
    piece.data = absl::StrCat("piece ", sent_, "\n");
    piece.last = ++sent_ == pieces_;
    return piece;
  }
  void ClientGone() override {
    std::lock_guard<std::mutex> l(shared_->mu);
    shared_->gone = true;
    shared_->cv.notify_all();
  }

 private:
  const std::shared_ptr<Shared> shared_;
  const int pieces_;
  int sent_ = 0;
};

class ScriptedHandler final : public HttpHandler {
 public:
  std::optional<HttpResponse> Screen(const HttpRequest& head) override {
    ++screened;
    if (head.path == "/refuse") return TransportError(401, "refused on the head");
    return std::nullopt;
  }
  HttpAnswer Handle(HttpRequest request) override {
    ++handled;
    if (request.path == "/stream") return std::make_unique<FedProducer>(shared, 3);
    HttpResponse r;
    r.content_type = "text/plain";
    r.body = absl::StrCat(request.method, " ", request.path, " ", request.body.size(), " ",
                          std::string(request.Header("X-Tag")));
    return r;
  }
  HttpResponse TransportError(int status, std::string message) override {
    HttpResponse r;
    r.status = status;
    r.body = std::move(message);
    return r;
  }

  std::atomic<int> screened{0};
  std::atomic<int> handled{0};
  std::shared_ptr<FedProducer::Shared> shared = std::make_shared<FedProducer::Shared>();
};

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions o;
    o.threads = 2;
    auto s = HttpServer::Bind("127.0.0.1", 0, nullptr, o, &handler_);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    server_->Start();
  }
  RawConnection Connect() {
    std::string error;
    const int fd = ConnectTo(server_->port(), {}, &error);
    EXPECT_GE(fd, 0) << error;
    return RawConnection(fd);
  }
  // Feeds one more piece from this (non-I/O) thread once the producer has started.
  void Feed() {
    std::function<void()> wake;
    {
      std::unique_lock<std::mutex> l(handler_.shared->mu);
      ASSERT_TRUE(handler_.shared->cv.wait_for(l, absl::ToChronoSeconds(kWait),
                                               [&] { return handler_.shared->wake != nullptr; }));
      ++handler_.shared->produced;
      wake = handler_.shared->wake;
    }
    wake();
  }

  ScriptedHandler handler_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, AProducerWokenFromAnotherThreadStreamsInOrder) {
  RawConnection c = Connect();
  ASSERT_TRUE(c.Send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::thread feeder([&] {
    for (int i = 0; i < 3; ++i) Feed();
  });
  RawResponse r;
  ASSERT_EQ(c.ReadResponse(&r, kWait), ReadEnd::kOk);
  feeder.join();
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.chunked);
  EXPECT_EQ(r.body, "piece 0\npiece 1\npiece 2\n");
  // The connection goes on.
  ASSERT_TRUE(c.Send("GET /after HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_EQ(c.ReadResponse(&r, kWait), ReadEnd::kOk);
  EXPECT_EQ(r.body, "GET /after 0 ");
}

TEST_F(HttpServerTest, AClientThatClosesIsToldToItsProducer) {
  RawConnection c = Connect();
  ASSERT_TRUE(c.Send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  Feed();  // the head and a first piece go out; the rest never comes
  ASSERT_TRUE(c.ReadUntil("piece 0", kWait));
  c.Close();
  std::unique_lock<std::mutex> l(handler_.shared->mu);
  EXPECT_TRUE(handler_.shared->cv.wait_for(l, absl::ToChronoSeconds(kWait), [&] {
    return handler_.shared->gone && handler_.shared->destroyed;
  }));
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrderBehindAStream) {
  RawConnection c = Connect();
  ASSERT_TRUE(c.Send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"
                     "POST /b HTTP/1.1\r\nHost: x\r\nX-Tag: two\r\nContent-Length: 3\r\n\r\nabc"
                     "GET /c HTTP/1.1\r\nHost: x\r\nX-Tag: three\r\n\r\n"));
  std::thread feeder([&] {
    for (int i = 0; i < 3; ++i) Feed();
  });
  RawResponse r;
  ASSERT_EQ(c.ReadResponse(&r, kWait), ReadEnd::kOk);
  feeder.join();
  EXPECT_EQ(r.body, "piece 0\npiece 1\npiece 2\n");
  ASSERT_EQ(c.ReadResponse(&r, kWait), ReadEnd::kOk);
  EXPECT_EQ(r.body, "POST /b 3 two");
  ASSERT_EQ(c.ReadResponse(&r, kWait), ReadEnd::kOk);
  EXPECT_EQ(r.body, "GET /c 0 three");
}

TEST_F(HttpServerTest, ARefusalOnTheHeadLeavesTheBodyUnreadAndCloses) {
  RawConnection c = Connect();
  // The body is announced but never sent: the refusal must not wait for it.
  ASSERT_TRUE(c.Send("POST /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"));
  RawResponse r;
  ASSERT_EQ(c.ReadResponse(&r, kWait), ReadEnd::kOk);
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.Header("Connection"), "close");
  EXPECT_NE(c.WaitPeerClosed(kWait), ReadEnd::kTimeout);
  EXPECT_EQ(handler_.handled.load(), 0);
  // Without a body the connection goes on.
  RawConnection d = Connect();
  ASSERT_TRUE(d.Send("GET /refuse HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_EQ(d.ReadResponse(&r, kWait), ReadEnd::kOk);
  EXPECT_EQ(r.status, 401);
  ASSERT_EQ(d.ReadResponse(&r, kWait), ReadEnd::kOk);
  EXPECT_EQ(r.body, "GET /ok 0 ");
}

TEST_F(HttpServerTest, ChunkedBodiesHeadAndHttp10) {
  RawConnection c = Connect();
  ASSERT_TRUE(c.Send("POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"));
  RawResponse r;
  ASSERT_EQ(c.ReadResponse(&r, kWait), ReadEnd::kOk);
  EXPECT_EQ(r.body, "POST /chunked 5 ");
  // HEAD: the head says the length ("HEAD /h 0 " is 10 bytes), no body follows.
  RawConnection e = Connect();
  ASSERT_TRUE(e.Send("HEAD /h HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  std::string head_tail;
  EXPECT_EQ(e.WaitPeerClosed(kWait, nullptr, &head_tail), ReadEnd::kClosed);
  EXPECT_NE(head_tail.find("Content-Length: 10\r\n"), std::string::npos) << head_tail;
  EXPECT_EQ(head_tail.find("HEAD /h 0"), std::string::npos) << head_tail;
  // HTTP/1.0: a stream has no chunked framing; its end is the connection's.
  RawConnection d = Connect();
  ASSERT_TRUE(d.Send("GET /stream HTTP/1.0\r\n\r\n"));
  std::thread feeder([&] {
    for (int i = 0; i < 3; ++i) Feed();
  });
  std::string tail;
  size_t bytes = 0;
  EXPECT_EQ(d.WaitPeerClosed(kWait, &bytes, &tail), ReadEnd::kClosed);
  feeder.join();
  EXPECT_NE(tail.find("piece 0\npiece 1\npiece 2\n"), std::string::npos) << tail;
  EXPECT_EQ(tail.find("Transfer-Encoding"), std::string::npos) << tail;
}

TEST_F(HttpServerTest, StopEndsAProducerStillWaiting) {
  RawConnection c = Connect();
  ASSERT_TRUE(c.Send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  {
    std::unique_lock<std::mutex> l(handler_.shared->mu);
    ASSERT_TRUE(handler_.shared->cv.wait_for(l, absl::ToChronoSeconds(kWait),
                                             [&] { return handler_.shared->wake != nullptr; }));
  }
  server_->Stop();
  {
    std::lock_guard<std::mutex> l(handler_.shared->mu);
    EXPECT_TRUE(handler_.shared->gone);
    EXPECT_TRUE(handler_.shared->destroyed);
  }
  // A wake after the connection is gone does nothing.
  handler_.shared->wake();
  EXPECT_NE(c.WaitPeerClosed(kWait), ReadEnd::kTimeout);
}

}  // namespace
}  // namespace llmserve::http
