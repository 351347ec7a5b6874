// Runs the benchmark: starts the requests (closed loop: `concurrency` in flight, the next
// one as soon as one ends; open loop: at their Poisson arrival times, at most
// `concurrency` in flight when it is > 0), shows progress on stderr, polls GetServerInfo
// about once a second for the server's view, and waits for every stream to end.
// With options.turns > 1 the unit is a conversation: `concurrency` conversations in
// flight, each sending its turns one after another (turn t+1 starts when turn t ends OK,
// its prompt chained from turn t's prompt and output by ChainTurn); when a turn fails, the
// conversation's later turns are not sent and count as failed (ABORTED).
#pragma once

#include <vector>

#include "bench/llmbench/backend.h"
#include "bench/llmbench/options.h"
#include "bench/llmbench/stream_client.h"
#include "llmserve/v1/llmserve.grpc.pb.h"

namespace llmbench {

// The server's own view of the run (GetServerInfo before, during and after).
struct ServerView {
  bool have_before = false;
  bool have_after = false;
  llmserve::v1::ServerInfo before;  // just before the first request
  llmserve::v1::ServerInfo after;   // after the last stream ended
  int samples = 0;                  // answered polls during the run
  int peak_running = 0;             // max running_requests seen (polls, before, after)
  int peak_waiting = 0;             // max waiting_requests seen
  int peak_kv_blocks_used = 0;      // max kv_blocks_used seen
};

// Everything the run produced.
struct RunResult {
  std::vector<RequestResult> results;  // by request index (conversation * turns + turn)
  double duration_seconds = 0;         // first start -> last stream end
  ServerView server;
};

// Sends `requests` (BuildRequests' order: conversation * turns + turn) through `backend`
// (conversation c at arrivals[c] seconds after the start in open loop) and waits for all
// of them; polls the backend's server view while they run. Results are by request index.
RunResult RunRequests(const BenchOptions& options, Backend& backend, std::vector<llmserve::v1::GenerateRequest> requests,
                      const std::vector<double>& arrivals);

}  // namespace llmbench
