// llmctl's subcommands: each runs one or two RPCs, prints the result, and returns the
// process exit code. Flags are parsed in main.cc; these take ready-made requests.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "client/connect_options.h"
#include "google/protobuf/message.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"
#include "llmserve/v1/llmserve.pb.h"
#include "tools/llmctl/interrupt.h"

namespace llmctl {

// Exit codes.
inline constexpr int kExitOk = 0;           // success (health: SERVING)
inline constexpr int kExitFailure = 1;      // non-OK status, NOT_SERVING, failed generation
inline constexpr int kExitUsage = 2;        // bad command line
inline constexpr int kExitInterrupted = 130;  // cancelled by Ctrl-C (128 + SIGINT)

// What every subcommand needs.
struct Client {
  std::shared_ptr<grpc::Channel> channel;
  llmserve::client::Connection connection;  // credentials and API key (the channel uses them)
  std::optional<absl::Duration> timeout;  // the call's deadline from its start; unset: none
  bool json = false;                      // print messages as JSON lines
  InterruptWatcher* interrupts = nullptr; // Ctrl-C cancels the call (generate)
};

// Streams the completion's text to stdout (or each message as a JSON line) and a summary
// (finish reason, usage, timings, seed) to stderr.
int RunGenerate(const Client& client, const llmserve::v1::GenerateRequest& request);
// What `llmctl chat` adds to the sampling flags.
struct ChatOptions {
  std::string system;        // a system message opening the conversation ("" : none)
  bool show_prompt = false;  // print each rendered prompt (ApplyChatTemplate) to stderr
  bool stats = true;         // print finish reason, tokens and speed after each reply
};

// An interactive chat on stdin/stdout: each line a user turn, each reply streamed and kept
// in the history sent with the next turn. `base` carries the sampling and stopping fields.
int RunChat(const Client& client, const llmserve::v1::GenerateRequest& base, const ChatOptions& options);
// Prints the ids on one line, or one "id<TAB>"piece"" line per token with `pieces`.
int RunTokenize(const Client& client, const llmserve::v1::TokenizeRequest& request, bool pieces);
// Prints the text and a newline.
int RunDetokenize(const Client& client, const llmserve::v1::DetokenizeRequest& request);
// GetModelInfo + GetServerInfo, human-readable (or one JSON object {"model", "server"}).
int RunInfo(const Client& client);
// grpc.health.v1.Health/Check for `service` ("" = the whole server); prints the status.
int RunHealth(const Client& client, const std::string& service);

// "INVALID_ARGUMENT" for grpc::StatusCode::INVALID_ARGUMENT, ...
std::string StatusCodeName(grpc::StatusCode code);
// Prints "llmctl: <CODE_NAME>: <message>" to stderr; returns kExitFailure.
int PrintStatus(const grpc::Status& status);
// One-line JSON with the proto's field names (int64 fields are strings, per proto3 JSON).
std::string ToJson(const google::protobuf::Message& message);
// Applies client.timeout to the call.
void PrepareCall(const Client& client, grpc::ClientContext* ctx);
// `s` quoted with C-style escapes for quotes, backslashes and control bytes; other bytes
// (UTF-8 included) as they are.
std::string Quote(const std::string& s);

}  // namespace llmctl
