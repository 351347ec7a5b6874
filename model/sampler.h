// RequestSampler: one request's token selection (SamplingParams applied to a row of
// logits) with its own random generator, so a request's output does not depend on what
// it is batched with: the n-th draw of a request with seed s is the same in every run.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "model/sampling_params.h"

namespace llmserve {

// The chosen token and, when asked, its logprob and the top-n alternatives.
struct SampledToken {
  int32_t id = -1;
  float logprob = 0.0f;                             // log-softmax of raw logits; 0 unless wanted
  std::vector<std::pair<int32_t, float>> top;       // (id, logprob) descending, ties by id
};

// One per request; Engine thread only. Keeps incremental per-token counts of the ids it
// has been shown, so each Sample costs O(vocab) plus O(new ids).
class RequestSampler {
 public:
  // `params` must be valid; `seed` seeds the generator (std::mt19937_64).
  RequestSampler(const SamplingParams& params, uint64_t seed);

  // Chooses the next token from `logits` (one row, vocab entries; modified in place as
  // scratch). `prompt` and `generated` are the request's ids so far (generated grows by
  // one between calls, and may be re-shown unchanged after a preemption).
  SampledToken Sample(std::span<float> logits, std::span<const int32_t> prompt,
                      std::span<const int32_t> generated);

  const SamplingParams& params() const { return params_; }
  uint64_t seed() const { return seed_; }

 private:
  // A (value, id) pair: a logit while selecting, a probability after the softmax.
  struct Candidate {
    float v;
    int32_t id;
  };
  // Which probabilities survive truncation in the dense path: p (as bits, which order
  // like the values for p >= 0) beyond the top-p cut, and at least min-p.
  struct KeepRule {
    int32_t cut_bits = -1;  // keep bits > cut_bits, or == with id <= cut_id
    int32_t cut_id = 0;
    int32_t min_bits = 0;   // and bits >= min_bits
  };

  // Brings the per-id counts in line with `prompt` and `generated` (incremental when
  // `generated` only grew; rebuilt when it shrank or the prompt changed).
  void SyncCounts(std::span<const int32_t> prompt, std::span<const int32_t> generated,
                  size_t vocab);
  // Applies repetition / frequency / presence penalties to the counted ids, in place.
  void ApplyPenalties(std::span<float> logits) const;
  // Temperature + truncation + one draw, over all tokens (no top-k).
  int32_t DrawDense(std::span<const float> logits, double u);
  // The top-p cut over the dense probabilities p[0..n) (max 1).
  KeepRule NucleusCut(const float* p, size_t n);
  // Temperature + truncation + one draw, over the top_k best logits.
  int32_t DrawTopK(std::span<const float> logits, size_t k, double u);
  // Fills `out` from raw_ (log-softmax of the raw logits) for the chosen id.
  void FillLogprobs(int32_t id, SampledToken* out);

  SamplingParams params_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  bool penalties_ = false;                 // any penalty differs from "off"
  // Penalty bookkeeping: counts of the ids shown so far, kept incrementally.
  std::vector<int32_t> generated_counts_;  // per id, occurrences in generated
  std::vector<uint8_t> in_prompt_;         // per id, 1 if in prompt
  std::vector<int32_t> touched_;           // distinct ids in prompt ∪ generated
  std::vector<int32_t> prompt_copy_;       // the prompt the counts reflect
  std::vector<int32_t> counted_;           // the generated ids counted so far
  bool counts_valid_ = false;
  // Per-call scratch, reused so that Sample does not allocate in steady state.
  std::vector<float> probs_;               // dense unnormalized probabilities
  std::vector<double> block_sums_;         // sums of 64-entry blocks of probs_
  std::vector<uint64_t> block_masks_;      // top-p: exponent buckets present per block
  std::vector<Candidate> cand_;            // truncation candidates
  std::vector<Candidate> cut_cand_;        // top-p: members of the cut bucket (size >= vocab)
  std::vector<float> raw_;                 // raw logits (only when logprobs are wanted)
};

}  // namespace llmserve
