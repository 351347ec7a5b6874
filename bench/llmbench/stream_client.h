// One Generate stream driven by gRPC's callback API (a ClientReadReactor): no thread per
// stream, the timestamps are taken in the read callbacks. What it measures:
//
//   start    just before StartCall
//   TTFT     start -> the first Chunk carrying >= 1 token id
//   ITL      for each later token-carrying Chunk: (its arrival - the previous token-carrying
//            Chunk's arrival) / (ids in it), recorded once per id, so every generated token
//            after the first chunk gets one sample (a chunk of 3 ids 30 ms after the
//            previous one gives three 10 ms samples)
//   e2e      start -> the Final message
//
// It also checks the protocol: one Final, nothing after it, ids received == the Final's
// usage.completion_tokens.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "llmserve/v1/llmserve.grpc.pb.h"

namespace llmbench {

using Clock = std::chrono::steady_clock;

// What one request saw. Times in seconds; start/end since the run's epoch.
struct RequestResult {
  bool started = false;
  grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
  std::string error;                     // the status message when not OK
  double start = 0;                      // since the epoch
  double end = 0;                        // OnDone, since the epoch
  double ttft = -1;                      // -1: no token arrived
  double e2e = -1;                       // -1: no Final arrived
  int tokens = 0;                        // ids received in chunks
  std::vector<int32_t> ids;              // those ids, in order (the next turn's prompt carries them)
  int chunks = 0;                        // Chunk messages
  std::vector<double> itl;               // per token after the first chunk
  bool has_final = false;
  bool message_after_final = false;
  llmserve::v1::Final final_msg;         // the Final (when has_final)
};

// Receives finished calls (from a gRPC callback thread; must not block for long).
class CallSink {
 public:
  virtual ~CallSink() = default;
  // Request `index` ended; `result` is complete.
  virtual void OnCallDone(int index, RequestResult result) = 0;
  // Token ids received so far by all calls (for progress). Thread-safe.
  std::atomic<int64_t> tokens_received{0};
};

// One call; deletes itself when done (after handing its result to the sink).
class StreamCall : public grpc::ClientReadReactor<llmserve::v1::GenerateResponse> {
 public:
  // `request` and `stub` must outlive the call; `timeout_seconds` 0 = no deadline.
  StreamCall(int index, llmserve::v1::LlmService::Stub* stub, const llmserve::v1::GenerateRequest* request,
             Clock::time_point epoch, double timeout_seconds, int expected_tokens, CallSink* sink);

  // The call's context, to add metadata before Start().
  grpc::ClientContext* context() { return &ctx_; }
  // Starts the call (once).
  void Start();

  // A message arrived (ok) or the stream ended (!ok); gRPC callback thread.
  void OnReadDone(bool ok) override;
  // The call is over: hands the result to the sink and deletes this.
  void OnDone(const grpc::Status& status) override;

 private:
  double Since(Clock::time_point t) const { return std::chrono::duration<double>(t - epoch_).count(); }

  const int index_;
  llmserve::v1::LlmService::Stub* const stub_;
  const llmserve::v1::GenerateRequest* const request_;
  const Clock::time_point epoch_;
  CallSink* const sink_;
  grpc::ClientContext ctx_;
  llmserve::v1::GenerateResponse message_;
  Clock::time_point start_, last_token_;
  RequestResult result_;
};

}  // namespace llmbench
