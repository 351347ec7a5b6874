// ServerProcess: the real llmserve binary (LLMSERVE_BINARY) started on a free loopback port
// for integration tests, and small gRPC client helpers around it.
//
//   Launch(args)   fork/exec llmserve --host 127.0.0.1 --port P --metrics-port 0 args...  (stdout+stderr → a log file,
//                  so a chatty server never blocks on a full pipe)
//   Start(args)    Launch + wait (bounded) until grpc.health.v1 Check("") says SERVING; a port
//                  taken between choosing and binding ("cannot listen") is retried with another
//   Signal / WaitExit / Log; the destructor SIGKILLs a server still running and prints its log
//   when the test failed (LLMSERVE_TEST_KEEP_LOGS=1 keeps every log file in the temp directory).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client/connect_options.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "llmserve/v1/llmserve.grpc.pb.h"

namespace llmserve::testing {

// A port that was free on 127.0.0.1 a moment ago (bind to port 0, read it, close).
int PickFreePort();

// True once a TCP connection to 127.0.0.1:port succeeds.
bool PortAccepts(int port);

class ServerProcess {
 public:
  // Starts llmserve and waits until it is SERVING (up to `timeout`). nullptr (with the
  // reason in *error) if it exits or does not become SERVING in time.
  // `connection`: how channel() connects (TLS for a server started with --tls-cert); the
  // default is plaintext.
  static std::unique_ptr<ServerProcess> Start(const std::vector<std::string>& args, std::string* error,
                                              absl::Duration timeout = absl::Seconds(60),
                                              const llmserve::client::Connection* connection = nullptr);
  // Starts llmserve on `port` (0: a free one) without waiting for anything.
  static std::unique_ptr<ServerProcess> Launch(const std::vector<std::string>& args, int port = 0);

  ~ServerProcess();

  int port() const { return port_; }
  std::string address() const;
  pid_t pid() const { return pid_; }
  // A channel to the server (one per process object, created on first use).
  std::shared_ptr<grpc::Channel> channel();
  std::unique_ptr<llmserve::v1::LlmService::Stub> stub();

  // Health Check for `service` ("" = the server); UNKNOWN with !ok when the call fails.
  grpc::health::v1::HealthCheckResponse::ServingStatus Health(const std::string& service, grpc::Status* status = nullptr);
  // Polls Health("") until SERVING, the process exits, or `timeout`.
  bool WaitServing(absl::Duration timeout);

  void Signal(int sig);
  // True (and *exit_code) once the process has exited; never blocks.
  bool Exited(int* exit_code);
  // Waits up to `timeout` for the exit (then SIGKILL); the exit code, 128 + signal when
  // killed by one.
  int WaitExit(absl::Duration timeout);
  // Everything the server wrote so far.
  std::string Log() const;

 private:
  ServerProcess() = default;

  pid_t pid_ = -1;
  int port_ = 0;
  bool exited_ = false;
  int exit_code_ = -1;
  std::string log_path_;
  std::shared_ptr<grpc::Channel> channel_;
  llmserve::client::Connection connection_;  // null credentials: plaintext
};

// One Generate call read to its end.
struct StreamResult {
  grpc::Status status;
  std::vector<int32_t> ids;             // all chunk ids in order
  std::string text;                     // all chunk texts concatenated
  int chunks = 0;
  int logprobs = 0;                     // TokenLogprob entries seen
  bool has_final = false;
  llmserve::v1::Final final_msg;
  bool message_after_final = false;     // protocol violation
};

// Runs Generate to the end with an optional deadline (InfiniteDuration: none).
StreamResult Generate(llmserve::v1::LlmService::Stub& stub, const llmserve::v1::GenerateRequest& request,
                      absl::Duration deadline = absl::Seconds(120));

// GetServerInfo; a failed call gives a default message (and a gtest failure).
llmserve::v1::ServerInfo ServerInfo(llmserve::v1::LlmService::Stub& stub);

// Polls GetServerInfo until no KV block is in use and nothing runs or waits, up to
// `timeout`. True if reached.
bool WaitBlocksFree(llmserve::v1::LlmService::Stub& stub, absl::Duration timeout);

// A text prompt with greedy sampling and `max_tokens`.
llmserve::v1::GenerateRequest GreedyRequest(const std::string& text, int32_t max_tokens);

// llmserve flags for stories260K: the model and tokenizer paths, f32 weights (the golden
// outputs are f32), 2 threads.
std::vector<std::string> Stories260KArgs(const std::string& model, const std::string& tokenizer);

}  // namespace llmserve::testing
