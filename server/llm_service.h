// LlmService: the llmserve.v1.LlmService gRPC service (callback API) over one Engine.
//
//   Generate:  validate + tokenize (request_convert.h) → Engine::Submit → a write reactor
//              that drains the request's RequestChannel with one write in flight:
//              channel notifier (engine thread) → post to the StreamPump thread →
//              (no write in flight) TryPop → StartWrite(chunk/final)
//              OnWriteDone → TryPop again ... final written → Finish(OK, or for a
//              stream cut short INTERNAL / DEADLINE_EXCEEDED / UNAVAILABLE: see the proto).
//              OnCancel (client cancelled, went away, or its deadline passed) →
//              Engine::Abort(id, cancelled/deadline); the blocks are freed at the next
//              step boundary.
//   Tokenize, Detokenize, GetModelInfo, GetServerInfo: unary reactors, answered inline.
// Generate and Tokenize are raw methods (they parse their own request, server/proto_wire.h)
// so that invalid UTF-8 in a string field is INVALID_ARGUMENT naming the field, not gRPC's
// bare UNIMPLEMENTED for a request that fails to deserialize. The wire API is unchanged.
// Errors are grpc::Status via ToGrpcStatus (status_convert.h); messages say what was wrong.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "llmserve/v1/llmserve.grpc.pb.h"
#include "model/dtype.h"
#include "model/chat/chat_prompt.h"
#include "model/model_config.h"
#include "model/tokenizer/tokenizer.h"
#include "scheduler/engine.h"
#include "server/metrics.h"
#include "server/request_convert.h"
#include "server/stream_pump.h"

namespace llmserve {

// What GetModelInfo / GetServerInfo report besides the engine's live figures.
struct ServiceInfo {
  std::string model_name;       // e.g. "stories260K"
  ModelConfig config;           // the loaded model's config
  int64_t num_parameters = 0;
  std::string weight_dtype = "f32";  // the linear layers' formats: "bf16", "Q4_K+Q6_K", "Q8_0", ...
  DType kv_dtype = DType::kF32;
  std::string version;          // llmserve version string
  const ChatPrompter* chat = nullptr;  // renders chat inputs (owned by ModelSetup); null: none
  std::string chat_template_source;    // where its template came from ("" : none)
  int64_t max_prompt_bytes = 0;        // bytes of text a request may carry before tokenizing (0 = no bound)
  absl::Time start_time = absl::Now();
};

// Thread-safe (gRPC threads). The engine, tokenizer and metrics (may be null; counts
// Generate calls refused at the door) must outlive the service.
// The generated service with every method raw: each parses its own request with
// ParseRequest, so that a malformed one gets INVALID_ARGUMENT with a message (gRPC's own
// parsing would answer UNIMPLEMENTED with none) and a string field holding invalid UTF-8
// is named.
using LlmServiceBase = llmserve::v1::LlmService::WithRawCallbackMethod_Generate<
    llmserve::v1::LlmService::WithRawCallbackMethod_Tokenize<llmserve::v1::LlmService::WithRawCallbackMethod_ApplyChatTemplate<
        llmserve::v1::LlmService::WithRawCallbackMethod_Detokenize<
            llmserve::v1::LlmService::WithRawCallbackMethod_GetModelInfo<
                llmserve::v1::LlmService::WithRawCallbackMethod_GetServerInfo<
                    llmserve::v1::LlmService::CallbackService>>>>>>;

class LlmService final : public LlmServiceBase {
 public:
  LlmService(Engine& engine, const Tokenizer& tokenizer, ServiceInfo info, Metrics* metrics = nullptr);
  ~LlmService() override;

  // Raw: the request is a serialized GenerateRequest, each response a GenerateResponse.
  grpc::ServerWriteReactor<grpc::ByteBuffer>* Generate(grpc::CallbackServerContext* ctx,
                                                       const grpc::ByteBuffer* request) override;
  // Unary, raw: TokenizeRequest in, TokenizeResponse out; and so on.
  grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ApplyChatTemplate(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                              grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Detokenize(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetModelInfo(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override;

  // What requests are checked against (the HTTP API shares it).
  const RequestLimits& limits() const { return limits_; }
  // Generate streams currently open (for draining: wait until 0).
  int64_t open_streams() const { return open_streams_.load(); }

 private:
  void FillModelInfo(llmserve::v1::ModelInfo* response) const;
  void FillServerInfo(llmserve::v1::ServerInfo* response) const;

  Engine& engine_;
  const Tokenizer& tokenizer_;
  const ServiceInfo info_;
  RequestLimits limits_;  // set by the constructor, then read-only
  Metrics* const metrics_;
  std::atomic<int64_t> open_streams_{0};
  std::atomic<int64_t> next_request_number_{1};
  // Writes the streams' messages (the engine thread only posts to it); stopped, after
  // the last stream, by the destructor.
  std::shared_ptr<StreamPump> pump_ = std::make_shared<StreamPump>();
};

}  // namespace llmserve
