#include "model/greedy_runner.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "model/kv_cache.h"

namespace llmserve {
namespace {

struct SeqState {
  const std::vector<int32_t>* prompt = nullptr;
  std::vector<int32_t> tokens;  // prompt + generated
  int64_t computed = 0;         // tokens whose K/V are in the cache
  std::vector<int32_t> blocks;  // block table
  bool done = false;
  GreedyResult* out = nullptr;
};

// Which sequence a step's logit row belongs to, and whether it ends the prompt.
struct LogitOwner {
  SeqState* seq;
  bool prompt_end;
};

// Runs `seqs` to completion in one batched loop over a cache sized for them.
absl::Status RunLoop(Transformer& model, std::vector<SeqState>& seqs, const GreedyOptions& opt) {
  const ModelConfig& c = model.config();
  KvCacheConfig kc = KvCacheConfig::ForModel(c, opt.block_size, opt.kv_dtype);
  int64_t total_blocks = 0;
  for (SeqState& s : seqs) {
    const int64_t want = std::min<int64_t>(static_cast<int64_t>(s.prompt->size()) + opt.max_tokens, c.context_length);
    const int64_t n = (want + opt.block_size - 1) / opt.block_size;
    s.blocks.resize(static_cast<size_t>(n));
    std::iota(s.blocks.begin(), s.blocks.end(), static_cast<int32_t>(total_blocks));
    total_blocks += n;
  }
  kc.num_blocks = total_blocks;
  auto cache = KvCache::Create(kc);
  if (!cache.ok()) return cache.status();

  std::vector<int32_t> tokens, logit_rows;
  std::vector<ForwardBatch::Seq> batch_seqs;
  std::vector<LogitOwner> owners;
  std::vector<float> logits;
  const int64_t vocab = c.vocab_size;
  while (true) {
    tokens.clear();
    logit_rows.clear();
    batch_seqs.clear();
    owners.clear();
    std::vector<std::pair<SeqState*, int32_t>> advanced;  // (sequence, rows) this step
    for (SeqState& s : seqs) {
      if (s.done) continue;
      const int64_t prompt_len = static_cast<int64_t>(s.prompt->size());
      int64_t rows = 1;
      bool prompt_end = false;
      if (s.computed < prompt_len) {
        const int64_t left = prompt_len - s.computed;
        rows = opt.prefill_chunk > 0 ? std::min(opt.prefill_chunk, left) : left;
        prompt_end = s.computed + rows == prompt_len;
      }
      ForwardBatch::Seq bs;
      bs.row_start = static_cast<int32_t>(tokens.size());
      bs.rows = static_cast<int32_t>(rows);
      bs.cached = static_cast<int32_t>(s.computed);
      bs.block_table = s.blocks;
      tokens.insert(tokens.end(), s.tokens.begin() + s.computed, s.tokens.begin() + s.computed + rows);
      batch_seqs.push_back(bs);
      if (s.computed >= prompt_len || prompt_end) {
        logit_rows.push_back(static_cast<int32_t>(tokens.size() - 1));
        owners.push_back({&s, prompt_end});
      }
      advanced.emplace_back(&s, static_cast<int32_t>(rows));
    }
    if (advanced.empty()) return absl::OkStatus();
    logits.resize(logit_rows.size() * static_cast<size_t>(vocab));
    ForwardBatch batch{tokens, batch_seqs, logit_rows};
    if (absl::Status st = model.Forward(batch, **cache, logits.data()); !st.ok()) return st;
    for (auto& [s, rows] : advanced) s->computed += rows;
    for (size_t i = 0; i < owners.size(); ++i) {
      SeqState& s = *owners[i].seq;
      const float* row = logits.data() + i * static_cast<size_t>(vocab);
      if (owners[i].prompt_end && opt.top_logits > 0) s.out->top_logits = TopLogits(row, vocab, opt.top_logits);
      if (static_cast<int64_t>(s.out->generated.size()) >= opt.max_tokens) {
        s.done = true;
        continue;
      }
      const int32_t next = ArgMax(row, vocab);
      if (std::find(opt.stop_ids.begin(), opt.stop_ids.end(), next) != opt.stop_ids.end()) {
        s.done = true;
        continue;
      }
      s.tokens.push_back(next);
      s.out->generated.push_back(next);
      // Done at max_tokens, or when the new token's position is past the context.
      if (static_cast<int64_t>(s.out->generated.size()) >= opt.max_tokens ||
          static_cast<int64_t>(s.tokens.size()) > c.context_length) {
        s.done = true;
      }
    }
  }
}

}  // namespace

int32_t ArgMax(const float* logits, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

std::vector<std::pair<int32_t, float>> TopLogits(const float* logits, int64_t n, int k) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  const size_t kk = std::min(static_cast<size_t>(std::max(k, 0)), ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(kk), ids.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  std::vector<std::pair<int32_t, float>> out;
  for (size_t i = 0; i < kk; ++i) out.emplace_back(ids[i], logits[ids[i]]);
  return out;
}

absl::StatusOr<std::vector<GreedyResult>> RunGreedy(Transformer& model,
                                                    const std::vector<std::vector<int32_t>>& prompts,
                                                    const GreedyOptions& options) {
  const ModelConfig& c = model.config();
  if (options.max_tokens < 0) return absl::InvalidArgumentError("max_tokens must not be negative");
  if (options.prefill_chunk < 0) return absl::InvalidArgumentError("prefill_chunk must not be negative");
  if (options.block_size < 1 || options.block_size > 4096) {
    return absl::InvalidArgumentError(absl::StrCat("block_size ", options.block_size, " must be in [1, 4096]"));
  }
  if (options.top_logits < 0) return absl::InvalidArgumentError("top_logits must not be negative");
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (prompts[i].empty()) return absl::InvalidArgumentError(absl::StrCat("prompt ", i, " has no tokens"));
    if (static_cast<int64_t>(prompts[i].size()) > c.context_length) {
      return absl::InvalidArgumentError(absl::StrCat("prompt ", i, " has ", prompts[i].size(),
                                                     " tokens, more than the context length ", c.context_length));
    }
  }
  std::vector<GreedyResult> results(prompts.size());
  auto make = [&](size_t i) {
    SeqState s;
    s.prompt = &prompts[i];
    s.tokens = prompts[i];
    s.out = &results[i];
    return s;
  };
  if (options.batch) {
    std::vector<SeqState> seqs;
    for (size_t i = 0; i < prompts.size(); ++i) seqs.push_back(make(i));
    if (absl::Status s = RunLoop(model, seqs, options); !s.ok()) return s;
  } else {
    for (size_t i = 0; i < prompts.size(); ++i) {
      std::vector<SeqState> seqs{make(i)};
      if (absl::Status s = RunLoop(model, seqs, options); !s.ok()) return s;
    }
  }
  return results;
}

}  // namespace llmserve
