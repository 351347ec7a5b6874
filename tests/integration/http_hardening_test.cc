// Issue 44, item 1: the HTTP front end holds on an open network. Slowloris clients (headers
// or body trickled a byte every 0.5 s) neither starve other clients (/health, a completion,
// /metrics) nor stay connected past their deadline; the per-address and global connection
// caps refuse at once; an idle keep-alive connection is closed after --http-idle-timeout.
// Framing, pipelining and 100-continue: http_framing_test.cc; disconnects: http_disconnect_test.cc.
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/integration/http_hardening_util.h"

namespace llmserve::testing {
namespace {

// One hostile connection trickling `payload` a byte at a time.
struct SlowConnection {
  RawConnection conn;
  std::string payload;  // what is left to trickle
  absl::Time start;     // the first byte (headers) or the end of the head (body)
  absl::Time closed = absl::InfiniteFuture();
  std::string got;      // whatever the server said (a 408, say)
};

// Sends one byte to every open connection every `interval`, watches them all, and marks
// each closed when the server closes or resets it; returns when all are closed or at `until`.
void Trickle(std::vector<SlowConnection>& slow, absl::Duration interval, absl::Time until, std::atomic<int>* open) {
  absl::Time next_send = absl::Now() + interval;
  while (open->load() > 0 && absl::Now() < until) {
    std::vector<pollfd> fds;
    std::vector<size_t> index;
    for (size_t i = 0; i < slow.size(); ++i) {
      if (slow[i].closed != absl::InfiniteFuture()) continue;
      fds.push_back({slow[i].conn.fd(), POLLIN | POLLRDHUP, 0});
      index.push_back(i);
    }
    poll(fds.data(), fds.size(), 20);
    const absl::Time now = absl::Now();
    const auto mark_closed = [&](SlowConnection& s) {
      s.closed = now;
      s.conn.Close();
      open->fetch_sub(1);
    };
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      SlowConnection& s = slow[index[k]];
      char buf[4096];
      const ssize_t n = recv(s.conn.fd(), buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) {
        s.got.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        mark_closed(s);
      }
    }
    if (now >= next_send) {
      next_send = now + interval;
      for (SlowConnection& s : slow) {
        if (s.closed != absl::InfiniteFuture() || s.payload.empty()) continue;
        if (!s.conn.Send(s.payload.substr(0, 1))) {
          mark_closed(s);
          continue;
        }
        s.payload.erase(0, 1);
      }
    }
  }
}

// GET or POST on a fresh connection to `port`; the latency to the whole response.
absl::Duration Ask(int port, const std::string& request, RawResponse* response, ReadEnd* end) {
  const absl::Time t0 = absl::Now();
  RawConnection c(ConnectTo(port));
  *end = ReadEnd::kReset;
  if (c.valid() && c.Send(request)) *end = c.ReadResponse(response, absl::Seconds(10));
  return absl::Now() - t0;
}

TEST_F(HttpHardeningTest, SlowlorisNeitherStarvesOthersNorOutstaysItsDeadline) {
  constexpr int kDeadlineSeconds = 3;
  Start({"--http-header-timeout=3", "--http-body-timeout=3", "--http-idle-timeout=3",
         "--http-max-connections-per-address=1000"});
  if (HasFatalFailure() || IsSkipped()) return;
  constexpr int kEach = 200;
  std::vector<SlowConnection> slow(2 * kEach);
  const absl::Time opening = absl::Now();
  for (int i = 0; i < 2 * kEach; ++i) {
    SlowConnection& s = slow[static_cast<size_t>(i)];
    s.conn = Connect();
    ASSERT_TRUE(s.conn.valid()) << "connection " << i;
    if (i < kEach) {  // the head, a byte at a time
      s.payload = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + std::string(100, 'a');
    } else {  // the whole head, then the body a byte at a time
      ASSERT_TRUE(s.conn.Send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"));
      s.payload = "{" + std::string(999, ' ');
    }
    ASSERT_TRUE(s.conn.Send(s.payload.substr(0, 1)));
    s.payload.erase(0, 1);
    s.start = absl::Now();
  }
  std::cerr << "opened " << 2 * kEach << " slow connections in " << Ms(absl::Now() - opening) << " ms\n";
  std::atomic<int> open{2 * kEach};
  const absl::Time until = slow.back().start + absl::Seconds(4 * kDeadlineSeconds);
  std::thread trickler([&] { Trickle(slow, absl::Milliseconds(500), until, &open); });

  // While they are open, the others are served.
  const int open_at_checks = open.load();
  const absl::Duration since_opened = absl::Now() - slow.front().start;
  RawResponse r;
  ReadEnd end;
  const absl::Duration health = Ask(http_port_, HttpRequest("GET", "/health"), &r, &end);
  EXPECT_EQ(end, ReadEnd::kOk) << "/health: " << ReadEndName(end);
  EXPECT_EQ(r.status, 200) << r.body;
  const absl::Duration completion =
      Ask(http_port_,
          HttpRequest("POST", "/v1/completions", R"({"prompt":"Once upon a time","max_tokens":4,"temperature":0})"),
          &r, &end);
  EXPECT_EQ(end, ReadEnd::kOk) << "completion: " << ReadEndName(end);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.Json().contains("choices")) << r.body;
  const absl::Duration metrics = Ask(metrics_port_, HttpRequest("GET", "/metrics"), &r, &end);
  EXPECT_EQ(end, ReadEnd::kOk) << "/metrics: " << ReadEndName(end);
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("llmserve_"), std::string::npos);
  const int open_after_checks = open.load();
  std::cerr << "with " << open_at_checks << " slow connections open (" << Ms(since_opened)
            << " ms after the first; " << open_after_checks << " still open after): /health " << Ms(health)
            << " ms, completion (4 tokens) " << Ms(completion) << " ms, /metrics " << Ms(metrics)
            << " ms (target < 1000 ms)\n";
  EXPECT_EQ(open_at_checks, 2 * kEach) << "the checks must run while every slow connection is open";
  for (const absl::Duration d : {health, completion, metrics}) EXPECT_LT(d, absl::Seconds(5));

  trickler.join();
  // Each was closed by the server around its deadline: not before it, well before 3x.
  for (int group = 0; group < 2; ++group) {
    std::vector<double> after;
    int answered = 0;
    for (int i = group * kEach; i < (group + 1) * kEach; ++i) {
      const SlowConnection& s = slow[static_cast<size_t>(i)];
      ASSERT_NE(s.closed, absl::InfiniteFuture())
          << (group == 0 ? "header" : "body") << " trickler " << i << " still open "
          << Ms(absl::Now() - s.start) << " ms after its start";
      const absl::Duration held = s.closed - s.start;
      EXPECT_GE(held, absl::Seconds(kDeadlineSeconds) - absl::Milliseconds(500)) << "closed early: " << i;
      EXPECT_LT(held, absl::Seconds(3 * kDeadlineSeconds)) << "closed late: " << i;
      after.push_back(absl::ToDoubleSeconds(held));
      if (!s.got.empty()) ++answered;
      if (!s.got.empty()) {
        EXPECT_TRUE(s.got.starts_with("HTTP/1.1 408") || s.got.starts_with("HTTP/1.1 400")) << s.got;
      }
    }
    std::sort(after.begin(), after.end());
    std::cerr << (group == 0 ? "header" : "body") << " tricklers closed after (s): min " << after.front()
              << ", median " << after[after.size() / 2] << ", max " << after.back() << " (deadline "
              << kDeadlineSeconds << " s); " << answered << " got a response first\n";
  }
}

// Opens `n` connections from `source` and has each answer GET /health (so the server has
// accepted them all); they stay open (keep-alive).
std::vector<RawConnection> HoldConnections(int port, const char* source, int n) {
  std::vector<RawConnection> held;
  for (int i = 0; i < n; ++i) {
    RawConnection c(ConnectTo(port, {.source_ip = source}));
    RawResponse r;
    EXPECT_TRUE(c.valid() && c.Send(HttpRequest("GET", "/health")));
    EXPECT_EQ(c.ReadResponse(&r, absl::Seconds(5)), ReadEnd::kOk) << source << " #" << i;
    EXPECT_EQ(r.status, 200) << source << " #" << i;
    held.push_back(std::move(c));
  }
  return held;
}

// A connection from `source` beyond a cap: refused at once, with a 503 (Connection: close)
// or a plain close/reset.
void ExpectRefusedAtOnce(int port, const char* source) {
  const absl::Time t0 = absl::Now();
  RawConnection c(ConnectTo(port, {.source_ip = source}));
  ASSERT_TRUE(c.valid());
  c.Send(HttpRequest("GET", "/health"));  // may fail: the server may have closed already
  RawResponse r;
  const ReadEnd end = c.ReadResponse(&r, absl::Seconds(5));
  const absl::Duration latency = absl::Now() - t0;
  std::cerr << "over the cap from " << source << ": " << (end == ReadEnd::kOk ? r.status_line : ReadEndName(end))
            << " after " << Ms(latency) << " ms (target < 100 ms)\n";
  if (end == ReadEnd::kOk) {
    EXPECT_EQ(r.status, 503) << "served beyond the cap: " << r.status_line;
    EXPECT_EQ(absl::AsciiStrToLower(r.Header("Connection")), "close");
    EXPECT_NE(c.WaitPeerClosed(absl::Seconds(2)), ReadEnd::kTimeout) << "not closed after the 503";
  } else {
    EXPECT_TRUE(end == ReadEnd::kClosed || end == ReadEnd::kReset) << ReadEndName(end);
  }
  // Refused, not closed by a timeout: these tests set the idle timeout to 30 s (the latency is logged).
  EXPECT_LT(latency, absl::Seconds(3));
}

// After one of the held connections closes, a new one from `source` is served again (the
// server may take a moment to see the close).
void ExpectServedAgain(int port, const char* source) {
  RawResponse r;
  for (const absl::Time end = absl::Now() + absl::Seconds(3); absl::Now() < end;) {
    RawConnection c(ConnectTo(port, {.source_ip = source}));
    if (c.valid() && c.Send(HttpRequest("GET", "/health")) &&
        c.ReadResponse(&r, absl::Seconds(2)) == ReadEnd::kOk && r.status == 200) {
      return;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  ADD_FAILURE() << "a connection from " << source << " is not served after a held one closed";
}

TEST_F(HttpHardeningTest, PerAddressCapRefusesAtOnceOtherAddressesStillServed) {
  Start({"--http-max-connections-per-address=4", "--http-idle-timeout=30"});
  if (HasFatalFailure() || IsSkipped()) return;
  std::vector<RawConnection> held = HoldConnections(http_port_, "127.0.0.1", 4);
  ASSERT_FALSE(HasFailure());
  ExpectRefusedAtOnce(http_port_, "127.0.0.1");
  // Another source address is not counted against 127.0.0.1's cap.
  RawConnection other(ConnectTo(http_port_, {.source_ip = "127.0.0.2"}));
  RawResponse r;
  ASSERT_TRUE(other.valid() && other.Send(HttpRequest("GET", "/health")));
  ASSERT_EQ(other.ReadResponse(&r, absl::Seconds(5)), ReadEnd::kOk);
  EXPECT_EQ(r.status, 200);
  // The held ones are still served.
  ASSERT_TRUE(held[0].Send(HttpRequest("GET", "/health")));
  ASSERT_EQ(held[0].ReadResponse(&r, absl::Seconds(5)), ReadEnd::kOk);
  EXPECT_EQ(r.status, 200);
  held[0].Close();
  ExpectServedAgain(http_port_, "127.0.0.1");
}

TEST_F(HttpHardeningTest, GlobalCapRefusesAtOnce) {
  Start({"--http-max-connections=8", "--http-idle-timeout=30"});
  if (HasFatalFailure() || IsSkipped()) return;
  std::vector<RawConnection> held = HoldConnections(http_port_, "127.0.0.1", 4);
  std::vector<RawConnection> more = HoldConnections(http_port_, "127.0.0.2", 4);
  ASSERT_FALSE(HasFailure());
  ExpectRefusedAtOnce(http_port_, "127.0.0.3");
  ExpectRefusedAtOnce(http_port_, "127.0.0.1");
  more[0].Close();
  ExpectServedAgain(http_port_, "127.0.0.3");
}

// Waits for the server to close `c`; the time it took from `since`.
absl::Duration ClosedAfter(RawConnection& c, absl::Time since, absl::Duration bound) {
  const ReadEnd end = c.WaitPeerClosed(bound);
  EXPECT_NE(end, ReadEnd::kTimeout) << "still open after " << bound;
  return absl::Now() - since;
}

TEST_F(HttpHardeningTest, IdleConnectionsAreClosedAfterTheIdleTimeout) {
  Start({"--http-idle-timeout=2"});
  if (HasFatalFailure() || IsSkipped()) return;
  // A new connection that never sends a byte.
  RawConnection silent = Connect();
  const absl::Time silent_since = absl::Now();
  // A keep-alive connection after its response.
  RawConnection used = Connect();
  RawResponse r;
  ASSERT_TRUE(used.Send(HttpRequest("GET", "/health")));
  ASSERT_EQ(used.ReadResponse(&r, absl::Seconds(5)), ReadEnd::kOk);
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(absl::AsciiStrToLower(r.Header("Connection")), "close") << "the server did not keep the connection";
  const absl::Time used_since = absl::Now();
  const absl::Duration used_after = ClosedAfter(used, used_since, absl::Seconds(10));
  const absl::Duration silent_after = ClosedAfter(silent, silent_since, absl::Seconds(10));
  std::cerr << "--http-idle-timeout=2: keep-alive closed after " << Ms(used_after) << " ms, silent new connection after "
            << Ms(silent_after) << " ms\n";
  for (const absl::Duration d : {used_after, silent_after}) {
    EXPECT_GE(d, absl::Milliseconds(1500));
    EXPECT_LT(d, absl::Seconds(6));
  }
}

TEST_F(HttpHardeningTest, IdleKeepAliveClosedAfterTheDefaultFiveSeconds) {
  Start({});
  if (HasFatalFailure() || IsSkipped()) return;
  RawConnection used = Connect();
  RawResponse r;
  ASSERT_TRUE(used.Send(HttpRequest("GET", "/health")));
  ASSERT_EQ(used.ReadResponse(&r, absl::Seconds(5)), ReadEnd::kOk);
  ASSERT_EQ(r.status, 200);
  const absl::Duration after = ClosedAfter(used, absl::Now(), absl::Seconds(20));
  std::cerr << "default idle timeout: keep-alive closed after " << Ms(after) << " ms\n";
  EXPECT_GE(after, absl::Milliseconds(4500));
  EXPECT_LT(after, absl::Seconds(15));
}

}  // namespace
}  // namespace llmserve::testing
