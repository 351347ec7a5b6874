// llmbench's configuration: what to send, how fast, and where the results go. Filled from
// the command line by main.cc; Validate() checks it before anything is sent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "client/connect_options.h"

namespace llmbench {

// How request lengths spread around --input-len / --output-len.
enum class LengthDist {
  kFixed,        // exactly N
  kUniform,      // uniform integers in [N*(1-r), N*(1+r)], r = range_ratio
  kExponential,  // exponential with mean N, rounded, clamped to [1, 10N]
};

// Parses "fixed" / "uniform" / "exponential".
std::optional<LengthDist> ParseLengthDist(const std::string& name);
// The name ParseLengthDist accepts.
const char* LengthDistName(LengthDist dist);

struct BenchOptions {
  std::string backend = "grpc";          // "grpc" (llmserve) or "openai" (/v1/completions)
  std::string addr = "127.0.0.1:50051";  // server HOST:PORT
  int channels = 1;                      // gRPC channels (separate connections), calls round-robin
  llmserve::client::ConnectOptions connect;  // gRPC and openai: TLS, client certificate, API key
  int requests = 32;                     // requests (with --turns > 1: conversations) to send in total
  int warmup_requests = 0;               // sent first, same workload and concurrency, not measured
  int concurrency = 8;                   // max streams (conversations) in flight; 0 = unlimited (open loop only)
  double rate = 0;                       // open loop: Poisson arrivals per second; 0 = closed loop
  int input_len = 128;                   // prompt tokens (random-token prompts)
  int output_len = 128;                  // max_tokens per request
  int shared_prefix_len = 0;             // random-token prompts: the same N ids open every prompt
  int turns = 1;                         // > 1: multi-turn chat, each turn's prompt extends the last (closed loop)
  std::string cache_salt;                // gRPC: GenerateRequest.cache_salt of every request
  bool llamacpp_cache_prompt = false;    // llamacpp, openai: send "cache_prompt": true (llama.cpp's prefix reuse)
  LengthDist len_dist = LengthDist::kFixed;
  double range_ratio = 0.5;              // uniform spread, in (0, 1)
  std::string prompts_file;              // one JSON string per line; empty = random token ids
  int token_offset = 3;                  // random ids drawn from [token_offset, vocab)
  int vocab = 0;                         // 0 = GetModelInfo's vocab_size
  bool ignore_eos = false;
  // Structured outputs: every request's output is constrained by one of these (gRPC:
  // GenerateRequest.constraint; openai: llama.cpp's "json_schema" / "grammar", vLLM's
  // structured_outputs.regex). Files are read when the requests are built.
  std::string json_schema_file;
  std::string regex;
  std::string grammar_file;
  int ban_first = -1, ban_last = -1;     // openai: ids [first, last] are banned (logit_bias); -1 = none
  std::optional<float> temperature = 0.0f;  // greedy unless given
  std::optional<int> top_k;
  std::optional<float> top_p;
  uint64_t seed = 0;                     // workload RNG; request i samples with seed + i
  double timeout_seconds = 0;            // per-request deadline; 0 = none
  std::string json_path;                 // write the report as JSON here
  std::string jsonl_path;                // append the report as one JSON line here
  std::string label;                     // free text copied into the report ("label")
  bool allow_failures = false;           // exit 0 even if requests failed or mismatched
  int progress = -1;                     // -1 auto (bar on a tty), 0 off, 1 plain lines
  double progress_interval = 10;         // seconds between plain progress lines

  // OK, or INVALID_ARGUMENT naming the first bad option (flag spelling).
  absl::Status Validate() const;
  // The --shared-prefix-len / --turns / --cache-salt part of Validate().
  absl::Status ValidatePrefixAndTurns() const;
  // Closed loop: a new request starts when one ends, `concurrency` in flight.
  bool closed_loop() const { return rate <= 0; }
};

}  // namespace llmbench
