// What llmbench sends: per-request prompt and output lengths, random-token or text
// prompts, Poisson arrival times, and the GenerateRequest messages built from them.
// Everything is drawn from one seeded RNG, so a seed gives the same workload every time.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/llmbench/options.h"
#include "llmserve/v1/llmserve.pb.h"

namespace llmbench {

// What the model allows (from GetModelInfo; 0 / -1 = unknown).
struct ModelLimits {
  int vocab = 0;           // token ids are < vocab
  int context_length = 0;  // prompt + output must fit
  int bos_id = -1;         // never drawn into a random prompt
  int eos_id = -1;         // never drawn into a random prompt
};

// `n` lengths around `mean` (>= 1) following `dist` (see LengthDist).
std::vector<int> SampleLengths(int n, int mean, LengthDist dist, double range_ratio, std::mt19937_64* rng);

// `len` ids uniform in [lo, vocab), skipping bos/eos (lo < vocab, and some id must remain).
std::vector<int32_t> RandomPrompt(int len, int lo, const ModelLimits& limits, std::mt19937_64* rng);

// Arrival offsets in seconds for `n` requests at `rate` per second (exponential gaps,
// the first at 0); all zeros when rate <= 0 (closed loop: start as slots free up).
std::vector<double> PoissonArrivals(int n, double rate, std::mt19937_64* rng);

// One JSON string per non-empty line (llmrun's --prompts-file format).
absl::StatusOr<std::vector<std::string>> ReadPromptsFile(const std::string& path);

// OK when the workload fits limits.context_length (unknown = always): with --turns > 1 a
// whole conversation, shared prefix + turns x (input + output), must fit (the last turn's
// prompt holds all earlier turns); with one turn the shared prefix must leave room for one
// own prompt token and one generated token (the rest is clamped by BuildRequests).
// INVALID_ARGUMENT naming the flags to lower otherwise.
absl::Status CheckContext(const BenchOptions& options, const ModelLimits& limits);

// The requests to send, options.requests x options.turns of them, request index =
// conversation * turns + turn. Random-token prompts when `prompts` is empty (needs
// limits.vocab > options.token_offset), else prompt i % prompts.size() as text. A random
// prompt is the shared prefix (options.shared_prefix_len ids drawn once, the same for all
// requests) then the request's own input-length ids. Turn 0 of a conversation is complete;
// a later turn holds only its own new ("user") ids until ChainTurn prepends the previous
// turn's prompt and output. Single-turn lengths are clamped so that prompt + output fit
// limits.context_length when it is known (text prompts: the output alone); multi-turn
// workloads must pass CheckContext (else its error). Request ids are "llmbench-<i>" (one
// turn) or "llmbench-<conversation>-<turn>"; sampling seed options.seed + index.
absl::StatusOr<std::vector<llmserve::v1::GenerateRequest>> BuildRequests(const BenchOptions& options,
                                                                         const ModelLimits& limits,
                                                                         const std::vector<std::string>& prompts,
                                                                         std::mt19937_64* rng);

// Makes `next` (a later turn from BuildRequests, holding only its own ids) the next turn of
// `prev`'s conversation: its prompt becomes prev's prompt, then `generated` (the ids prev's
// stream returned), then its own ids.
void ChainTurn(const llmserve::v1::GenerateRequest& prev, const std::vector<int32_t>& generated,
               llmserve::v1::GenerateRequest* next);

}  // namespace llmbench
