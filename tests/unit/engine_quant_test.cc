// Batch invariance with quantized weights, through the engine, on llama.cpp's tiny
// quantized files (random weights: near-ties are common, so any arithmetic that depended
// on the batch would show): 64 greedy requests of 1..120 prompt tokens give the same
// tokens batched together as alone, with prompts prefilled in chunks of 7 as whole, and
// with a KV pool so small that requests are preempted and recomputed. Also seeded
// sampling batched == alone. Uses OpenMP: not part of the ThreadSanitizer set.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/kv_cache.h"
#include "model/model_loader.h"
#include "model/tokenizer/tokenizer_loader.h"
#include "model/transformer.h"
#include "scheduler/engine.h"
#include "tests/util/test_assets.h"
#include "tests/util/transformer_engine.h"

namespace llmserve {
namespace {

constexpr int32_t kMaxTokens = 16;
const absl::Duration kWait = absl::Seconds(600);  // a hang, not a timing assertion

class EngineQuantTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    LLMSERVE_REQUIRE_ASSET(path, std::string("models/gguf/quant/") + GetParam());
    auto w = LoadModel(path);
    ASSERT_TRUE(w.ok()) << w.status();
    weights_ = *std::move(w);
    auto t = LoadTokenizer(path);
    ASSERT_TRUE(t.ok()) << t.status();
    tok_ = *std::move(t);
  }

  std::unique_ptr<Engine> MakeEngine(int32_t num_blocks, int32_t max_prefill_chunk) {
    RuntimeConfig rt;
    rt.weight_dtype = DType::kBF16;
    rt.threads = 2;
    auto model = Transformer::Create(*weights_, rt);
    EXPECT_TRUE(model.ok()) << model.status();
    if (!model.ok()) return nullptr;
    auto e = testing::StartTransformerEngine(*std::move(model), tok_.get(),
                                             {.num_blocks = num_blocks,
                                              .kv_dtype = DType::kBF16,
                                              .max_running = 64,
                                              .max_batched_tokens = 512,
                                              .max_prefill_chunk = max_prefill_chunk});
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? *std::move(e) : nullptr;
  }

  // 64 prompts: BOS then random ids, 1 .. 120 tokens in all.
  std::vector<EngineRequest> Requests(bool sampled) const {
    std::mt19937 rng(7);
    std::uniform_int_distribution<int32_t> id(259, static_cast<int32_t>(weights_->config.vocab_size) - 1);
    std::vector<EngineRequest> out;
    for (int i = 0; i < 64; ++i) {
      EngineRequest r;
      r.prompt = {tok_->bos_id()};
      const int len = 1 + i * 119 / 63;
      while (static_cast<int>(r.prompt.size()) < len) r.prompt.push_back(id(rng));
      r.sampling.temperature = sampled ? 0.9f : 0.0f;
      r.sampling.seed = 100 + static_cast<uint64_t>(i);
      r.stop.max_tokens = kMaxTokens;
      r.stop.ignore_eos = true;
      out.push_back(std::move(r));
    }
    return out;
  }

  static std::vector<std::vector<int32_t>> RunTogether(Engine& e, const std::vector<EngineRequest>& reqs) {
    auto out = testing::SubmitAndCollect(e, reqs, kWait);
    for (const auto& ids : out) EXPECT_EQ(ids.size(), static_cast<size_t>(kMaxTokens));
    return out;
  }

  std::vector<std::vector<int32_t>> RunAlone(const std::vector<EngineRequest>& reqs) {
    std::unique_ptr<Engine> e = MakeEngine(64, 512);
    std::vector<std::vector<int32_t>> out;
    if (e == nullptr) return out;
    for (const EngineRequest& r : reqs) out.push_back(RunTogether(*e, {r})[0]);
    return out;
  }

  std::unique_ptr<ModelWeights> weights_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_P(EngineQuantTest, BatchedChunkedAndPreemptedEqualAlone) {
  const std::vector<EngineRequest> reqs = Requests(/*sampled=*/false);
  const auto alone = RunAlone(reqs);
  ASSERT_EQ(alone.size(), reqs.size());

  std::unique_ptr<Engine> batched = MakeEngine(64 * 9, 512);
  ASSERT_NE(batched, nullptr);
  const auto together = RunTogether(*batched, reqs);
  EXPECT_EQ(batched->Stats().preemptions, 0);

  std::unique_ptr<Engine> chunked = MakeEngine(64 * 9, 7);
  ASSERT_NE(chunked, nullptr);
  const auto in_chunks = RunTogether(*chunked, reqs);

  // 60 blocks (960 tokens) for ~4800 tokens of work: requests are preempted.
  std::unique_ptr<Engine> small = MakeEngine(60, 512);
  ASSERT_NE(small, nullptr);
  const auto preempted = RunTogether(*small, reqs);
  ASSERT_TRUE(small->WaitIdle(kWait));
  EXPECT_GT(small->Stats().preemptions, 0);

  for (size_t i = 0; i < reqs.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i) + " of " + std::to_string(reqs[i].prompt.size()) + " tokens");
    EXPECT_EQ(together[i], alone[i]);
    EXPECT_EQ(in_chunks[i], alone[i]);
    EXPECT_EQ(preempted[i], alone[i]);
  }
}

TEST_P(EngineQuantTest, SeededSamplingBatchedEqualsAlone) {
  const std::vector<EngineRequest> reqs = Requests(/*sampled=*/true);
  const std::vector<EngineRequest> some(reqs.begin(), reqs.begin() + 8);
  const auto alone = RunAlone(some);
  std::unique_ptr<Engine> e = MakeEngine(64 * 9, 512);
  ASSERT_NE(e, nullptr);
  const auto together = RunTogether(*e, reqs);
  for (size_t i = 0; i < some.size(); ++i) EXPECT_EQ(together[i], alone[i]) << "request " << i;
}

INSTANTIATE_TEST_SUITE_P(TinyQuantFiles, EngineQuantTest, ::testing::Values("tiny-Q4_K_M.gguf", "tiny-Q8_0.gguf"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string n = i.param;
                           n = n.substr(5, n.size() - 10);  // "Q4_K_M"
                           return n;
                         });

}  // namespace
}  // namespace llmserve
