// Helpers for tests of LlmService over real gRPC on loopback: a served service with a
// client stub, reading a Generate stream, polling, and an observer of finish reasons.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "llmserve/v1/llmserve.grpc.pb.h"
#include "scheduler/engine.h"
#include "server/llm_service.h"

namespace llmserve::testing {

inline const absl::Duration kHang = absl::Seconds(60);  // a hang guard, not a timing assertion

// Records each finished request's reason by request_id.
class ReasonObserver : public EngineObserver {
 public:
  void OnFinished(const Sequence& seq, const GenerationFinal& f) override {
    std::lock_guard<std::mutex> l(mu_);
    reasons_[seq.request_id] = f.reason;
  }
  std::optional<SequenceState> Reason(const std::string& id) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = reasons_.find(id);
    return it == reasons_.end() ? std::nullopt : std::optional<SequenceState>(it->second);
  }

 private:
  std::mutex mu_;
  std::map<std::string, SequenceState> reasons_;
};

// Polls `done` every 5 ms until it holds or `limit` passes; true if it held.
template <typename F>
bool PollUntil(F done, absl::Duration limit) {
  const absl::Time end = absl::Now() + limit;
  while (!done()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

// What a client saw on one Generate stream.
struct Stream {
  grpc::Status status;
  std::vector<int32_t> ids;
  std::string text;
  int chunks = 0;
  std::vector<llmserve::v1::TokenLogprob> logprobs;
  std::optional<llmserve::v1::Final> final_msg;
  bool after_final = false;  // a message arrived after the final
};

inline Stream ReadAll(grpc::ClientReader<llmserve::v1::GenerateResponse>& reader) {
  Stream s;
  llmserve::v1::GenerateResponse r;
  while (reader.Read(&r)) {
    if (s.final_msg.has_value()) s.after_final = true;
    if (r.has_chunk()) {
      ++s.chunks;
      s.ids.insert(s.ids.end(), r.chunk().ids().begin(), r.chunk().ids().end());
      s.text += r.chunk().text();
      s.logprobs.insert(s.logprobs.end(), r.chunk().logprobs().begin(), r.chunk().logprobs().end());
    } else if (r.has_final()) {
      s.final_msg = r.final();
    }
  }
  s.status = reader.Finish();
  return s;
}

inline Stream Generate(llmserve::v1::LlmService::Stub& stub, const llmserve::v1::GenerateRequest& req,
                std::optional<absl::Duration> timeout = std::nullopt) {
  grpc::ClientContext ctx;
  if (timeout.has_value()) ctx.set_deadline(absl::ToChronoTime(absl::Now() + *timeout));
  std::unique_ptr<grpc::ClientReader<llmserve::v1::GenerateResponse>> reader = stub.Generate(&ctx, req);
  return ReadAll(*reader);
}

inline llmserve::v1::ServerInfo ServerInfo(llmserve::v1::LlmService::Stub& stub) {
  grpc::ClientContext ctx;
  llmserve::v1::ServerInfo info;
  const grpc::Status s = stub.GetServerInfo(&ctx, llmserve::v1::GetServerInfoRequest(), &info);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return info;
}

// A greedy text request for `max_tokens` tokens.
inline llmserve::v1::GenerateRequest Greedy(const std::string& text, int32_t max_tokens) {
  llmserve::v1::GenerateRequest r;
  r.set_text(text);
  r.set_temperature(0.0f);
  r.set_max_tokens(max_tokens);
  return r;
}

// A server for `engine` on a free loopback port, and a client stub.
struct Served {
  std::unique_ptr<LlmService> service;
  std::unique_ptr<grpc::Server> server;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<llmserve::v1::LlmService::Stub> stub;

  Served(Engine& engine, const Tokenizer& tok, ServiceInfo info) {
    service = std::make_unique<LlmService>(engine, tok, std::move(info));
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(service.get());
    server = b.BuildAndStart();
    EXPECT_NE(server, nullptr);
    EXPECT_GT(port, 0);
    channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
    stub = llmserve::v1::LlmService::NewStub(channel);
  }
  // Call after the engine stopped (every stream got its final).
  void Shutdown() {
    if (server == nullptr) return;
    server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    EXPECT_TRUE(PollUntil([&] { return service->open_streams() == 0; }, kHang)) << service->open_streams();
    server.reset();
  }
};

}  // namespace llmserve::testing
