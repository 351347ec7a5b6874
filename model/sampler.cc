// RequestSampler: penalties, greedy / temperature / top-k / top-p / min-p, one draw per
// token from the request's own std::mt19937_64, and raw-logit logprobs.
//
// Determinism: the result depends only on the logits, the ids shown and the seed. The
// exponential is our own polynomial (FastExp, plain float arithmetic, no libm), sums are
// taken in double in a fixed order, and every ordering is total ((prob desc, id asc)), so
// the same inputs give the same token on any IEEE-754 platform and standard library.
//
// Cost per call, vocab V: a vectorized max, and for sampling a vectorized exp pass; then
//   no top-k:  top-p histograms the probabilities by binary exponent and sorts only the
//              members of the one bucket where the nucleus ends; top-p and min-p then
//              zero the dense array in one vectorized pass that also sums 64-entry
//              blocks; the draw walks the block sums, then one block (in id order);
//   top-k:     a bounded heap that skips whole blocks unable to beat its worst entry
//              (k <= 256) or nth_element selects k candidates, sorted by (prob desc,
//              id asc) and truncated as a prefix; the draw walks that order.
// The row passes (model/sampler_rows.h) give bit-identical results on every x86 vector
// width and without vectors.
#include "model/sampler.h"

#include <algorithm>
#include <cmath>

#include "model/sampler_rows.h"

namespace llmserve {
namespace {

using sampler_rows::Bits;
using sampler_rows::Bucket;
using sampler_rows::ExpRow;
using sampler_rows::kBlock;
using sampler_rows::kBuckets;
using sampler_rows::kNegInf;
using sampler_rows::MaxIgnoringNan;
using sampler_rows::SumDouble;
using sampler_rows::TruncateRow;

constexpr size_t kHeapTopK = 256;  // top_k up to this uses a heap, beyond nth_element

// Total order on (value desc, id asc); as a heap comparator, the front is the worst.
constexpr auto kBetter = [](const auto& a, const auto& b) {
  return a.v > b.v || (a.v == b.v && a.id < b.id);
};

// The k best (value, id) of x by (value desc, id asc), finite values only, in heap order
// (front = worst kept). Blocks whose max cannot beat the front are skipped whole (one
// vectorized max per 64 entries), so the scan is mostly vector work.
template <typename C>
void SelectTop(std::span<const float> x, size_t k, std::vector<C>* out) {
  out->clear();
  if (k == 0) return;
  for (size_t begin = 0; begin < x.size(); begin += kBlock) {
    const size_t end = std::min(x.size(), begin + kBlock);
    if (out->size() == k && !(MaxIgnoringNan(x.subspan(begin, end - begin)) > out->front().v)) {
      continue;
    }
    for (size_t i = begin; i < end; ++i) {
      const float v = x[i];
      if (!(v > kNegInf)) continue;  // -inf and NaN have no probability
      if (out->size() < k) {
        out->push_back({v, static_cast<int32_t>(i)});
        std::push_heap(out->begin(), out->end(), kBetter);
      } else if (v > out->front().v) {  // ids ascend: a tie never beats the front
        std::pop_heap(out->begin(), out->end(), kBetter);
        out->back() = {v, static_cast<int32_t>(i)};
        std::push_heap(out->begin(), out->end(), kBetter);
      }
    }
  }
}

// Lowest id among the largest logits (NaN never wins unless nothing else exists: id 0).
int32_t Argmax(std::span<const float> logits) {
  const float m = MaxIgnoringNan(logits);
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] == m) return static_cast<int32_t>(i);
  }
  return 0;
}

}  // namespace

RequestSampler::RequestSampler(const SamplingParams& params, uint64_t seed)
    : params_(params), seed_(seed), rng_(seed) {
  penalties_ = params_.repetition_penalty != 1.0f || params_.presence_penalty != 0.0f ||
               params_.frequency_penalty != 0.0f;
}

SampledToken RequestSampler::Sample(std::span<float> logits, std::span<const int32_t> prompt,
                                    std::span<const int32_t> generated) {
  SampledToken out;
  if (logits.empty()) return out;
  if (params_.want_logprobs) raw_.assign(logits.begin(), logits.end());
  for (const auto& [id, bias] : params_.logit_bias) {
    if (static_cast<size_t>(id) < logits.size()) logits[static_cast<size_t>(id)] += bias;
  }
  if (penalties_) {
    SyncCounts(prompt, generated, logits.size());
    ApplyPenalties(logits);
  }
  if (params_.greedy()) {
    out.id = Argmax(logits);
  } else {
    // Exactly one 64-bit draw per sampled token; u uniform in [0, 1) with 53 bits.
    const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
    const size_t k = static_cast<size_t>(params_.top_k);
    out.id = (k > 0 && k < logits.size()) ? DrawTopK(logits, k, u) : DrawDense(logits, u);
  }
  if (params_.want_logprobs) FillLogprobs(out.id, &out);
  return out;
}

void RequestSampler::SyncCounts(std::span<const int32_t> prompt,
                                std::span<const int32_t> generated, size_t vocab) {
  if (generated_counts_.size() != vocab) {
    generated_counts_.assign(vocab, 0);
    in_prompt_.assign(vocab, 0);
    touched_.clear();
    counts_valid_ = false;
  }
  const bool same_prompt = std::equal(prompt.begin(), prompt.end(), prompt_copy_.begin(),
                                      prompt_copy_.end());
  const bool prefix_ok =
      generated.size() >= counted_.size() &&
      std::equal(counted_.begin(), counted_.end(), generated.begin());
  if (!counts_valid_ || !same_prompt || !prefix_ok) {
    for (int32_t id : touched_) {
      generated_counts_[id] = 0;
      in_prompt_[id] = 0;
    }
    touched_.clear();
    counted_.clear();
    prompt_copy_.assign(prompt.begin(), prompt.end());
    for (int32_t id : prompt) {
      if (id < 0 || static_cast<size_t>(id) >= vocab || in_prompt_[id]) continue;
      in_prompt_[id] = 1;
      touched_.push_back(id);
    }
    counts_valid_ = true;
  }
  for (size_t i = counted_.size(); i < generated.size(); ++i) {
    const int32_t id = generated[i];
    counted_.push_back(id);
    if (id < 0 || static_cast<size_t>(id) >= vocab) continue;
    if (!in_prompt_[id] && generated_counts_[id] == 0) touched_.push_back(id);
    ++generated_counts_[id];
  }
}

void RequestSampler::ApplyPenalties(std::span<float> logits) const {
  sampler_rows::ApplyPenalties(logits.data(), touched_, generated_counts_.data(),
                               params_.repetition_penalty, params_.frequency_penalty,
                               params_.presence_penalty);
}

int32_t RequestSampler::DrawDense(std::span<const float> logits, double u) {
  const size_t n = logits.size();
  const float m = MaxIgnoringNan(logits);
  if (!(m > kNegInf)) return Argmax(logits);  // nothing finite to sample from
  probs_.resize(n);
  float* p = probs_.data();
  ExpRow(logits.data(), m, params_.temperature, p, n);  // the max → exactly 1

  // Truncation as a rule on (bits of p, id); the defaults keep everything.
  KeepRule rule;
  if (params_.top_p < 1.0f) rule = NucleusCut(p, n);
  if (params_.min_p > 0.0f) rule.min_bits = Bits(params_.min_p);  // × p_max, which is 1

  // Renormalize implicitly: walk block sums to u · Z, then within one block.
  const size_t blocks = (n + kBlock - 1) / kBlock;
  block_sums_.resize(blocks);
  TruncateRow(p, n, rule.cut_bits, rule.cut_id, rule.min_bits, block_sums_.data());
  double z = 0.0;
  for (double b : block_sums_) z += b;
  const double target = u * z;
  double cum = 0.0;
  for (size_t b = 0; b < blocks; ++b) {
    if (block_sums_[b] == 0.0) continue;
    if (cum + block_sums_[b] > target) {
      const size_t begin = b * kBlock, end = std::min(n, begin + kBlock);
      int32_t last_nonzero = -1;
      for (size_t i = begin; i < end; ++i) {
        if (p[i] == 0.0f) continue;
        cum += p[i];
        last_nonzero = static_cast<int32_t>(i);
        if (cum > target) break;
      }
      return last_nonzero;  // (or the block's last: its own sum fell short by rounding)
    }
    cum += block_sums_[b];
  }
  // Rounding put u · Z at the very end: the last token with probability.
  for (size_t i = n; i-- > 0;) {
    if (p[i] != 0.0f) return static_cast<int32_t>(i);
  }
  return Argmax(logits);
}

RequestSampler::KeepRule RequestSampler::NucleusCut(const float* p, size_t n) {
  // Mass per exponent bucket (8 interleaved histograms break the store dependency), and
  // per 64-entry block a mask of the buckets present.
  double hist[8][kBuckets] = {};
  const size_t blocks = (n + kBlock - 1) / kBlock;
  block_masks_.resize(blocks);
  for (size_t blk = 0; blk < blocks; ++blk) {
    const size_t begin = blk * kBlock, end = std::min(n, begin + kBlock);
    uint64_t mask = 0;
    for (size_t i = begin; i < end; ++i) {
      const int b = Bucket(p[i]);
      hist[i & 7][b] += p[i];
      mask |= uint64_t{1} << b;
    }
    block_masks_[blk] = mask;
  }
  double mass[kBuckets];
  double z = 0.0;
  for (int b = 0; b < kBuckets; ++b) {
    mass[b] = ((hist[0][b] + hist[1][b]) + (hist[2][b] + hist[3][b])) +
              ((hist[4][b] + hist[5][b]) + (hist[6][b] + hist[7][b]));
    z += mass[b];
  }
  const double target = static_cast<double>(params_.top_p) * z;
  double below = 0.0;  // mass of the buckets wholly inside the nucleus
  int cut_bucket = kBuckets - 1;
  for (int b = 0; b < kBuckets; ++b) {
    if (below + mass[b] >= target) {
      cut_bucket = b;
      break;
    }
    below += mass[b];
  }
  if (cut_bucket == kBuckets - 1) return {};  // the cut is among zeros and denormals: keep all

  // Sort only the bucket where the nucleus ends, visiting only blocks that hold it.
  if (cut_cand_.size() < n) cut_cand_.resize(n);
  size_t count = 0;
  for (size_t blk = 0; blk < blocks; ++blk) {
    if (!((block_masks_[blk] >> cut_bucket) & 1)) continue;
    const size_t begin = blk * kBlock, end = std::min(n, begin + kBlock);
    for (size_t i = begin; i < end; ++i) {  // branch-free compaction
      cut_cand_[count] = {p[i], static_cast<int32_t>(i)};
      count += static_cast<size_t>(Bucket(p[i]) == cut_bucket);
    }
  }
  const auto members = std::span(cut_cand_).first(count);
  std::sort(members.begin(), members.end(), kBetter);
  Candidate last = members.back();
  double cum = below;
  for (const Candidate& c : members) {
    cum += c.v;
    if (cum >= target) {
      last = c;
      break;
    }
  }
  KeepRule rule;
  rule.cut_bits = Bits(last.v);
  rule.cut_id = last.id;
  return rule;
}

int32_t RequestSampler::DrawTopK(std::span<const float> logits, size_t k, double u) {
  const size_t n = logits.size();
  if (k <= kHeapTopK) {
    SelectTop(logits, k, &cand_);
  } else {
    cand_.clear();
    for (size_t i = 0; i < n; ++i) {
      if (logits[i] > kNegInf) cand_.push_back({logits[i], static_cast<int32_t>(i)});
    }
    if (cand_.size() > k) {
      std::nth_element(cand_.begin(), cand_.begin() + k - 1, cand_.end(), kBetter);
      cand_.resize(k);
    }
  }
  if (cand_.empty()) return Argmax(logits);
  // Softmax numerators through the exact row kernel (the max → exactly 1).
  probs_.resize(cand_.size());
  for (size_t j = 0; j < cand_.size(); ++j) probs_[j] = cand_[j].v;
  const float m = MaxIgnoringNan(probs_);
  ExpRow(probs_.data(), m, params_.temperature, probs_.data(), cand_.size());
  for (size_t j = 0; j < cand_.size(); ++j) cand_[j].v = probs_[j];
  std::sort(cand_.begin(), cand_.end(), kBetter);

  size_t keep = cand_.size();
  if (params_.top_p < 1.0f) {
    double z = 0.0;
    for (const Candidate& c : cand_) z += c.v;
    const double target = static_cast<double>(params_.top_p) * z;
    double cum = 0.0;
    for (size_t j = 0; j < cand_.size(); ++j) {
      cum += cand_[j].v;
      if (cum >= target) {
        keep = j + 1;
        break;
      }
    }
  }
  if (params_.min_p > 0.0f) {
    size_t j = 1;  // the max (probability 1) always stays
    while (j < keep && cand_[j].v >= params_.min_p) ++j;
    keep = j;
  }
  double z = 0.0;
  for (size_t j = 0; j < keep; ++j) z += cand_[j].v;
  const double target = u * z;
  double cum = 0.0;
  for (size_t j = 0; j < keep; ++j) {
    cum += cand_[j].v;
    if (cum > target) return cand_[j].id;
  }
  return cand_[keep - 1].id;
}

void RequestSampler::FillLogprobs(int32_t id, SampledToken* out) {
  const size_t n = raw_.size();
  const float m = MaxIgnoringNan(raw_);
  probs_.resize(n);
  ExpRow(raw_.data(), m, 1.0f, probs_.data(), n);
  const double lse = static_cast<double>(m) + std::log(SumDouble(probs_.data(), n));
  out->logprob = static_cast<float>(static_cast<double>(raw_[id]) - lse);
  const size_t top_n = static_cast<size_t>(params_.logprobs);
  if (top_n == 0) return;
  SelectTop(std::span<const float>(raw_), top_n, &cand_);
  std::sort(cand_.begin(), cand_.end(), kBetter);
  out->top.reserve(cand_.size());
  for (const Candidate& c : cand_) {
    out->top.emplace_back(c.id, static_cast<float>(static_cast<double>(c.v) - lse));
  }
}

}  // namespace llmserve
