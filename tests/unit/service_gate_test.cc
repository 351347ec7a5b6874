// ServiceGate in an in-process gRPC server: every method answers UNAVAILABLE "model
// loading" until Open(), then the calls reach the real LlmService (the demo model).
#include "server/service_gate.h"

#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/model_setup.h"

namespace llmserve {
namespace {

namespace v1 = llmserve::v1;

class ServiceGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&gate_);
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
    gate_.Open(service_.get());
  }

  // Every method's status code and message.
  std::vector<grpc::Status> CallAll() {
    std::vector<grpc::Status> out;
    {
      grpc::ClientContext ctx;
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
      grpc::ClientContext ctx;
      v1::TokenizeRequest req;
      req.set_text("Hi");
      v1::TokenizeResponse resp;
      out.push_back(stub_->Tokenize(&ctx, req, &resp));
    }
    {
      grpc::ClientContext ctx;
      v1::DetokenizeRequest req;
      req.add_ids(72);
      v1::DetokenizeResponse resp;
      out.push_back(stub_->Detokenize(&ctx, req, &resp));
    }
    {
      grpc::ClientContext ctx;
      v1::ModelInfo resp;
      out.push_back(stub_->GetModelInfo(&ctx, v1::GetModelInfoRequest(), &resp));
    }
    {
      grpc::ClientContext ctx;
      v1::ServerInfo resp;
      out.push_back(stub_->GetServerInfo(&ctx, v1::GetServerInfoRequest(), &resp));
    }
    {
      grpc::ClientContext ctx;
      v1::ApplyChatTemplateRequest req;
      v1::ChatMessage* m = req.mutable_chat()->add_messages();
      m->set_role("user");
      m->set_content("Hi");
      v1::ApplyChatTemplateResponse resp;
      out.push_back(stub_->ApplyChatTemplate(&ctx, req, &resp));
    }
    return out;
  }

  ServiceGate gate_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::LlmService::Stub> stub_;
  absl::StatusOr<ModelSetup> setup_ = absl::UnknownError("not loaded");
  std::unique_ptr<LlmService> service_;
};

TEST_F(ServiceGateTest, ClosedGateAnswersUnavailableModelLoading) {
  EXPECT_FALSE(gate_.is_open());
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
  EXPECT_TRUE(gate_.is_open());
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

}  // namespace
}  // namespace llmserve
