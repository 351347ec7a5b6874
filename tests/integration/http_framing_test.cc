// Issue 44, item 1: HTTP/1.1 framing of the API port. Pipelined requests (one write) are
// all answered, in order, on the one connection; a bad Content-Length, Content-Length with
// chunked, a malformed chunked body or an oversized header block is refused at once (400 /
// 413 / 431, OpenAI error objects, the connection closed); Expect: 100-continue gets
// "100 Continue" before the body is read.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/integration/http_hardening_util.h"

namespace llmserve::testing {
namespace {

using json = nlohmann::json;

// A small completion request tagged with X-Request-Id `id`.
std::string Completion(const std::string& id, bool stream = false) {
  const json body = {{"prompt", "Once upon a time " + id}, {"max_tokens", 4}, {"temperature", 0}, {"stream", stream}};
  return HttpRequest("POST", "/v1/completions", body.dump(), {"X-Request-Id: " + id});
}

// What a pipelined request expects of its response.
struct Expected {
  std::string request;
  std::string kind;  // "health", "models", "completion", "stream"
  std::string id;    // completions: the X-Request-Id
};

Expected Health() { return {HttpRequest("GET", "/health"), "health", ""}; }
Expected Models() { return {HttpRequest("GET", "/v1/models"), "models", ""}; }
Expected Complete(const std::string& id) { return {Completion(id), "completion", id}; }
Expected Stream(const std::string& id) { return {Completion(id, true), "stream", id}; }

// Sends all of `pipeline` in one write and reads the responses one after another.
void ExpectPipelined(int port, const std::vector<Expected>& pipeline) {
  RawConnection c(ConnectTo(port));
  ASSERT_TRUE(c.valid());
  std::string all;
  for (const Expected& e : pipeline) all += e.request;
  const absl::Time t0 = absl::Now();
  ASSERT_TRUE(c.Send(all));
  for (size_t i = 0; i < pipeline.size(); ++i) {
    const Expected& e = pipeline[i];
    SCOPED_TRACE(absl::StrCat("response ", i, " (", e.kind, " ", e.id, ")"));
    RawResponse r;
    const ReadEnd end = c.ReadResponse(&r, absl::Seconds(20));
    ASSERT_EQ(end, ReadEnd::kOk) << ReadEndName(end);
    ASSERT_EQ(r.status, 200) << r.body;
    const json body = r.Json();
    if (e.kind == "health") {
      EXPECT_EQ(body.value("status", ""), "ok") << r.body;
    } else if (e.kind == "models") {
      EXPECT_EQ(body.value("object", ""), "list") << r.body;
    } else {
      EXPECT_EQ(r.Header("X-Request-Id"), e.id);
      if (e.kind == "completion") {
        EXPECT_EQ(body.value("id", ""), "cmpl-" + e.id) << r.body;
        EXPECT_TRUE(body.contains("choices")) << r.body;
      } else {
        EXPECT_NE(r.body.find("\"id\":\"cmpl-" + e.id + "\""), std::string::npos) << r.body;
        EXPECT_TRUE(r.body.ends_with("data: [DONE]\n\n")) << r.body;
      }
    }
  }
  std::cerr << pipeline.size() << " pipelined requests answered in " << Ms(absl::Now() - t0) << " ms\n";
  // And the connection is still usable.
  RawResponse r;
  ASSERT_TRUE(c.Send(HttpRequest("GET", "/health")));
  EXPECT_EQ(c.ReadResponse(&r, absl::Seconds(5)), ReadEnd::kOk);
  EXPECT_EQ(r.status, 200);
}

TEST_F(HttpHardeningTest, PipelinedRequestsAreAnsweredInOrderOnOneConnection) {
  Start({});
  if (HasFatalFailure() || IsSkipped()) return;
  {
    SCOPED_TRACE("2");
    ExpectPipelined(http_port_, {Complete("p2-a"), Complete("p2-b")});
  }
  {
    SCOPED_TRACE("3");
    ExpectPipelined(http_port_, {Health(), Complete("p3-a"), Models()});
  }
  {
    SCOPED_TRACE("5");
    ExpectPipelined(http_port_, {Complete("p5-a"), Health(), Complete("p5-b"), Models(), Complete("p5-c")});
  }
  {
    SCOPED_TRACE("streaming first");
    ExpectPipelined(http_port_, {Stream("ps-a"), Complete("ps-b")});
  }
}

// Sends `bytes` on a fresh connection; the one response, how long it took, and whether the
// server then closed the connection.
struct Refusal {
  ReadEnd end = ReadEnd::kTimeout;
  RawResponse response;
  absl::Duration latency;
  bool closed = false;
};

Refusal SendAndRead(int port, const std::string& bytes) {
  Refusal out;
  RawConnection c(ConnectTo(port));
  if (!c.valid()) return out;
  const absl::Time t0 = absl::Now();
  c.Send(bytes);
  out.end = c.ReadResponse(&out.response, absl::Seconds(15));
  out.latency = absl::Now() - t0;
  if (out.end == ReadEnd::kOk) out.closed = c.WaitPeerClosed(absl::Seconds(3)) != ReadEnd::kTimeout;
  return out;
}

// `bytes` is refused at once with `status` (or one of `statuses`), an OpenAI error object,
// Connection: close, and the connection closed.
void ExpectRefused(int port, const std::string& what, const std::string& bytes, std::vector<int> statuses,
                   bool must_close = true) {
  SCOPED_TRACE(what);
  const Refusal r = SendAndRead(port, bytes);
  std::cerr << what << ": " << (r.end == ReadEnd::kOk ? r.response.status_line : ReadEndName(r.end)) << " after "
            << Ms(r.latency) << " ms (target < 100 ms)" << (r.closed ? ", then closed" : "") << "\n";
  ASSERT_EQ(r.end, ReadEnd::kOk) << ReadEndName(r.end) << " after " << r.latency;
  EXPECT_NE(std::find(statuses.begin(), statuses.end(), r.response.status), statuses.end()) << r.response.status_line;
  // A refusal, not a timeout: the header and body timeouts are 10 s (the latency is logged;
  // the bound is loose so that a slow, busy machine does not fail it).
  EXPECT_LT(r.latency, absl::Seconds(5)) << "not at once (the header/body timeouts are 10 s)";
  EXPECT_TRUE(IsOpenAiError(r.response.Json())) << r.response.body;
  if (must_close) {
    EXPECT_EQ(absl::AsciiStrToLower(r.response.Header("Connection")), "close");
    EXPECT_TRUE(r.closed) << "the connection stayed open";
  }
}

std::string Head(const std::vector<std::string>& headers) {
  std::string out = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
  for (const std::string& h : headers) absl::StrAppend(&out, h, "\r\n");
  return out + "\r\n";
}

TEST_F(HttpHardeningTest, BadFramingIsRefusedAtOnce) {
  Start({"--max-request-bytes=65536"});  // the header and body timeouts: their defaults, 10 s
  if (HasFatalFailure() || IsSkipped()) return;
  for (const char* length : {"-1", "abc", "99999999999999999999", "12abc"}) {
    ExpectRefused(http_port_, absl::StrCat("Content-Length: ", length), Head({absl::StrCat("Content-Length: ", length)}),
                  {400});
  }
  ExpectRefused(http_port_, "Content-Length over --max-request-bytes (no body sent)", Head({"Content-Length: 65537"}),
                {413}, /*must_close=*/false);
  ExpectRefused(http_port_, "Content-Length and chunked (no body sent)",
                Head({"Content-Length: 10", "Transfer-Encoding: chunked"}), {400});
  ExpectRefused(http_port_, "malformed chunked body",
                Head({"Transfer-Encoding: chunked"}) + "zz\r\n{\"prompt\":1}\r\n0\r\n\r\n", {400});
  std::vector<std::string> many;
  for (int i = 0; i < 64; ++i) many.push_back(absl::StrCat("X-Pad-", i, ": ", std::string(1024, 'a')));
  ExpectRefused(http_port_, "64 KiB of headers", Head(many), {431, 400});
}

TEST_F(HttpHardeningTest, ExpectContinueGets100BeforeTheBody) {
  Start({"--max-request-bytes=65536"});
  if (HasFatalFailure() || IsSkipped()) return;
  const std::string body = R"({"prompt":"Once upon a time","max_tokens":4,"temperature":0})";
  RawConnection c = Connect();
  const absl::Time t0 = absl::Now();
  ASSERT_TRUE(c.Send(Head({"Expect: 100-continue", absl::StrCat("Content-Length: ", body.size())})));
  RawResponse r;
  ASSERT_EQ(c.ReadResponse(&r, absl::Seconds(5)), ReadEnd::kOk) << "no 100 Continue";
  std::cerr << "Expect: 100-continue: " << r.status_line << " after " << Ms(absl::Now() - t0) << " ms\n";
  ASSERT_EQ(r.status, 100) << r.status_line;
  ASSERT_TRUE(c.Send(body));
  ASSERT_EQ(c.ReadResponse(&r, absl::Seconds(10)), ReadEnd::kOk);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.Json().contains("choices")) << r.body;

  // Over the limit: the final 413 comes without the body (a 100 before it is tolerated).
  RawConnection big = Connect();
  const absl::Time t1 = absl::Now();
  ASSERT_TRUE(big.Send(Head({"Expect: 100-continue", "Content-Length: 65537"})));
  ASSERT_EQ(big.ReadResponse(&r, absl::Seconds(5)), ReadEnd::kOk);
  if (r.status == 100) {
    ASSERT_EQ(big.ReadResponse(&r, absl::Seconds(5)), ReadEnd::kOk);
  }
  std::cerr << "Expect: 100-continue over the limit: " << r.status_line << " after " << Ms(absl::Now() - t1) << " ms\n";
  EXPECT_EQ(r.status, 413) << r.status_line;
  EXPECT_TRUE(IsOpenAiError(r.Json())) << r.body;
}

}  // namespace
}  // namespace llmserve::testing
