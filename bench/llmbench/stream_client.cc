#include "bench/llmbench/stream_client.h"

#include <utility>

namespace llmbench {

namespace v1 = llmserve::v1;

StreamCall::StreamCall(int index, v1::LlmService::Stub* stub, const v1::GenerateRequest* request,
                       Clock::time_point epoch, double timeout_seconds, int expected_tokens, CallSink* sink)
    : index_(index), stub_(stub), request_(request), epoch_(epoch), sink_(sink) {
  if (timeout_seconds > 0) {
    ctx_.set_deadline(std::chrono::system_clock::now() +
                      std::chrono::duration_cast<std::chrono::system_clock::duration>(
                          std::chrono::duration<double>(timeout_seconds)));
  }
  result_.itl.reserve(static_cast<size_t>(expected_tokens > 0 ? expected_tokens : 0));
  result_.ids.reserve(static_cast<size_t>(expected_tokens > 0 ? expected_tokens : 0));
}

void StreamCall::Start() {
  stub_->async()->Generate(&ctx_, request_, this);
  StartRead(&message_);
  start_ = Clock::now();
  result_.started = true;
  result_.start = Since(start_);
  StartCall();
}

void StreamCall::OnReadDone(bool ok) {
  if (!ok) return;  // the stream ended; OnDone follows
  const Clock::time_point now = Clock::now();
  if (result_.has_final) result_.message_after_final = true;
  if (message_.has_chunk()) {
    ++result_.chunks;
    const int n = message_.chunk().ids_size();
    if (n > 0) {
      if (result_.tokens == 0) {
        result_.ttft = std::chrono::duration<double>(now - start_).count();
      } else {
        const double gap = std::chrono::duration<double>(now - last_token_).count() / n;
        for (int i = 0; i < n; ++i) result_.itl.push_back(gap);
      }
      last_token_ = now;
      result_.tokens += n;
      result_.ids.insert(result_.ids.end(), message_.chunk().ids().begin(), message_.chunk().ids().end());
      sink_->tokens_received.fetch_add(n, std::memory_order_relaxed);
    }
  } else if (message_.has_final()) {
    result_.has_final = true;
    result_.e2e = std::chrono::duration<double>(now - start_).count();
    result_.final_msg.Swap(message_.mutable_final());
  }
  StartRead(&message_);
}

void StreamCall::OnDone(const grpc::Status& status) {
  result_.end = Since(Clock::now());
  result_.code = status.error_code();
  if (!status.ok()) result_.error = status.error_message();
  CallSink* sink = sink_;
  const int index = index_;
  RequestResult result = std::move(result_);
  delete this;
  sink->OnCallDone(index, std::move(result));
}

}  // namespace llmbench
