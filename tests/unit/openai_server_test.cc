// OpenAiServer before the model is loaded and while draining (no engine needed): health
// 503 then 200, the API 503 "model loading", keys checked first (401, counted), 404 / 405 /
// 413 / 415 as error objects, and 503 with the connection closed once it refuses requests.
#include "server/openai_server.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "prometheus/registry.h"
#include "server/metrics.h"

namespace llmserve {
namespace {

using json = nlohmann::json;

constexpr char kKey[] = "openai-server-test-key-0123";

class OpenAiServerTest : public ::testing::Test {
 protected:
  void Start(bool with_keys) {
    ServerConfig config;
    config.host = "127.0.0.1";
    config.http_port = 0;  // any free port
    config.http_threads = 4;
    config.max_request_bytes = 4096;
    std::optional<ApiKeys> keys;
    if (with_keys) {
      absl::StatusOr<ApiKeys> parsed = ApiKeys::Parse(kKey, "test");
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      keys = *std::move(parsed);
    }
    registry_ = std::make_shared<prometheus::Registry>();
    absl::StatusOr<std::unique_ptr<Metrics>> metrics = Metrics::Create(*registry_, "t_", "model", MetricsConfigInfo());
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    metrics_ = *std::move(metrics);
    access_ = std::make_shared<AccessGate>(std::make_shared<ApiKeyStore>(std::move(keys)), metrics_.get(),
                                           /*reflection_needs_key=*/true);
    absl::StatusOr<std::unique_ptr<OpenAiServer>> s = OpenAiServer::Start(config, access_);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_connection_timeout(5);
    client_->set_read_timeout(5);
  }

  // The status and error message of a response that must be an OpenAI error object.
  static std::pair<int, std::string> Error(const httplib::Result& r) {
    EXPECT_TRUE(r) << httplib::to_string(r.error());
    if (!r) return {0, ""};
    const json body = json::parse(r->body, nullptr, false);
    EXPECT_TRUE(body.is_object() && body.contains("error")) << r->body;
    if (!body.is_object() || !body.contains("error")) return {r->status, ""};
    EXPECT_TRUE(body["error"]["type"].is_string()) << r->body;
    return {r->status, body["error"]["message"].get<std::string>()};
  }

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Metrics> metrics_;
  std::shared_ptr<AccessGate> access_;
  std::unique_ptr<OpenAiServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(OpenAiServerTest, LoadingThenServingHealth) {
  Start(false);
  auto [status, message] = Error(client_->Get("/health"));
  EXPECT_EQ(status, 503);
  EXPECT_EQ(message, "model loading");
  auto [api, why] = Error(client_->Post("/v1/completions", R"({"prompt": "x"})", "application/json"));
  EXPECT_EQ(api, 503);
  EXPECT_NE(why.find("model loading"), std::string::npos) << why;
  EXPECT_EQ(Error(client_->Get("/v1/models")).first, 503);
  access_->SetPhase(ServingPhase::kServing);
  httplib::Result ok = client_->Get("/health");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST_F(OpenAiServerTest, KeysComeFirstAndAreCounted) {
  Start(true);
  EXPECT_EQ(Error(client_->Post("/v1/completions", R"({"prompt": "x"})", "application/json")).first, 401);
  EXPECT_EQ(Error(client_->Get("/v1/models", {{"Authorization", "Bearer wrong-key-0123456789"}})).first, 401);
  // The right key gets past the gate (to "model loading").
  EXPECT_EQ(Error(client_->Get("/v1/models", {{"Authorization", std::string("Bearer ") + kKey}})).first, 503);
  EXPECT_EQ(Error(client_->Get("/health")).first, 503);  // health needs no key
  bool counted = false;
  for (const auto& family : registry_->Collect()) {
    if (family.name == "t_unauthenticated_requests_total") counted = family.metric.at(0).counter.value == 2;
  }
  EXPECT_TRUE(counted);
}

TEST_F(OpenAiServerTest, PathsMethodsSizesAndTypes) {
  Start(false);
  EXPECT_EQ(Error(client_->Get("/v1/embeddings")).first, 404);
  EXPECT_EQ(Error(client_->Get("/v1/completions")).first, 405);
  EXPECT_EQ(Error(client_->Post("/health", "", "application/json")).first, 405);
  EXPECT_EQ(Error(client_->Post("/v1/completions", std::string(8192, ' '), "application/json")).first, 413);
  // The server is still there.
  EXPECT_EQ(Error(client_->Get("/health")).first, 503);
}

TEST_F(OpenAiServerTest, RefusingAnswers503AndClosesTheConnection) {
  Start(false);
  access_->SetPhase(ServingPhase::kRefusing);
  httplib::Result r = client_->Post("/v1/chat/completions", R"({"messages": []})", "application/json");
  auto [status, message] = Error(r);
  EXPECT_EQ(status, 503);
  EXPECT_NE(message.find("draining"), std::string::npos) << message;
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("Connection"), "close");
}

TEST_F(OpenAiServerTest, ABusyPortIsAnError) {
  Start(false);
  ServerConfig config;
  config.host = "127.0.0.1";
  config.http_port = server_->port();
  absl::StatusOr<std::unique_ptr<OpenAiServer>> second =
      OpenAiServer::Start(config, std::make_shared<AccessGate>(nullptr, nullptr, true));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("in use"), std::string::npos) << second.status();
}

}  // namespace
}  // namespace llmserve
