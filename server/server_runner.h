// RunServer: the llmserve process from a validated config to its exit code.
//
//   start:    bind the port (GrpcListener; no SO_REUSEPORT, so a busy port fails) → gRPC
//             server (ServiceGate, health, reflection) → health NOT_SERVING → accept
//             → load the model (calls meanwhile get UNAVAILABLE "model loading") → LlmService behind the gate, engine started
//             → health SERVING ("" and llmserve.v1.LlmService) → one summary log line
//   SIGTERM/SIGINT (first):
//     1. health NOT_SERVING (every service); for --drain-delay seconds (default 0) the
//        server still serves normally, so load balancers notice first (k8s preStop)
//     2. refuse at the transport, never with a gRPC status (which a proxy cannot retry):
//        GrpcListener::Close (the port closes: new connections are refused, so a proxy
//        such as nginx retries the call on another replica; connections already accepted
//        are still served), 0.5 s later grpc::Server::Shutdown(now + --drain-timeout + 5 s)
//        on its own thread (GOAWAY to clients that keep connections open: they reconnect,
//        are refused, see UNAVAILABLE); the calls in flight run on
//     3. wait up to --drain-timeout for the engine to go idle and every stream to close
//     4. past the timeout: Engine::Stop (the rest end with FINISH_REASON_CANCELLED and then
//        UNAVAILABLE), up to 5 s more for those finals to be written
//     5. Shutdown returns (it cancels whatever is still open at its deadline), Engine::Stop
//        → exit 0
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
