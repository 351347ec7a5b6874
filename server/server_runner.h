// RunServer: the llmserve process from a validated config to its exit code.
//
//   start:    gRPC server (ServiceGate, health, reflection; SO_REUSEPORT off, so a busy
//             port fails) → health NOT_SERVING → load the model (calls meanwhile get
//             UNAVAILABLE "model loading") → LlmService behind the gate, engine started
//             → health SERVING ("" and llmserve.v1.LlmService) → one summary log line
//   SIGTERM/SIGINT (first):
//     1. Engine::BeginDrain: new Generate calls get UNAVAILABLE
//     2. health NOT_SERVING (every service; after 1, so a client that sees it is refused)
//     3. wait up to --drain-timeout for the engine to go idle and every stream to close
//     4. past the timeout: Engine::Stop (the rest end with FINISH_REASON_CANCELLED and then
//        UNAVAILABLE), up to 5 s more for those finals to be written
//     5. grpc::Server::Shutdown (cancels whatever is still open), Engine::Stop → exit 0
//   a second signal exits at once (SignalWatcher).
// Exit codes: 0 after a signal-driven shutdown; 1 when the port cannot be bound or the
// model cannot be loaded (the reason logged to stderr).
#pragma once

#include "server/server_config.h"
#include "server/signals.h"

namespace llmserve {

// `config` must be valid. Call grpc::reflection::InitProtoReflectionServerBuilderPlugin()
// first for reflection (the plugin library is linked into the binary only).
int RunServer(const ServerConfig& config, SignalWatcher& signals);

}  // namespace llmserve
