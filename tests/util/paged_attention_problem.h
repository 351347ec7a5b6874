// Random PagedAttention problems for the attention tests: a paged cache holding each
// sequence's K/V, queries, a naive double reference (optionally with a sliding window),
// the kernels to run, and helpers to compare.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "model/kv_cache.h"
#include "model/ops/paged_attention.h"
#include "model/ops/paged_attention_internal.h"
#include "model/runtime_config.h"

namespace llmserve::testing {

struct Geometry {
  int64_t heads, kv_heads, head_dim, block_size;
  DType dtype;
};

// Sequence shape: rows this step after `cached` tokens already in the cache.
struct Shape {
  int32_t rows, cached;
};

// A random problem: a cache holding every sequence's K/V (layer 1 of 2), queries, and
// the original f32 K/V for the reference.
struct Problem {
  Geometry g;
  std::unique_ptr<KvCache> cache;
  std::vector<std::vector<int32_t>> tables;
  std::vector<AttentionSeq> seqs;
  std::vector<std::vector<float>> k, v;  // per sequence: [context][kv_heads][head_dim]
  std::vector<float> q;                  // [rows][q_stride]
  int64_t q_stride = 0, out_stride = 0, total_rows = 0;
};

inline constexpr int64_t kLayer = 1;

inline Problem MakeProblem(const Geometry& g, const std::vector<Shape>& shapes, uint32_t seed, float q_scale = 1.0f) {
  Problem p;
  p.g = g;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t hd = g.head_dim, bs = g.block_size, kv_dim = g.kv_heads * hd;
  int64_t blocks = 0;
  for (const Shape& s : shapes) blocks += (s.cached + s.rows + bs - 1) / bs;
  KvCacheConfig c;
  c.num_layers = 2;
  c.num_kv_heads = g.kv_heads;
  c.head_dim = hd;
  c.block_size = bs;
  c.dtype = g.dtype;
  c.num_blocks = blocks + 5;
  auto cache = KvCache::Create(c);
  EXPECT_TRUE(cache.ok()) << cache.status();
  p.cache = std::move(*cache);
  // Shuffled block ids: tables are non-contiguous and interleaved between sequences.
  std::vector<int32_t> ids(static_cast<size_t>(c.num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  size_t next = 0;
  p.q_stride = g.heads * hd + 2 * kv_dim;  // as in a fused QKV buffer
  p.out_stride = g.heads * hd + 3;
  for (const Shape& s : shapes) {
    const int32_t context = s.cached + s.rows;
    std::vector<int32_t> table(static_cast<size_t>((context + bs - 1) / bs));
    for (int32_t& id : table) id = ids[next++];
    p.tables.push_back(std::move(table));
    std::vector<float> k(static_cast<size_t>(context * kv_dim)), v(k.size());
    for (float& x : k) x = normal(rng);
    for (float& x : v) x = normal(rng);
    std::vector<int32_t> positions(static_cast<size_t>(context));
    std::iota(positions.begin(), positions.end(), 0);
    // The cached prefix and the chunk in separate writes, as an engine does; the other
    // layer gets unrelated values.
    for (auto [from, n] : {std::pair<int32_t, int32_t>{0, s.cached}, {s.cached, s.rows}}) {
      if (n == 0) continue;
      p.cache->Write(CpuFeatures::Detect().isa(), kLayer, k.data() + from * kv_dim, v.data() + from * kv_dim, kv_dim, n,
                     positions.data() + from, p.tables.back().data(), static_cast<int64_t>(p.tables.back().size()));
      p.cache->Write(CpuFeatures::Detect().isa(), 0, v.data() + from * kv_dim, k.data() + from * kv_dim, kv_dim, n,
                     positions.data() + from, p.tables.back().data(), static_cast<int64_t>(p.tables.back().size()));
    }
    p.k.push_back(std::move(k));
    p.v.push_back(std::move(v));
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    AttentionSeq a;
    a.row_start = static_cast<int32_t>(p.total_rows);
    a.rows = shapes[i].rows;
    a.context = shapes[i].cached + shapes[i].rows;
    a.block_table = p.tables[i];
    p.seqs.push_back(a);
    p.total_rows += a.rows;
  }
  p.q.resize(static_cast<size_t>(p.total_rows * p.q_stride));
  for (float& x : p.q) x = normal(rng) * q_scale;
  return p;
}

inline float RoundBF16(float x) { return BF16ToF32(F32ToBF16(x)); }

// Naive reference in double: the full score matrix of each (sequence, head), softmax,
// weighted sum of V. `round_kv` rounds K/V to bf16 first. window > 0: a row at position
// pos sees positions t with pos - window < t <= pos only.
inline std::vector<double> Reference(const Problem& p, bool round_kv, int64_t window = 0) {
  const int64_t hd = p.g.head_dim, kv_dim = p.g.kv_heads * hd, group = p.g.heads / p.g.kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  std::vector<double> out(static_cast<size_t>(p.total_rows * p.g.heads * hd));
  auto kv = [&](float x) { return static_cast<double>(round_kv ? RoundBF16(x) : x); };
  for (size_t si = 0; si < p.seqs.size(); ++si) {
    const AttentionSeq& s = p.seqs[si];
    for (int64_t h = 0; h < p.g.heads; ++h) {
      const int64_t kvh = h / group;
      std::vector<double> scores(static_cast<size_t>(s.rows) * s.context, -INFINITY);
      for (int64_t r = 0; r < s.rows; ++r) {
        const int64_t pos = s.context - s.rows + r;
        const float* q = p.q.data() + (s.row_start + r) * p.q_stride + h * hd;
        for (int64_t t = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0; t <= pos; ++t) {
          double dot = 0;
          for (int64_t d = 0; d < hd; ++d) dot += double{q[d]} * kv(p.k[si][t * kv_dim + kvh * hd + d]);
          scores[r * s.context + t] = dot * scale;
        }
      }
      for (int64_t r = 0; r < s.rows; ++r) {
        double* row = scores.data() + r * s.context;
        const double mx = *std::max_element(row, row + s.context);
        double sum = 0;
        for (int64_t t = 0; t < s.context; ++t) sum += (row[t] = std::exp(row[t] - mx));
        double* o = out.data() + ((s.row_start + r) * p.g.heads + h) * hd;
        for (int64_t t = 0; t < s.context; ++t) {
          for (int64_t d = 0; d < hd; ++d) o[d] += row[t] / sum * kv(p.v[si][t * kv_dim + kvh * hd + d]);
        }
      }
    }
  }
  return out;
}

inline constexpr float kSentinel = 12345.0f;

// A kernel under test: the instruction sets it may use (AttentionOptions::isa), so that
// one CPU with AVX512_BF16 covers both ways of computing a bf16 cache.
struct Kernel {
  Isa isa;
  const char* name;
};

inline const Kernel kScalarKernel{Isa::kScalar, "scalar"};

// Every kernel this CPU can run.
inline std::vector<Kernel> Kernels() {
  const CpuFeatures cpu = CpuFeatures::Detect();
  std::vector<Kernel> kernels = {kScalarKernel};
  if (cpu.avx512) kernels.push_back({cpu.isa(), "avx512"});
  if (cpu.avx512_bf16) kernels.push_back({Isa::kAvx512, "avx512 without bf16 math"});
  return kernels;
}

// The options a test runs `k` with (the K/V prefetch stream on, as by default).
inline AttentionOptions Options(const Kernel& k, bool kv_prefetch = true) { return {k.isa, kv_prefetch}; }

// The AVX-512 kernel computes a bf16 cache with vdpbf16ps where its Isa allows: queries
// and probabilities are rounded to bf16 too.
inline bool RoundsToBf16(const Kernel& k, DType cache) { return cache == DType::kBF16 && HasAvx512Bf16(k.isa); }

// Max error relative to the outputs' magnitude against the reference over the cached
// K/V: f32 arithmetic keeps ~1e-5; rounding queries and probabilities to bf16 (8 bits)
// ~1e-3, bounded by 4e-3 (about one bf16 ulp of the largest output).
inline double Tolerance(const Kernel& k, DType cache) { return RoundsToBf16(k, cache) ? 4e-3 : 1e-5; }

inline std::vector<float> RunAttention(const Problem& p, const Kernel& k, int64_t window = 0,
                                       bool kv_prefetch = true) {
  std::vector<float> out(static_cast<size_t>(p.total_rows * p.out_stride), kSentinel);
  PagedAttention(Options(k, kv_prefetch), *p.cache, kLayer, p.seqs, p.q.data(), p.q_stride, p.g.heads,
                 1.0f / std::sqrt(static_cast<float>(p.g.head_dim)), out.data(), p.out_stride, window);
  return out;
}

// Max |out - ref| over all outputs; the padding between rows must be untouched.
inline double MaxDiff(const Problem& p, const std::vector<float>& out, const std::vector<double>& ref) {
  const int64_t width = p.g.heads * p.g.head_dim;
  double worst = 0;
  for (int64_t r = 0; r < p.total_rows; ++r) {
    for (int64_t i = 0; i < width; ++i) {
      const double d = std::fabs(out[r * p.out_stride + i] - ref[r * width + i]);
      worst = std::isnan(d) ? INFINITY : std::max(worst, d);
    }
    for (int64_t i = width; i < p.out_stride; ++i) EXPECT_EQ(out[r * p.out_stride + i], kSentinel);
  }
  return worst;
}

inline double MaxAbs(const std::vector<double>& x) {
  double m = 0;
  for (double y : x) m = std::max(m, std::fabs(y));
  return m;
}

// A mixed batch: decode rows of contexts up to ~300 and prefill chunks of 1..70 rows
// after cached prefixes of 0..200 (including the first chunk of a prompt).
inline std::vector<Shape> MixedShapes(uint32_t seed, int decodes, int prefills) {
  std::mt19937 rng(seed);
  std::vector<Shape> shapes;
  for (int i = 0; i < std::max(decodes, prefills); ++i) {
    if (i < decodes) shapes.push_back({1, static_cast<int32_t>(rng() % 300)});
    if (i < prefills) {
      shapes.push_back({static_cast<int32_t>(1 + rng() % 70), i == 0 ? 0 : static_cast<int32_t>(rng() % 201)});
    }
  }
  shapes.push_back({70, 0});
  shapes.push_back({1, 0});  // decode of a one-token context
  return shapes;
}

}  // namespace llmserve::testing
