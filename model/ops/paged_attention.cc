// PagedAttention: the task split, the kernel dispatch, and the scalar kernel.
#include "model/ops/paged_attention.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

#include "model/ops/paged_attention_internal.h"
#include "model/ops/paged_attention_prefetch.h"

namespace llmserve {
namespace attention {

namespace {

// Per-thread state of the scalar kernel, grown on demand and then reused.
struct ScalarScratch {
  std::vector<float> k, v, acc, m, l;
};

template <typename T>
T* Grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

}  // namespace

// One pass over the sequence's tokens; every query that sees a token updates its online
// softmax (running max m, sum l, accumulator acc) with it.
void RunTaskScalar(const Args& a, const Task& t, const Task* /*successor*/) {
  const KvCacheConfig& c = a.cache->config();
  const AttentionSeq& s = a.seqs[t.seq];
  const int64_t hd = c.head_dim, bs = c.block_size, g = a.group;
  const int64_t pos0 = int64_t{s.context} - s.rows;  // position of the sequence's row 0
  const int64_t nq = int64_t{t.row_end - t.row_begin} * g;
  const int64_t n_tok = pos0 + t.row_end;  // tokens the task's last row sees
  const int64_t first_pos = pos0 + t.row_begin;  // position of the task's row 0
  const int64_t n_rows = t.row_end - t.row_begin;
  thread_local ScalarScratch sc;
  float* kr = Grow(sc.k, static_cast<size_t>(hd));
  float* vr = Grow(sc.v, static_cast<size_t>(hd));
  float* acc = Grow(sc.acc, static_cast<size_t>(nq * hd));
  float* m = Grow(sc.m, static_cast<size_t>(nq));
  float* l = Grow(sc.l, static_cast<size_t>(nq));
  std::fill(acc, acc + nq * hd, 0.0f);
  std::fill(m, m + nq, -std::numeric_limits<float>::infinity());
  std::fill(l, l + nq, 0.0f);
  auto q_row = [&](int64_t qi) {
    const int64_t row = s.row_start + t.row_begin + qi / g, head = t.kv_head * g + qi % g;
    return a.q + row * a.q_stride + head * hd;
  };
  const int64_t tok0 = a.window > 0 ? std::max<int64_t>(0, first_pos - a.window + 1) : 0;
  for (int64_t tok = tok0; tok < n_tok; ++tok) {
    const int64_t block = s.block_table[static_cast<size_t>(tok / bs)];
    a.cache->ReadK(a.layer, block, t.kv_head, tok % bs, kr);
    a.cache->ReadV(a.layer, block, t.kv_head, tok % bs, vr);
    // Rows at positions >= tok see this token: a suffix of the task's queries; with a
    // window, only those at positions < tok + window.
    const int64_t first_row = std::max<int64_t>(0, tok - first_pos);
    const int64_t end_row = a.window > 0 ? std::min<int64_t>(n_rows, tok + a.window - first_pos) : n_rows;
    for (int64_t qi = first_row * g; qi < end_row * g; ++qi) {
      const float* q = q_row(qi);
      float dot = 0;
      for (int64_t d = 0; d < hd; ++d) dot += q[d] * kr[d];
      const float sc_ = dot * a.scale;
      float* ac = acc + qi * hd;
      if (sc_ > m[qi]) {
        const float corr = std::exp(m[qi] - sc_);  // 0 for the first token
        l[qi] *= corr;
        for (int64_t d = 0; d < hd; ++d) ac[d] *= corr;
        m[qi] = sc_;
      }
      const float w = std::exp(sc_ - m[qi]);
      l[qi] += w;
      for (int64_t d = 0; d < hd; ++d) ac[d] += w * vr[d];
    }
  }
  for (int64_t qi = 0; qi < nq; ++qi) {
    const int64_t row = s.row_start + t.row_begin + qi / g, head = t.kv_head * g + qi % g;
    float* o = a.out + row * a.out_stride + head * hd;
    const float inv = 1.0f / l[qi];
    for (int64_t d = 0; d < hd; ++d) o[d] = acc[qi * hd + d] * inv;
  }
}

}  // namespace attention

void PagedAttention(const AttentionOptions& options, const KvCache& cache, int64_t layer,
                    std::span<const AttentionSeq> seqs, const float* q, int64_t q_stride, int64_t num_heads,
                    float scale, float* out, int64_t out_stride, int64_t window) {
  using attention::Args;
  using attention::KvPrefetchStream;
  using attention::Task;
  const bool avx512 = HasAvx512(options.isa);
  const KvCacheConfig& c = cache.config();
  assert(num_heads > 0 && num_heads % c.num_kv_heads == 0);
  Args a;
  a.cache = &cache;
  a.layer = layer;
  a.seqs = seqs.data();
  a.q = q;
  a.q_stride = q_stride;
  a.num_heads = num_heads;
  a.group = num_heads / c.num_kv_heads;
  if (a.group <= 0) return;  // not a GQA geometry (the Transformer validates the model)
  a.scale = scale;
  a.out = out;
  a.out_stride = out_stride;
  a.window = window;
  a.bf16_dot = HasAvx512Bf16(options.isa) && options.bf16_dot;
  a.kv_prefetch = avx512 && options.kv_prefetch;

  // The task list lives on the calling thread and keeps its capacity between calls.
  thread_local std::vector<Task> tasks;
  thread_local std::vector<int64_t> cost;
  tasks.clear();
  cost.clear();
  const int64_t rows_per_task = std::max<int64_t>(1, attention::kQueriesPerTask / a.group);
  for (size_t i = 0; i < seqs.size(); ++i) {
    const AttentionSeq& s = seqs[i];
    assert(s.rows >= 0 && s.rows <= s.context);
    assert(static_cast<int64_t>(s.block_table.size()) * c.block_size >= s.context);
    if (s.rows <= 0) continue;
    const int64_t chunks = (s.rows + rows_per_task - 1) / rows_per_task;
    for (int64_t h = 0; h < c.num_kv_heads; ++h) {
      for (int64_t k = 0; k < chunks; ++k) {
        Task t;
        t.seq = static_cast<int32_t>(i);
        t.kv_head = static_cast<int32_t>(h);
        t.row_begin = static_cast<int32_t>(k * s.rows / chunks);
        t.row_end = static_cast<int32_t>((k + 1) * s.rows / chunks);
        tasks.push_back(t);
        // Work ~ rows × tokens read (up to the last row's position).
        cost.push_back(int64_t{t.row_end - t.row_begin} *
                       (int64_t{s.context} - s.rows + t.row_end - attention::TaskFirstToken(a, t)));
      }
    }
  }
  if (tasks.empty()) return;
  // Heaviest first, so the dynamic schedule ends with small tasks (results do not depend
  // on the order: every task writes its own output rows and heads).
  thread_local std::vector<int32_t> order;
  order.resize(tasks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::sort(order.begin(), order.end(),
            [](int32_t x, int32_t y) { return cost[x] != cost[y] ? cost[x] > cost[y] : x < y; });

  void (*run)(const Args&, const Task&, const Task*) = avx512 ? attention::RunTaskAvx512 : attention::RunTaskScalar;
  const Task* list = tasks.data();
  const int32_t* ord = order.data();
  const int64_t n = static_cast<int64_t>(tasks.size());
  // Dynamic schedule, each thread claiming its next task when it starts the current one,
  // so that the kernel knows its successor and can prefetch that task's first tile.
  std::atomic<int64_t> next{0};
#pragma omp parallel if (n > 1)
  {
    int64_t cur = next.fetch_add(1, std::memory_order_relaxed);
    // The AVX-512 kernel's stream prefetches each successor's head; the first task's
    // comes here.
    if (a.kv_prefetch && cur < n) KvPrefetchStream::PrefetchHead(a, list[ord[cur]]);
    while (cur < n) {
      const int64_t after = next.fetch_add(1, std::memory_order_relaxed);
      run(a, list[ord[cur]], after < n ? &list[ord[after]] : nullptr);
      cur = after;
    }
  }
}

}  // namespace llmserve
