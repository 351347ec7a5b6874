// Batched equals alone: many prompts through one ragged Forward loop give exactly the ids
// each gives alone, for any prefill chunking; malformed batches are INVALID_ARGUMENT.
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/greedy_runner.h"
#include "model/model_loader.h"
#include "model/transformer.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

std::vector<std::vector<int32_t>> RandomPrompts(int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> len(1, 300), tok(0, static_cast<int>(vocab) - 1);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 16; ++i) {
    const int n = i == 0 ? 1 : i == 1 ? 300 : len(rng);  // both ends of 1..300 included
    std::vector<int32_t> p(static_cast<size_t>(n));
    for (int32_t& t : p) t = tok(rng);
    prompts.push_back(std::move(p));
  }
  return prompts;
}

std::unique_ptr<Transformer> MakeModel(const ModelWeights& w, DType dtype) {
  RuntimeConfig rt;
  rt.weight_dtype = dtype;
  rt.threads = 2;
  auto m = Transformer::Create(w, rt);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

// Runs `prompts` alone and batched with chunk sizes 0 (whole), 1, 7, 64; all ids equal.
void ExpectBatchedEqualsAlone(Transformer& model, const std::vector<std::vector<int32_t>>& prompts,
                              int64_t max_tokens) {
  GreedyOptions alone;
  alone.max_tokens = max_tokens;
  alone.top_logits = 5;
  auto ref = RunGreedy(model, prompts, alone);
  ASSERT_TRUE(ref.ok()) << ref.status();
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ((*ref)[i].generated.size(), static_cast<size_t>(max_tokens)) << "prompt " << i;  // no stop ids
  }
  for (int64_t chunk : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{64}}) {
    SCOPED_TRACE("prefill chunk " + std::to_string(chunk));
    GreedyOptions o = alone;
    o.batch = true;
    o.prefill_chunk = chunk;
    auto got = RunGreedy(model, prompts, o);
    ASSERT_TRUE(got.ok()) << got.status();
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ((*got)[i].generated, (*ref)[i].generated) << "prompt " << i << " of length " << prompts[i].size();
      // The logits at the last prompt position agree to float rounding (summation order
      // inside the matmul may differ with the number of rows).
      ASSERT_EQ((*got)[i].top_logits.size(), (*ref)[i].top_logits.size());
      for (size_t k = 0; k < (*ref)[i].top_logits.size(); ++k) {
        EXPECT_EQ((*got)[i].top_logits[k].first, (*ref)[i].top_logits[k].first) << "prompt " << i << " rank " << k;
        EXPECT_NEAR((*got)[i].top_logits[k].second, (*ref)[i].top_logits[k].second, 1e-4) << "prompt " << i;
      }
    }
  }
}

TEST(TransformerBatchTest, Stories260KBatchedEqualsAlone) {
  LLMSERVE_REQUIRE_ASSET(path, "models/llama2c/stories260K.bin");
  auto w = LoadModel(path);
  ASSERT_TRUE(w.ok()) << w.status();
  auto model = MakeModel(**w, DType::kF32);
  ASSERT_NE(model, nullptr);
  // Longest prompt 300 + 24 generated stays inside the 512-token context.
  ExpectBatchedEqualsAlone(*model, RandomPrompts((*w)->config.vocab_size, 1234), 24);
}

// A small random-weight model built in memory (no file): exercises the paths the
// stories model does not (GPT-2 LayerNorm/GELU/learned positions/biases; QKV biases).
struct SyntheticModel {
  ModelWeights weights;
};

std::unique_ptr<SyntheticModel> MakeSynthetic(const ModelConfig& c, uint32_t seed) {
  auto m = std::make_unique<SyntheticModel>();
  m->weights.config = c;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const ExpectedTensor& e : ExpectedTensors(c)) {
    int64_t n = 1;
    for (int64_t d : e.shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    const bool norm_weight = e.name.find("norm.weight") != std::string::npos;
    const float scale = e.shape.size() == 2 ? 1.0f / std::sqrt(static_cast<float>(e.shape[1])) : 0.1f;
    for (float& x : v) x = norm_weight ? 1.0f + 0.1f * normal(rng) : scale * normal(rng);
    if (e.name == "token_embd.weight" || e.name == "position_embd.weight") {
      for (float& x : v) x *= 4.0f;  // embeddings at unit scale
    }
    std::vector<uint8_t> bytes(v.size() * sizeof(float));
    std::memcpy(bytes.data(), v.data(), bytes.size());
    const uint8_t* data = m->weights.Own(std::move(bytes));
    EXPECT_TRUE(m->weights.Add(TensorView{e.name, DType::kF32, e.shape, data, v.size() * sizeof(float)}).ok());
  }
  return m;
}

ModelConfig SmallConfig(Architecture arch) {
  ModelConfig c;
  c.name = arch == Architecture::kGpt2 ? "synthetic-gpt2" : "synthetic-qwen2";
  c.arch = arch;
  c.vocab_size = 97;
  c.hidden_size = 48;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = arch == Architecture::kGpt2 ? 4 : 2;
  c.head_dim = 12;
  c.ffn_dim = 80;
  c.context_length = 400;
  c.qkv_bias = true;
  if (arch == Architecture::kGpt2) {
    c.norm = NormKind::kLayerNorm;
    c.position = PositionKind::kLearned;
    c.activation = Activation::kGeluTanh;
    c.out_bias = c.mlp_bias = c.norm_bias = true;
  } else {
    c.rope_layout = RopeLayout::kHalf;
    c.rope_dim = c.head_dim;
    c.rope_theta = 10000.0f;
  }
  return c;
}

TEST(TransformerBatchTest, SyntheticGpt2BatchedEqualsAlone) {
  const ModelConfig c = SmallConfig(Architecture::kGpt2);
  ASSERT_TRUE(c.Validate().ok()) << c.Validate();
  auto m = MakeSynthetic(c, 7);
  auto model = MakeModel(m->weights, DType::kF32);
  ASSERT_NE(model, nullptr);
  ExpectBatchedEqualsAlone(*model, RandomPrompts(c.vocab_size, 99), 12);
}

TEST(TransformerBatchTest, SyntheticQkvBiasGqaBatchedEqualsAlone) {
  const ModelConfig c = SmallConfig(Architecture::kLlama);
  ASSERT_TRUE(c.Validate().ok()) << c.Validate();
  auto m = MakeSynthetic(c, 8);
  auto model = MakeModel(m->weights, DType::kF32);
  ASSERT_NE(model, nullptr);
  ExpectBatchedEqualsAlone(*model, RandomPrompts(c.vocab_size, 100), 12);
}


// stories260K with a 40-block cache (16 tokens a block) and a batch builder.
class ForwardBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LLMSERVE_REQUIRE_ASSET(path, "models/llama2c/stories260K.bin");
    auto w = LoadModel(path);
    ASSERT_TRUE(w.ok()) << w.status();
    weights_ = *std::move(w);
    model_ = MakeModel(*weights_, DType::kF32);
    ASSERT_NE(model_, nullptr);
    cache_ = NewCache(weights_->config.num_kv_heads, 40);
    ASSERT_NE(cache_, nullptr);
    std::iota(table_.begin(), table_.end(), 0);
    logits_.resize(8 * static_cast<size_t>(weights_->config.vocab_size));
  }

  std::unique_ptr<KvCache> NewCache(int64_t kv_heads, int64_t blocks) {
    KvCacheConfig kc = KvCacheConfig::ForModel(weights_->config, 16, DType::kF32);
    kc.num_kv_heads = kv_heads;
    kc.num_blocks = blocks;
    auto c = KvCache::Create(kc);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }

  absl::Status Run(const std::vector<int32_t>& tokens, const std::vector<ForwardBatch::Seq>& seqs,
                   const std::vector<int32_t>& logit_rows, KvCache* cache = nullptr) {
    ForwardBatch b{tokens, seqs, logit_rows};
    return model_->Forward(b, cache != nullptr ? *cache : *cache_, logits_.data());
  }

  // A sequence whose block table is blocks first .. first+table_len-1.
  ForwardBatch::Seq Seq(int32_t start, int32_t rows, int32_t cached, size_t table_len = 20, size_t first = 0) const {
    return ForwardBatch::Seq{start, rows, cached, std::span<const int32_t>(table_.data() + first, table_len)};
  }

  std::unique_ptr<ModelWeights> weights_;
  std::unique_ptr<Transformer> model_;
  std::unique_ptr<KvCache> cache_;
  std::vector<int32_t> table_ = std::vector<int32_t>(40);
  std::vector<float> logits_;
};

#define EXPECT_INVALID(expr)                                                   \
  do {                                                                         \
    const absl::Status st_ = (expr);                                           \
    EXPECT_EQ(st_.code(), absl::StatusCode::kInvalidArgument) << st_;          \
  } while (0)

TEST_F(ForwardBatchTest, RejectsBadBatchesAndKeepsWorking) {
  const std::vector<int32_t> five = {1, 403, 407, 261, 378};
  ASSERT_TRUE(Run(five, {Seq(0, 2, 0), Seq(2, 3, 0, 1, 20)}, {1, 4}).ok());
  EXPECT_INVALID(Run(five, {Seq(0, 3, 0), Seq(2, 3, 0)}, {4}));        // overlapping ranges
  EXPECT_INVALID(Run(five, {Seq(0, 2, 0), Seq(3, 2, 0)}, {4}));        // gap
  EXPECT_INVALID(Run(five, {Seq(0, 2, 0), Seq(2, 2, 0)}, {3}));        // row 4 in no sequence
  EXPECT_INVALID(Run(five, {Seq(0, 2, 0), Seq(2, 4, 0)}, {3}));        // past the last row
  EXPECT_INVALID(Run(five, {Seq(0, 0, 0), Seq(0, 5, 0)}, {3}));        // empty range
  EXPECT_INVALID(Run(five, {Seq(0, 5, -1)}, {4}));                     // negative cached
  const int32_t vocab = static_cast<int32_t>(weights_->config.vocab_size);
  EXPECT_INVALID(Run({1, 403, vocab}, {Seq(0, 3, 0)}, {2}));           // token id = vocab
  EXPECT_INVALID(Run({1, -1}, {Seq(0, 2, 0)}, {1}));                   // negative token id
  EXPECT_INVALID(Run(five, {Seq(0, 5, 0)}, {5}));                      // logit row = N
  EXPECT_INVALID(Run(five, {Seq(0, 5, 12, 1)}, {4}));                  // positions 12..16 need 2 blocks
  EXPECT_INVALID(Run(five, {Seq(0, 5, 0, 0)}, {4}));                   // no block table at all
  const int32_t ctx = static_cast<int32_t>(weights_->config.context_length);
  auto big = NewCache(weights_->config.num_kv_heads, ctx / 16 + 1);
  ASSERT_NE(big, nullptr);
  std::vector<int32_t> long_table(static_cast<size_t>(ctx / 16 + 1));
  std::iota(long_table.begin(), long_table.end(), 0);
  const ForwardBatch::Seq at_end{0, 5, ctx - 4, long_table};           // positions ctx-4 .. ctx
  EXPECT_INVALID(Run(five, {at_end}, {4}, big.get()));
  const ForwardBatch::Seq last{0, 4, ctx - 4, long_table};             // positions up to ctx-1: fine
  EXPECT_TRUE(Run({1, 403, 407, 261}, {last}, {3}, big.get()).ok());
  std::vector<int32_t> bad_ids = {0, 40};                              // block id = num_blocks
  EXPECT_INVALID(Run(five, {ForwardBatch::Seq{0, 5, 12, bad_ids}}, {4}));
  auto wrong = NewCache(weights_->config.num_kv_heads + 1, 4);         // geometry mismatch
  ASSERT_NE(wrong, nullptr);
  EXPECT_INVALID(Run(five, {Seq(0, 5, 0, 4)}, {4}, wrong.get()));
  // Still works after the rejections.
  ASSERT_TRUE(Run(five, {Seq(0, 5, 0)}, {4}).ok());
  ASSERT_TRUE(Run(five, {Seq(0, 5, 0)}, {4}).ok());
  EXPECT_EQ(ArgMax(logits_.data(), vocab), 432);  // run.c's first token after "Once upon a time"
}


TEST_F(ForwardBatchTest, LogitsOfAnyRowsMatchStepByStep) {
  // Two sequences prefilled together, logits asked for every row in a scrambled order
  // with one row twice, against the same tokens fed one per step.
  const int32_t vocab = static_cast<int32_t>(weights_->config.vocab_size);
  const std::vector<int32_t> a = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421};
  const std::vector<int32_t> b = {1, 291, 280, 294, 269};
  std::vector<int32_t> tokens = a;
  tokens.insert(tokens.end(), b.begin(), b.end());
  const int32_t n = static_cast<int32_t>(tokens.size());
  std::vector<int32_t> rows;
  for (int32_t r = n - 1; r >= 0; --r) rows.push_back(r);
  rows.push_back(3);
  std::vector<float> together(rows.size() * static_cast<size_t>(vocab));
  logits_.swap(together);
  ASSERT_TRUE(Run(tokens, {Seq(0, 13, 0, 20, 0), Seq(13, 5, 0, 20, 20)}, rows).ok());
  logits_.swap(together);

  std::vector<std::vector<float>> alone(static_cast<size_t>(n));  // by row
  auto cache = NewCache(weights_->config.num_kv_heads, 40);
  ASSERT_NE(cache, nullptr);
  for (int32_t r = 0; r < n; ++r) {
    const bool in_a = r < 13;
    const int32_t pos = in_a ? r : r - 13;
    ASSERT_TRUE(Run({tokens[static_cast<size_t>(r)]}, {Seq(0, 1, pos, 20, in_a ? 0 : 20)}, {0}, cache.get()).ok());
    alone[static_cast<size_t>(r)].assign(logits_.begin(), logits_.begin() + vocab);
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::vector<float>& want = alone[static_cast<size_t>(rows[i])];
    for (int32_t v = 0; v < vocab; ++v) {
      ASSERT_NEAR(together[i * static_cast<size_t>(vocab) + static_cast<size_t>(v)], want[static_cast<size_t>(v)],
                  1e-4)
          << "logit row " << i << " (batch row " << rows[i] << "), id " << v;
    }
  }
}

}  // namespace
}  // namespace llmserve
