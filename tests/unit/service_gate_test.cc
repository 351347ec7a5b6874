// ServiceGate in an in-process gRPC server: every method answers UNAVAILABLE "model
// loading" until Open() and the AccessGate's kServing, then the calls reach the real
// LlmService (the demo model); with API keys, a call without an accepted key gets
// UNAUTHENTICATED first, and is counted.
#include "server/service_gate.h"

#include <memory>
#include <optional>
#include <string>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "server/model_setup.h"
#include "tests/util/prom_text.h"

namespace llmserve {
namespace {

namespace v1 = llmserve::v1;

class ServiceGateTest : public ::testing::Test {
 protected:
  void SetUp() override { Serve(std::nullopt); }
  // The server, with `keys` at the gate (counting refusals in metrics_).
  void Serve(std::optional<ApiKeys> keys) {
    auto metrics = Metrics::Create(registry_, "llmserve_", "demo", MetricsConfigInfo{});
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    metrics_ = *std::move(metrics);
    access_ = std::make_shared<AccessGate>(std::make_shared<ApiKeyStore>(std::move(keys)), metrics_.get(), true);
    gate_ = std::make_unique<ServiceGate>(access_);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(gate_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
    stub_ = v1::LlmService::NewStub(
        grpc::CreateChannel("ipv4:127.0.0.1:" + std::to_string(port_), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
    if (setup_.ok() && setup_->engine != nullptr) setup_->engine->Stop();
  }

  // Loads the demo model and opens the gate to a service over it.
  void OpenGate() {
    ServerConfig c;
    c.kv_blocks = 64;
    c.threads = 2;
    setup_ = SetUpModel(c);
    ASSERT_TRUE(setup_.ok()) << setup_.status();
    service_ = std::make_unique<LlmService>(*setup_->engine, *setup_->tokenizer, setup_->info);
    setup_->engine->Start();
    gate_->Open(service_.get());
    access_->SetPhase(ServingPhase::kServing);
  }

  // Every method's status code and message; `authorization` ("" = none) is sent as that
  // metadata.
  std::vector<grpc::Status> CallAll(const std::string& authorization = "") {
    std::vector<grpc::Status> out;
    struct Ctx : grpc::ClientContext {
      explicit Ctx(const std::string& a) {
        if (!a.empty()) AddMetadata("authorization", a);
      }
    };
    {
      Ctx ctx(authorization);
      v1::GenerateRequest req;
      req.set_text("Hi");
      req.set_max_tokens(4);
      auto reader = stub_->Generate(&ctx, req);
      v1::GenerateResponse msg;
      while (reader->Read(&msg)) {
      }
      out.push_back(reader->Finish());
    }
    {
      Ctx ctx(authorization);
      v1::TokenizeRequest req;
      req.set_text("Hi");
      v1::TokenizeResponse resp;
      out.push_back(stub_->Tokenize(&ctx, req, &resp));
    }
    {
      Ctx ctx(authorization);
      v1::DetokenizeRequest req;
      req.add_ids(72);
      v1::DetokenizeResponse resp;
      out.push_back(stub_->Detokenize(&ctx, req, &resp));
    }
    {
      Ctx ctx(authorization);
      v1::ModelInfo resp;
      out.push_back(stub_->GetModelInfo(&ctx, v1::GetModelInfoRequest(), &resp));
    }
    {
      Ctx ctx(authorization);
      v1::ServerInfo resp;
      out.push_back(stub_->GetServerInfo(&ctx, v1::GetServerInfoRequest(), &resp));
    }
    {
      Ctx ctx(authorization);
      v1::ApplyChatTemplateRequest req;
      v1::ChatMessage* m = req.mutable_chat()->add_messages();
      m->set_role("user");
      m->set_content("Hi");
      v1::ApplyChatTemplateResponse resp;
      out.push_back(stub_->ApplyChatTemplate(&ctx, req, &resp));
    }
    return out;
  }

  prometheus::Registry registry_;
  std::unique_ptr<Metrics> metrics_;
  std::shared_ptr<AccessGate> access_;
  std::unique_ptr<ServiceGate> gate_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::LlmService::Stub> stub_;
  absl::StatusOr<ModelSetup> setup_ = absl::UnknownError("not loaded");
  std::unique_ptr<LlmService> service_;
};

TEST_F(ServiceGateTest, ClosedGateAnswersUnavailableModelLoading) {
  EXPECT_FALSE(gate_->is_open());
  const std::vector<grpc::Status> got = CallAll();
  ASSERT_EQ(got.size(), 6u);
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("method " + std::to_string(i));
    EXPECT_EQ(got[i].error_code(), grpc::UNAVAILABLE);
    EXPECT_NE(got[i].error_message().find("model loading"), std::string::npos) << got[i].error_message();
  }
}

TEST_F(ServiceGateTest, OpenGateForwardsEveryMethod) {
  OpenGate();
  EXPECT_TRUE(gate_->is_open());
  const std::vector<grpc::Status> got = CallAll();
  ASSERT_EQ(got.size(), 6u);
  for (size_t i = 0; i + 1 < got.size(); ++i) {
    SCOPED_TRACE("method " + std::to_string(i));
    EXPECT_TRUE(got[i].ok()) << got[i].error_code() << ": " << got[i].error_message();
  }
  // The demo model has no chat template: the service's own answer, not the gate's.
  EXPECT_EQ(got[5].error_code(), grpc::FAILED_PRECONDITION) << got[5].error_message();
  grpc::ClientContext ctx;
  v1::ModelInfo info;
  ASSERT_TRUE(stub_->GetModelInfo(&ctx, v1::GetModelInfoRequest(), &info).ok());
  EXPECT_EQ(info.name(), "demo");
}

TEST_F(ServiceGateTest, ServingPhaseBeforeOpenStillAnswersModelLoading) {
  access_->SetPhase(ServingPhase::kServing);
  for (const grpc::Status& st : CallAll()) {
    EXPECT_EQ(st.error_code(), grpc::UNAVAILABLE);
    EXPECT_NE(st.error_message().find("model loading"), std::string::npos) << st.error_message();
  }
}

TEST_F(ServiceGateTest, DrainingPhasesStillForward) {
  OpenGate();
  // gRPC refuses new calls at the transport (GOAWAY), never with a status.
  for (ServingPhase phase : {ServingPhase::kDraining, ServingPhase::kRefusing}) {
    access_->SetPhase(phase);
    grpc::ClientContext ctx;
    v1::ModelInfo info;
    EXPECT_TRUE(stub_->GetModelInfo(&ctx, v1::GetModelInfoRequest(), &info).ok());
  }
}

class KeyedServiceGateTest : public ServiceGateTest {
 protected:
  void SetUp() override {
    absl::StatusOr<ApiKeys> keys = ApiKeys::Parse("first-key-0123456789\n", "test");
    ASSERT_TRUE(keys.ok()) << keys.status();
    Serve(*std::move(keys));
  }
  double Unauthenticated() {
    const std::string text = prometheus::TextSerializer().Serialize(registry_.Collect());
    return ::llmserve::testing::FindSample(::llmserve::testing::ParsePromText(text),
                                           "llmserve_unauthenticated_requests_total", {{"model_name", "demo"}})
        .value_or(-1);
  }
};

TEST_F(KeyedServiceGateTest, EveryMethodNeedsAnAcceptedKeyAndRefusalsAreCounted) {
  OpenGate();
  for (const std::string& auth : {std::string(), std::string("Bearer wrong-key-0123456789"),
                                  std::string("first-key-0123456789"), std::string("Basic first-key-0123456789")}) {
    SCOPED_TRACE("authorization: " + auth);
    const std::vector<grpc::Status> got = CallAll(auth);
    ASSERT_EQ(got.size(), 6u);
    for (const grpc::Status& st : got) {
      EXPECT_EQ(st.error_code(), grpc::UNAUTHENTICATED) << st.error_message();
      EXPECT_EQ(st.error_message().find("first-key"), std::string::npos) << "the key must not be echoed";
    }
  }
  EXPECT_EQ(Unauthenticated(), 24);
  const std::vector<grpc::Status> ok = CallAll("bearer first-key-0123456789");
  for (size_t i = 0; i + 1 < ok.size(); ++i) EXPECT_TRUE(ok[i].ok()) << ok[i].error_message();
  EXPECT_EQ(ok[5].error_code(), grpc::FAILED_PRECONDITION);  // no chat template: the service's answer
  EXPECT_EQ(Unauthenticated(), 24);
}

TEST_F(KeyedServiceGateTest, KeysAreCheckedBeforeTheModelIsLoaded) {
  for (const grpc::Status& st : CallAll()) EXPECT_EQ(st.error_code(), grpc::UNAUTHENTICATED);
  for (const grpc::Status& st : CallAll("Bearer first-key-0123456789")) EXPECT_EQ(st.error_code(), grpc::UNAVAILABLE);
}

TEST_F(KeyedServiceGateTest, ReplacedKeysApplyToTheNextCall) {
  OpenGate();
  absl::StatusOr<ApiKeys> rotated = ApiKeys::Parse("second-key-0123456789\n", "test");
  ASSERT_TRUE(rotated.ok());
  gate_->access().ReplaceApiKeys(*std::move(rotated));
  EXPECT_EQ(CallAll("Bearer first-key-0123456789")[0].error_code(), grpc::UNAUTHENTICATED);
  EXPECT_TRUE(CallAll("Bearer second-key-0123456789")[0].ok());
}

}  // namespace
}  // namespace llmserve
