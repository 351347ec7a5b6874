// Prefix caching through the engine on real weights: stories260K (llama2.c, f32) and
// llama.cpp's tiny Q8_0 / Q4_K_M files. Requests that share prompt prefixes (three
// "system prompts", then their own tokens; some repeat a whole earlier prompt) give the
// same tokens with prefix caching on as with it off, greedy and seeded, batched, chunked,
// with a pool small enough to preempt, on a second pass that finds everything cached, and
// over the turns of chats (whole blocks shared, partial last blocks copied).
// After each run no block is used and used + free + cached blocks are the whole pool.
// Uses OpenMP: not part of the ThreadSanitizer set.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/model_loader.h"
#include "model/tokenizer/tokenizer_loader.h"
#include "model/transformer.h"
#include "scheduler/engine.h"
#include "tests/util/test_assets.h"
#include "tests/util/transformer_engine.h"

namespace llmserve {
namespace {

constexpr int32_t kMaxTokens = 12;
const absl::Duration kWait = absl::Seconds(600);  // a hang, not a timing assertion

struct ModelFile {
  const char* name;       // test name
  const char* model;      // under LLMSERVE_TEST_ASSETS
  const char* tokenizer;  // "" = the model file's own
  DType weight_dtype;
};

class EnginePrefixCacheTest : public ::testing::TestWithParam<ModelFile> {
 protected:
  void SetUp() override {
    const ModelFile& f = GetParam();
    LLMSERVE_REQUIRE_ASSET(model_path, f.model);
    std::string tok_path = model_path;
    if (*f.tokenizer != '\0') {
      LLMSERVE_REQUIRE_ASSET(t, f.tokenizer);
      tok_path = t;
    }
    auto w = LoadModel(model_path);
    ASSERT_TRUE(w.ok()) << w.status();
    weights_ = *std::move(w);
    auto t = LoadTokenizer(tok_path);
    ASSERT_TRUE(t.ok()) << t.status();
    tok_ = *std::move(t);
  }

  std::unique_ptr<Engine> MakeEngine(bool caching, int32_t num_blocks, int32_t chunk, DType kv = DType::kF32) {
    RuntimeConfig rt;
    rt.weight_dtype = GetParam().weight_dtype;
    rt.threads = 2;
    auto model = Transformer::Create(*weights_, rt);
    EXPECT_TRUE(model.ok()) << model.status();
    if (!model.ok()) return nullptr;
    auto e = testing::StartTransformerEngine(*std::move(model), tok_.get(),
                                             {.num_blocks = num_blocks,
                                              .kv_dtype = kv,
                                              .max_running = 32,
                                              .max_batched_tokens = 256,
                                              .max_prefill_chunk = chunk,
                                              .prefix_caching = caching});
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? *std::move(e) : nullptr;
  }

  // 32 prompts: BOS, one of three shared prefixes of 40 tokens, then 0..37 own ids;
  // every fourth repeats the previous prompt exactly. Ids avoid the byte tokens.
  std::vector<EngineRequest> Requests(bool sampled) const {
    const auto vocab = static_cast<int32_t>(weights_->config.vocab_size);
    std::mt19937 rng(11);
    std::uniform_int_distribution<int32_t> id(vocab > 300 ? 259 : 3, vocab - 1);
    std::vector<std::vector<int32_t>> shared(3);
    for (auto& p : shared) {
      p = {tok_->bos_id()};
      while (p.size() < 41) p.push_back(id(rng));
    }
    std::vector<EngineRequest> out;
    for (int i = 0; i < 32; ++i) {
      EngineRequest r;
      if (i % 4 == 3) {
        r.prompt = out.back().prompt;
      } else {
        r.prompt = shared[static_cast<size_t>(i % 3)];
        for (int k = 0; k < (i * 7) % 38; ++k) r.prompt.push_back(id(rng));
      }
      r.sampling.temperature = sampled ? 0.9f : 0.0f;
      r.sampling.seed = 500 + static_cast<uint64_t>(i);
      r.stop.max_tokens = kMaxTokens;
      r.stop.ignore_eos = true;
      out.push_back(std::move(r));
    }
    return out;
  }

  static std::vector<std::vector<int32_t>> Run(Engine& e, const std::vector<EngineRequest>& reqs) {
    auto out = testing::SubmitAndCollect(e, reqs, kWait);
    EXPECT_TRUE(e.WaitIdle(kWait));
    const EngineStats s = e.Stats();
    EXPECT_EQ(s.blocks_used, 0);
    EXPECT_LE(s.blocks_cached, s.blocks_total);
    return out;
  }

  // Each request alone, caching off: the reference.
  std::vector<std::vector<int32_t>> Reference(const std::vector<EngineRequest>& reqs, DType kv = DType::kF32) {
    std::unique_ptr<Engine> e = MakeEngine(/*caching=*/false, 64, 64, kv);
    std::vector<std::vector<int32_t>> out;
    if (e == nullptr) return out;
    for (const EngineRequest& r : reqs) out.push_back(Run(*e, {r})[0]);
    EXPECT_EQ(e->Stats().blocks_cached, 0);
    return out;
  }

  void ExpectSame(const std::vector<std::vector<int32_t>>& got, const std::vector<std::vector<int32_t>>& want,
                  const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].size(), static_cast<size_t>(kMaxTokens)) << what << " request " << i;
      EXPECT_EQ(got[i], want[i]) << what << " request " << i;
    }
  }

  std::unique_ptr<ModelWeights> weights_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_P(EnginePrefixCacheTest, GreedyOutputsEqualCachingOff) {
  const std::vector<EngineRequest> reqs = Requests(/*sampled=*/false);
  const auto want = Reference(reqs);

  std::unique_ptr<Engine> batched = MakeEngine(true, 256, 64);
  ASSERT_NE(batched, nullptr);
  ExpectSame(Run(*batched, reqs), want, "batched");
  EXPECT_GT(batched->Stats().prefix_hit_tokens, 0);
  const int64_t hits_first = batched->Stats().prefix_hit_tokens;
  ExpectSame(Run(*batched, reqs), want, "second pass");  // nearly every prompt cached now
  EXPECT_GT(batched->Stats().prefix_hit_tokens - hits_first, hits_first);

  std::unique_ptr<Engine> chunked = MakeEngine(true, 256, 7);
  ASSERT_NE(chunked, nullptr);
  ExpectSame(Run(*chunked, reqs), want, "chunked");

  // 24 blocks (384 tokens) for ~2000 tokens of work: preemption and eviction.
  std::unique_ptr<Engine> small = MakeEngine(true, 24, 64);
  ASSERT_NE(small, nullptr);
  ExpectSame(Run(*small, reqs), want, "small pool");
  EXPECT_GT(small->Stats().preemptions, 0);
  EXPECT_GT(small->Stats().prefix_evictions, 0);
}

TEST_P(EnginePrefixCacheTest, SeededSamplingEqualsCachingOff) {
  const std::vector<EngineRequest> reqs = Requests(/*sampled=*/true);
  const auto want = Reference(reqs);
  std::unique_ptr<Engine> e = MakeEngine(true, 256, 64);
  ASSERT_NE(e, nullptr);
  ExpectSame(Run(*e, reqs), want, "batched");
  ExpectSame(Run(*e, reqs), want, "second pass");
  EXPECT_GT(e->Stats().prefix_hit_tokens, 0);
}

TEST_P(EnginePrefixCacheTest, ChatTurnsReuseTheWholeConversationAndEqualCachingOff) {
  // 6 conversations of 3 turns; each turn resends the conversation so far (prompt and
  // reply) and 5 new ids. Whole blocks are shared and each conversation's partial last
  // block is copied, so every turn after the first computes only its new ids and the
  // last reply token (never fed): the hits are every computed token of the last turn.
  // The cache holds bf16 KV here, as the server's does.
  const DType kv = DType::kBF16;
  std::vector<EngineRequest> turn = Requests(/*sampled=*/false);
  turn.resize(6);
  std::unique_ptr<Engine> e = MakeEngine(true, 256, 64, kv);
  ASSERT_NE(e, nullptr);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> id(3, static_cast<int32_t>(weights_->config.vocab_size) - 1);
  for (int t = 0; t < 3; ++t) {
    SCOPED_TRACE(t);
    const auto want = Reference(turn, kv);
    const int64_t hits_before = e->Stats().prefix_hit_tokens;
    ExpectSame(Run(*e, turn), want, "chat turn");
    if (t > 0) {
      int64_t computed_before = 0;  // every token of the last turn but its last reply token
      for (const EngineRequest& r : turn) computed_before += static_cast<int64_t>(r.prompt.size()) - 5 - 1;
      EXPECT_EQ(e->Stats().prefix_hit_tokens - hits_before, computed_before);
    }
    for (size_t i = 0; i < turn.size(); ++i) {
      std::vector<int32_t>& p = turn[i].prompt;
      p.insert(p.end(), want[i].begin(), want[i].end());
      for (int k = 0; k < 5; ++k) p.push_back(id(rng));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, EnginePrefixCacheTest,
                         ::testing::Values(ModelFile{"stories260K", "models/llama2c/stories260K.bin",
                                                     "models/llama2c/tok512.bin", DType::kF32},
                                           ModelFile{"Q8_0", "models/gguf/quant/tiny-Q8_0.gguf", "", DType::kBF16},
                                           ModelFile{"Q4_K_M", "models/gguf/quant/tiny-Q4_K_M.gguf", "",
                                                     DType::kBF16}),
                         [](const ::testing::TestParamInfo<ModelFile>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace llmserve
