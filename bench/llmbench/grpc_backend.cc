#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/llmbench/backend.h"
#include "grpcpp/grpcpp.h"

namespace llmbench {
namespace {

namespace v1 = llmserve::v1;

class GrpcBackend final : public Backend {
 public:
  GrpcBackend(const BenchOptions& o, llmserve::client::Connection connection)
      : timeout_(o.timeout_seconds), connection_(std::move(connection)) {
    // Separate subchannel pools: each channel gets its own connection.
    for (int i = 0; i < o.channels; ++i) {
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      channels_.push_back(connection_.NewChannel(o.addr, args));
      stubs_.push_back(v1::LlmService::NewStub(channels_.back()));
    }
  }

  void Start(int index, const v1::GenerateRequest& request, Clock::time_point epoch, CallSink* sink) override {
    auto* call = new StreamCall(index, stubs_[static_cast<size_t>(index) % stubs_.size()].get(), &request, epoch,
                                timeout_, request.max_tokens(), sink);
    connection_.Authorize(call->context());
    call->Start();
  }

  bool PollServer(v1::ServerInfo* info) override {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    connection_.Authorize(&ctx);
    return stubs_[0]->GetServerInfo(&ctx, v1::GetServerInfoRequest(), info).ok();
  }

  std::optional<v1::ModelInfo> ModelInfo(std::string* error) override {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    connection_.Authorize(&ctx);
    v1::ModelInfo info;
    const grpc::Status st = stubs_[0]->GetModelInfo(&ctx, v1::GetModelInfoRequest(), &info);
    if (!st.ok()) {
      *error = absl::StrCat("code ", static_cast<int>(st.error_code()), ": ", st.error_message());
      return std::nullopt;
    }
    return info;
  }

 private:
  const double timeout_;
  const llmserve::client::Connection connection_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<v1::LlmService::Stub>> stubs_;
};

}  // namespace

std::unique_ptr<Backend> MakeGrpcBackend(const BenchOptions& options, llmserve::client::Connection connection) {
  return std::make_unique<GrpcBackend>(options, std::move(connection));
}

}  // namespace llmbench
