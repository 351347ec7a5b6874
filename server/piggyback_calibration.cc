// MeasurePiggyback: a few forward passes at start-up (design in piggyback_calibration.h).
#include "server/piggyback_calibration.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "model/runtime_config.h"

namespace llmserve {
namespace {

constexpr int32_t kContext = 64;  // cached tokens of each timed decode sequence; prefill length
// Timed steps of each kind (after a warm-up), alternating. Three were too few on a noisy
// machine: a 12-row step once timed faster than the 8-row one and turned piggybacking on
// where it loses (quantized weights, whose steps cost in proportion to their rows).
constexpr int kReps = 7;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Scratch batches over the cache's first blocks.
class Batches {
 public:
  Batches(int32_t max_rows, int32_t block_size, int32_t vocab) : vocab_(vocab) {
    const int32_t per_seq = (kContext + 1 + block_size - 1) / block_size;
    tables_.resize(static_cast<size_t>(max_rows));
    for (int32_t s = 0; s < max_rows; ++s) {
      for (int32_t b = 0; b < per_seq; ++b) tables_[static_cast<size_t>(s)].push_back(s * per_seq + b);
    }
  }
  static int32_t BlocksNeeded(int32_t max_rows, int32_t block_size) {
    return max_rows * ((kContext + 1 + block_size - 1) / block_size);
  }

  // `rows` sequences, one decode token each at position kContext.
  ForwardBatch Decode(int32_t rows) {
    Reset(rows);
    for (int32_t s = 0; s < rows; ++s) {
      seqs_.push_back({s, 1, kContext, tables_[static_cast<size_t>(s)]});
      logit_rows_.push_back(s);
    }
    return Make();
  }
  // One sequence's kContext-token prompt from position 0.
  ForwardBatch Prefill() {
    Reset(kContext);
    seqs_.push_back({0, kContext, 0, tables_[0]});
    logit_rows_.push_back(kContext - 1);
    return Make();
  }
  float* logits(size_t rows) {
    logits_.resize(rows * static_cast<size_t>(vocab_));
    return logits_.data();
  }

 private:
  void Reset(int32_t rows) {
    tokens_.resize(static_cast<size_t>(rows));
    for (int32_t i = 0; i < rows; ++i) tokens_[static_cast<size_t>(i)] = (i + 1) % vocab_;
    seqs_.clear();
    logit_rows_.clear();
  }
  ForwardBatch Make() const { return ForwardBatch{tokens_, seqs_, logit_rows_}; }

  const int32_t vocab_;
  std::vector<std::vector<int32_t>> tables_;
  std::vector<int32_t> tokens_;
  std::vector<ForwardBatch::Seq> seqs_;
  std::vector<int32_t> logit_rows_;
  std::vector<float> logits_;
};

absl::StatusOr<double> Time(Transformer& model, KvCache& cache, const ForwardBatch& batch, float* logits) {
  const auto t0 = std::chrono::steady_clock::now();
  if (absl::Status s = model.Forward(batch, cache, logits); !s.ok()) return s;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

double PiggybackTimings::Gain() const {
  if (filled_rows <= decode_rows || decode_rows < 1 || filled_s <= 0) return 0;
  const double half = filled_rows / 2.0;
  return (half / decode_rows * decode_s + half * prefill_token_s) / filled_s;
}

bool PiggybackTimings::Pays() const { return Gain() >= kPiggybackPays; }

std::string PiggybackTimings::Describe() const {
  return absl::StrFormat(
      "decode step %d rows %.2f ms, %d rows %.2f ms; bulk prefill %.3f ms a token; lockstep %.2fx the "
      "piggybacked cost: %s",
      decode_rows, decode_s * 1e3, filled_rows, filled_s * 1e3, prefill_token_s * 1e3, Gain(),
      Pays() ? "piggybacking pays" : "piggybacking does not pay");
}

static absl::StatusOr<PiggybackTimings> MeasureOnThisThread(Transformer& model, KvCache& cache, int32_t decode_rows,
                                                     int32_t filled_rows, int threads) {
  const KvCacheConfig& kv = cache.config();
  const auto block_size = static_cast<int32_t>(kv.block_size);
  const int32_t max_rows = std::max(decode_rows, filled_rows);
  if (decode_rows < 1 || block_size < 1) return absl::InvalidArgumentError("MeasurePiggyback: bad row counts");
  if (model.config().context_length < kContext + 1 ||
      kv.num_blocks < static_cast<int64_t>(Batches::BlocksNeeded(max_rows, block_size))) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "piggyback calibration needs %d KV blocks and a context of %d tokens",
        Batches::BlocksNeeded(max_rows, block_size), kContext + 1));
  }
  ApplyThreadCount(threads);
  Batches b(max_rows, block_size, static_cast<int32_t>(model.config().vocab_size));
  PiggybackTimings t;
  t.decode_rows = decode_rows;
  t.filled_rows = filled_rows;
  std::vector<double> decode, filled, prefill;
  for (int rep = 0; rep <= kReps; ++rep) {  // rep 0 warms up (oneDNN primitives, pages)
    auto p = Time(model, cache, b.Prefill(), b.logits(1));
    if (!p.ok()) return p.status();
    auto d = Time(model, cache, b.Decode(decode_rows), b.logits(static_cast<size_t>(decode_rows)));
    if (!d.ok()) return d.status();
    auto f = Time(model, cache, b.Decode(filled_rows), b.logits(static_cast<size_t>(filled_rows)));
    if (!f.ok()) return f.status();
    if (rep == 0) continue;
    prefill.push_back(*p / kContext);
    decode.push_back(*d);
    filled.push_back(*f);
  }
  t.decode_s = Median(decode);
  t.filled_s = Median(filled);
  t.prefill_token_s = Median(prefill);
  return t;
}

absl::StatusOr<PiggybackTimings> MeasurePiggyback(Transformer& model, KvCache& cache, int32_t decode_rows,
                                                  int32_t filled_rows, int threads) {
  // On a thread of its own: the OpenMP team its forward passes start dies with it. A
  // team left on the caller's thread would keep libgomp managing more threads than there
  // are CPUs once the engine thread starts its own, and libgomp then cuts its spin-wait to
  // a few iterations, so every barrier in every later step sleeps and wakes through the
  // kernel: +2.5 ms a step on a 125M model (9.6 -> 12.2 ms at 8 rows), +5 on a 1B one.
  absl::StatusOr<PiggybackTimings> out = absl::UnknownError("not measured");
  std::thread([&] { out = MeasureOnThisThread(model, cache, decode_rows, filled_rows, threads); }).join();
  return out;
}

}  // namespace llmserve
