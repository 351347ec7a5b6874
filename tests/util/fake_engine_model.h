// FakeEngineModel: a deterministic stand-in for the transformer, for engine tests that
// must be fast and clean under ThreadSanitizer (no OpenMP, no oneDNN).
//
// Its "KV cache" is a table of (block, slot) → {position, token, prefix hash}. A row at
// position p of a sequence reads slot p-1 through the block table, chains the hash
//     h_p = Mix(h_{p-1}, token_p, p)
// and writes {p, token_p, h_p} into slot p. Logits are a fixed function of h_p, so a
// sequence's output depends on every token before it *as read back from the cache*:
// a wrong block table, a block handed to two sequences, or a recompute that skips a
// position changes the output (caught by batched == alone comparisons), and the
// checks below record it directly as an error:
//   - the batch tiles its rows, ids are in the vocabulary, logit rows in range;
//   - every block table covers its positions, ids are in range, and no block appears
//     in two sequences of one batch;
//   - slot p-1 holds position p-1, and (verify_full) slots 0..p-1 hold positions
//     0..p-1 whose tokens re-chain to the stored hash.
// The test keeps a shared FakeModelState to read errors, make Forward fail on demand,
// or hold Forward at a gate.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "model/greedy_runner.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/tokenizer_spec.h"
#include "scheduler/engine_model.h"

namespace llmserve::testing {

struct FakeModelOptions {
  int32_t vocab = 64;
  int32_t max_context = 256;
  int32_t num_blocks = 64;
  int32_t block_size = 4;
  absl::Duration forward_delay = absl::ZeroDuration();  // slept in every Forward
  bool verify_full = true;  // re-chain every cached prefix (O(position) per row)
};

// Shared between the test thread and the model (owned by the engine thread).
class FakeModelState {
 public:
  // The next `n` Forward calls return INTERNAL("injected failure").
  void FailNext(int n) { fail_next_.store(n); }
  int64_t forwards() const { return forwards_.load(); }

  // Forward blocks at its start until Resume().
  void Pause() {
    std::lock_guard<std::mutex> l(gate_mu_);
    paused_ = true;
  }
  // Forward call number `k` (0-based, counting every call so far) and later ones block
  // at their start until Resume().
  void PauseAtCall(int64_t k) {
    std::lock_guard<std::mutex> l(gate_mu_);
    pause_at_ = k;
  }
  void Resume() {
    {
      std::lock_guard<std::mutex> l(gate_mu_);
      paused_ = false;
      pause_at_ = -1;
    }
    gate_cv_.notify_all();
  }
  // Waits until a Forward call is blocked at the gate; false on timeout.
  bool WaitBlocked(absl::Duration timeout) {
    std::unique_lock<std::mutex> l(gate_mu_);
    return gate_cv_.wait_for(l, absl::ToChronoNanoseconds(timeout), [&] { return blocked_ > 0; });
  }

  std::vector<std::string> errors() const {
    std::lock_guard<std::mutex> l(mu_);
    return errors_;
  }
  // Rows per Forward call, in order.
  std::vector<int32_t> batch_rows() const {
    std::lock_guard<std::mutex> l(mu_);
    return batch_rows_;
  }

  // Model side.
  void Gate() {
    std::unique_lock<std::mutex> l(gate_mu_);
    const int64_t call = calls_++;
    const auto held = [&] { return paused_ || (pause_at_ >= 0 && call >= pause_at_); };
    if (!held()) return;
    ++blocked_;
    gate_cv_.notify_all();
    gate_cv_.wait(l, [&] { return !held(); });
    --blocked_;
  }
  bool TakeFailure() {
    int n = fail_next_.load();
    while (n > 0) {
      if (fail_next_.compare_exchange_weak(n, n - 1)) return true;
    }
    return false;
  }
  void AddError(std::string e) {
    std::lock_guard<std::mutex> l(mu_);
    if (errors_.size() < 50) errors_.push_back(std::move(e));
  }
  void RecordBatch(int32_t rows) {
    forwards_.fetch_add(1);
    std::lock_guard<std::mutex> l(mu_);
    batch_rows_.push_back(rows);
  }

 private:
  std::atomic<int> fail_next_{0};
  std::atomic<int64_t> forwards_{0};
  mutable std::mutex mu_;
  std::vector<std::string> errors_;
  std::vector<int32_t> batch_rows_;
  std::mutex gate_mu_;
  std::condition_variable gate_cv_;
  bool paused_ = false;
  int64_t pause_at_ = -1;
  int64_t calls_ = 0;
  int blocked_ = 0;
};

// splitmix64 finalizer.
inline uint64_t FakeMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The prefix hash after `token` at `pos`, given the hash before it.
inline uint64_t FakeChain(uint64_t prev, int32_t token, int32_t pos) {
  return FakeMix(prev ^ FakeMix((static_cast<uint64_t>(static_cast<uint32_t>(token)) << 32) |
                                static_cast<uint32_t>(pos)));
}

// The logits the fake produces for prefix hash `h`: pseudo-random in [0, 8).
inline void FakeLogits(uint64_t h, int32_t vocab, float* out) {
  for (int32_t v = 0; v < vocab; ++v) {
    out[v] = static_cast<float>(FakeMix(h * 31 + static_cast<uint64_t>(v)) >> 40) * (8.0f / 16777216.0f);
  }
}

// What the fake computes for one sequence alone: the logits after `tokens`.
inline std::vector<float> FakeLogitsFor(const std::vector<int32_t>& tokens, int32_t vocab) {
  uint64_t h = 0;
  for (size_t p = 0; p < tokens.size(); ++p) h = FakeChain(h, tokens[p], static_cast<int32_t>(p));
  std::vector<float> logits(static_cast<size_t>(vocab));
  FakeLogits(h, vocab, logits.data());
  return logits;
}

// The fake's greedy output for `prompt` run alone: argmax (lowest id on ties) until
// `max_tokens`, or until a stop id (`eos`, `stop_ids`; not included) is chosen.
inline std::vector<int32_t> FakeGreedy(const std::vector<int32_t>& prompt, int32_t max_tokens, int32_t vocab,
                                       int32_t eos = -1, const std::vector<int32_t>& stop_ids = {}) {
  std::vector<int32_t> tokens = prompt, out;
  while (static_cast<int32_t>(out.size()) < max_tokens) {
    const std::vector<float> logits = FakeLogitsFor(tokens, vocab);
    const int32_t id = ArgMax(logits.data(), vocab);
    if (id == eos) break;
    bool stop = false;
    for (int32_t s : stop_ids) stop = stop || s == id;
    if (stop) break;
    out.push_back(id);
    tokens.push_back(id);
  }
  return out;
}

class FakeEngineModel final : public EngineModel {
 public:
  FakeEngineModel(const FakeModelOptions& o, std::shared_ptr<FakeModelState> state)
      : o_(o), state_(std::move(state)),
        slots_(static_cast<size_t>(o.num_blocks) * static_cast<size_t>(o.block_size)),
        owner_(static_cast<size_t>(o.num_blocks), -1) {}

  int32_t vocab_size() const override { return o_.vocab; }
  int32_t max_context() const override { return o_.max_context; }
  int32_t num_blocks() const override { return o_.num_blocks; }
  int32_t block_size() const override { return o_.block_size; }

  absl::Status Forward(const ForwardBatch& batch, float* logits) override {
    state_->Gate();
    state_->RecordBatch(static_cast<int32_t>(batch.tokens.size()));
    if (o_.forward_delay > absl::ZeroDuration()) absl::SleepFor(o_.forward_delay);
    if (state_->TakeFailure()) return absl::InternalError("injected failure");
    ++batch_no_;
    for (const BlockCopy& c : batch.block_copies) {
      if (c.src < 0 || c.src >= o_.num_blocks || c.dst < 0 || c.dst >= o_.num_blocks) {
        return Bad("block copy out of range");
      }
      if (c.src == c.dst) continue;
      std::copy_n(slots_.begin() + static_cast<ptrdiff_t>(c.src) * o_.block_size, o_.block_size,
                  slots_.begin() + static_cast<ptrdiff_t>(c.dst) * o_.block_size);
    }
    std::vector<uint64_t> row_hash(batch.tokens.size(), 0);
    // Blocks written in this batch belong to one sequence; a block another sequence of
    // the batch only reads (a shared prefix-cache block) must not be written.
    for (size_t si = 0; si < batch.seqs.size(); ++si) {
      const ForwardBatch::Seq& s = batch.seqs[si];
      if (s.rows < 1) continue;
      for (int64_t j = s.cached / o_.block_size; j <= (s.cached + s.rows - 1) / o_.block_size; ++j) {
        if (j >= static_cast<int64_t>(s.block_table.size())) break;
        const int32_t b = s.block_table[static_cast<size_t>(j)];
        if (b < 0 || b >= o_.num_blocks) continue;
        int64_t& own = owner_[static_cast<size_t>(b)];
        if (own / 1000000 == batch_no_ && own % 1000000 != static_cast<int64_t>(si)) {
          Note(absl::StrCat("block ", b, " is written by two sequences of one batch"));
        }
        own = batch_no_ * 1000000 + static_cast<int64_t>(si);
      }
    }
    int32_t next_row = 0;
    for (size_t si = 0; si < batch.seqs.size(); ++si) {
      const ForwardBatch::Seq& s = batch.seqs[si];
      if (s.row_start != next_row || s.rows < 1) return Bad(absl::StrCat("seq ", si, " does not tile the rows"));
      next_row += s.rows;
      const int64_t need = (static_cast<int64_t>(s.cached) + s.rows + o_.block_size - 1) / o_.block_size;
      if (static_cast<int64_t>(s.block_table.size()) < need) {
        return Bad(absl::StrCat("seq ", si, ": block table of ", s.block_table.size(), " blocks for ",
                                s.cached + s.rows, " positions"));
      }
      for (int32_t b : s.block_table) {
        if (b < 0 || b >= o_.num_blocks) return Bad(absl::StrCat("seq ", si, ": block id ", b, " out of range"));
        const int64_t own = owner_[static_cast<size_t>(b)];
        if (own / 1000000 == batch_no_ && own % 1000000 != static_cast<int64_t>(si)) {
          Note(absl::StrCat("block ", b, " is written by one sequence of a batch and read by another"));
        }
      }
      for (int32_t i = 0; i < s.rows; ++i) {
        const int32_t row = s.row_start + i;
        if (row >= static_cast<int32_t>(batch.tokens.size())) return Bad("rows beyond the tokens");
        const int32_t tok = batch.tokens[static_cast<size_t>(row)];
        if (tok < 0 || tok >= o_.vocab) return Bad(absl::StrCat("token ", tok, " outside the vocabulary"));
        const int32_t pos = s.cached + i;
        uint64_t prev = 0;
        if (pos > 0) {
          const Slot& ps = At(s.block_table, pos - 1);
          if (ps.pos != pos - 1) {
            Note(absl::StrCat("seq ", si, " pos ", pos, ": slot of position ", pos - 1, " holds position ", ps.pos));
          }
          prev = ps.hash;
          if (o_.verify_full) VerifyPrefix(s.block_table, pos, si);
        }
        const uint64_t h = FakeChain(prev, tok, pos);
        At(s.block_table, pos) = Slot{pos, tok, h};
        row_hash[static_cast<size_t>(row)] = h;
      }
    }
    if (next_row != static_cast<int32_t>(batch.tokens.size())) return Bad("seqs do not cover every row");
    for (size_t j = 0; j < batch.logit_rows.size(); ++j) {
      const int32_t r = batch.logit_rows[j];
      if (r < 0 || r >= static_cast<int32_t>(batch.tokens.size())) return Bad("logit row out of range");
      FakeLogits(row_hash[static_cast<size_t>(r)], o_.vocab, logits + j * static_cast<size_t>(o_.vocab));
    }
    return absl::OkStatus();
  }

 private:
  struct Slot {
    int32_t pos = -1;
    int32_t token = -1;
    uint64_t hash = 0;
  };

  Slot& At(std::span<const int32_t> table, int32_t pos) {
    const int32_t b = table[static_cast<size_t>(pos / o_.block_size)];
    return slots_[static_cast<size_t>(b) * static_cast<size_t>(o_.block_size) + static_cast<size_t>(pos % o_.block_size)];
  }

  // Slots 0..pos-1 hold positions 0..pos-1 and their tokens re-chain to the stored hashes.
  void VerifyPrefix(std::span<const int32_t> table, int32_t pos, size_t si) {
    uint64_t h = 0;
    for (int32_t q = 0; q < pos; ++q) {
      const Slot& sl = At(table, q);
      h = FakeChain(h, sl.token, q);
      if (sl.pos != q || sl.hash != h) {
        Note(absl::StrCat("seq ", si, " pos ", pos, ": cached prefix broken at position ", q));
        return;
      }
    }
  }

  absl::Status Bad(std::string what) {
    state_->AddError(what);
    return absl::InvalidArgumentError(what);
  }
  // Records a problem without failing the call (the output comparisons see its effect).
  void Note(std::string what) { state_->AddError(std::move(what)); }

  FakeModelOptions o_;
  std::shared_ptr<FakeModelState> state_;
  std::vector<Slot> slots_;
  std::vector<int64_t> owner_;  // batch_no * 1e6 + seq index of the last writer
  int64_t batch_no_ = 0;
};

// A 64-token SentencePiece-style tokenizer for engine tests that need text: <unk>, <s>,
// </s> (EOS, id 2), letters, punctuation, byte tokens for "é" (<0xC3><0xA9>) and "\n",
// and short words with a leading "▁".
inline std::unique_ptr<Tokenizer> MakeTinyTokenizer() {
  TokenizerSpec spec;
  spec.kind = TokenizerKind::kSentencePiece;
  spec.source = "tiny-test-tokenizer";
  spec.add_space_prefix = false;
  spec.tokens = {"<unk>", "<s>", "</s>"};
  spec.types = {TokenType::kUnknown, TokenType::kControl, TokenType::kControl};
  for (char c = 'a'; c <= 'z'; ++c) spec.tokens.push_back(std::string(1, c));
  for (const char* p : {"\xE2\x96\x81", ".", ",", "<0xC3>", "<0xA9>", "<0x0A>"}) spec.tokens.push_back(p);
  for (const char* w : {"the", "cat", "sat", "on", "mat", "dog", "ran", "far", "and", "then", "it", "was",
                        "a", "big", "red", "sun", "in", "sky", "we", "go", "up", "to", "see", "my",
                        "old", "friend", "who", "is", "here"}) {
    spec.tokens.push_back(std::string("\xE2\x96\x81") + w);
  }
  while (spec.types.size() < spec.tokens.size()) spec.types.push_back(TokenType::kNormal);
  spec.types[32] = spec.types[33] = spec.types[34] = TokenType::kByte;
  spec.scores.assign(spec.tokens.size(), 0.0f);
  spec.bos_id = 1;
  spec.eos_id = 2;
  spec.unk_id = 0;
  auto tok = CreateTokenizer(std::move(spec));
  return tok.ok() ? *std::move(tok) : nullptr;
}

}  // namespace llmserve::testing
