// Engine on the real stories260K model (llama2.c weights + tok512): batched == alone for
// 32 greedy prompts of 1..200 tokens (also against RunGreedy), again with a KV pool so
// small that preemption must happen, seeded sampling independent of the batch, and a
// stop string spanning two tokens. Uses OpenMP: not part of the ThreadSanitizer set.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/greedy_runner.h"
#include "model/kv_cache.h"
#include "model/model_loader.h"
#include "model/tokenizer/tokenizer_loader.h"
#include "model/transformer.h"
#include "scheduler/engine.h"
#include "tests/util/test_assets.h"
#include "tests/util/transformer_engine.h"

namespace llmserve {
namespace {

constexpr int32_t kMaxTokens = 48;
const absl::Duration kWait = absl::Seconds(600);  // a hang, not a timing assertion

// Story-like text for prompts (tok512 was trained on TinyStories).
constexpr const char* kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
    "red ball. One day, she saw a big dog near the tree. The dog was sad because he lost his bone. Lily "
    "wanted to help him, so she looked under the bench and behind the flowers. Then she found the bone in "
    "the sand and gave it to the dog. The dog was so happy that he wagged his tail and licked her hand. "
    "Lily laughed and said, \"You are my new friend!\" They played together all afternoon until the sun "
    "went down. When it was time to go home, Lily waved goodbye. Her mom made warm soup for dinner, and "
    "Lily told her all about the dog. Her mom smiled and said, \"It is good to help others.\" The next "
    "morning, Tom the little boy from next door came to play. He had a blue kite with a long tail. They "
    "ran up the hill and let the kite fly high in the sky. The wind was strong, and the kite danced like "
    "a bird. Suddenly the string broke and the kite flew away over the trees. Tom started to cry, but "
    "Lily hugged him and said they could make a new kite together. They used paper, sticks and a ribbon "
    "from her hair. The new kite was even better, and they were proud of what they made.";

class EngineGoldenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LLMSERVE_REQUIRE_ASSET(model_path, "models/llama2c/stories260K.bin");
    LLMSERVE_REQUIRE_ASSET(tok_path, "models/llama2c/tok512.bin");
    auto w = LoadModel(model_path);
    ASSERT_TRUE(w.ok()) << w.status();
    weights_ = *std::move(w);
    auto t = LoadTokenizer(tok_path);
    ASSERT_TRUE(t.ok()) << t.status();
    tok_ = *std::move(t);
    auto ids = tok_->Encode(kStory, EncodeOptions{});
    ASSERT_TRUE(ids.ok()) << ids.status();
    story_ = *std::move(ids);
    ASSERT_GE(story_.size(), 260u);
  }

  std::unique_ptr<Transformer> MakeTransformer() {
    RuntimeConfig rt;
    rt.weight_dtype = DType::kF32;
    rt.threads = 2;
    auto m = Transformer::Create(*weights_, rt);
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *std::move(m) : nullptr;
  }

  // An engine whose cache has `num_blocks` blocks of 16 tokens.
  std::unique_ptr<Engine> MakeEngine(int32_t num_blocks, int32_t max_prefill_chunk = 64) {
    auto model = MakeTransformer();
    if (model == nullptr) return nullptr;
    auto e = testing::StartTransformerEngine(std::move(model), tok_.get(),
                                             {.num_blocks = num_blocks, .max_prefill_chunk = max_prefill_chunk});
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? *std::move(e) : nullptr;
  }

  // 32 prompts: BOS then a slice of the story; lengths 1, 7, ..., 200 exactly.
  std::vector<std::vector<int32_t>> Prompts() const {
    std::vector<std::vector<int32_t>> out;
    for (int i = 0; i < 32; ++i) {
      const size_t len = 1 + static_cast<size_t>(i) * 199 / 31;
      const size_t off = (static_cast<size_t>(i) * 37) % (story_.size() - 200);
      std::vector<int32_t> p = {tok_->bos_id()};
      p.insert(p.end(), story_.begin() + static_cast<long>(off), story_.begin() + static_cast<long>(off + len - 1));
      out.push_back(std::move(p));
    }
    return out;
  }

  // The text a stream continuing `prompt` with `ids` carries: Decode(prompt + ids) after
  // Decode(prompt) (so a SentencePiece continuation keeps its leading space).
  std::string Continuation(const std::vector<int32_t>& prompt, const std::vector<int32_t>& ids) const {
    std::vector<int32_t> all = prompt;
    all.insert(all.end(), ids.begin(), ids.end());
    const std::string full = tok_->Decode(all), head = tok_->Decode(prompt);
    EXPECT_EQ(full.compare(0, head.size(), head), 0) << "prompt text is not a prefix";
    return full.substr(std::min(head.size(), full.size()));
  }

  static EngineRequest Greedy(const std::vector<int32_t>& prompt) {
    EngineRequest r;
    r.prompt = prompt;
    r.sampling.temperature = 0.0f;
    r.stop.max_tokens = kMaxTokens;
    return r;
  }

  static CollectedGeneration Run(Engine& e, EngineRequest r) {
    auto h = e.Submit(std::move(r));
    EXPECT_TRUE(h.ok()) << h.status();
    if (!h.ok()) return {};
    auto g = CollectGeneration(*h->channel, kWait);
    EXPECT_TRUE(g.ok()) << g.status();
    return g.ok() ? *std::move(g) : CollectedGeneration{};
  }

  static std::vector<CollectedGeneration> RunTogether(Engine& e, const std::vector<EngineRequest>& reqs) {
    std::vector<RequestHandle> hs;
    for (const EngineRequest& r : reqs) {
      auto h = e.Submit(r);
      EXPECT_TRUE(h.ok()) << h.status();
      hs.push_back(h.ok() ? *h : RequestHandle{});
    }
    std::vector<CollectedGeneration> out;
    for (const RequestHandle& h : hs) {
      if (h.channel == nullptr) {
        out.emplace_back();
        continue;
      }
      auto g = CollectGeneration(*h.channel, kWait);
      EXPECT_TRUE(g.ok()) << g.status();
      out.push_back(g.ok() ? *std::move(g) : CollectedGeneration{});
    }
    return out;
  }

  // Each prompt alone through a fresh engine, one after another.
  std::vector<CollectedGeneration> RunAlone(const std::vector<EngineRequest>& reqs) {
    std::unique_ptr<Engine> e = MakeEngine(64);
    std::vector<CollectedGeneration> out;
    if (e == nullptr) return out;
    for (const EngineRequest& r : reqs) out.push_back(Run(*e, r));
    return out;
  }

  // Checks `batched` against `alone` and RunGreedy, with the text and bookkeeping.
  void ExpectGreedyOutputs(const std::vector<std::vector<int32_t>>& prompts,
                           const std::vector<CollectedGeneration>& batched,
                           const std::vector<CollectedGeneration>& alone) {
    ASSERT_EQ(batched.size(), prompts.size());
    ASSERT_EQ(alone.size(), prompts.size());
    auto model = MakeTransformer();
    ASSERT_NE(model, nullptr);
    GreedyOptions go;
    go.max_tokens = kMaxTokens;
    go.stop_ids = {tok_->eos_id()};
    auto ref = RunGreedy(*model, prompts, go);
    ASSERT_TRUE(ref.ok()) << ref.status();
    for (size_t i = 0; i < prompts.size(); ++i) {
      SCOPED_TRACE("prompt " + std::to_string(i) + " of " + std::to_string(prompts[i].size()) + " tokens");
      EXPECT_EQ(batched[i].ids, alone[i].ids);
      EXPECT_EQ(alone[i].ids, (*ref)[i].generated);
      EXPECT_EQ(batched[i].text, alone[i].text);
      EXPECT_EQ(batched[i].text, Continuation(prompts[i], batched[i].ids));
      EXPECT_EQ(batched[i].final_event.reason, alone[i].final_event.reason);
      EXPECT_TRUE(batched[i].final_event.reason == SequenceState::kFinishedLength ||
                  batched[i].final_event.reason == SequenceState::kFinishedEos);
      EXPECT_EQ(batched[i].final_event.completion_tokens, static_cast<int32_t>(batched[i].ids.size()));
      EXPECT_EQ(batched[i].final_event.prompt_tokens, static_cast<int32_t>(prompts[i].size()));
    }
  }

  std::unique_ptr<ModelWeights> weights_;
  std::unique_ptr<Tokenizer> tok_;
  std::vector<int32_t> story_;
};

TEST_F(EngineGoldenTest, BatchedGreedyEqualsAlone) {
  const auto prompts = Prompts();
  ASSERT_EQ(prompts.front().size(), 1u);
  ASSERT_EQ(prompts.back().size(), 200u);
  std::vector<EngineRequest> reqs;
  for (const auto& p : prompts) reqs.push_back(Greedy(p));
  std::unique_ptr<Engine> e = MakeEngine(32 * 16);  // room for everything
  ASSERT_NE(e, nullptr);
  const std::vector<CollectedGeneration> batched = RunTogether(*e, reqs);
  ASSERT_TRUE(e->WaitIdle(kWait));
  EXPECT_EQ(e->Stats().preemptions, 0);
  EXPECT_EQ(e->Stats().blocks_used, 0);
  ExpectGreedyOutputs(prompts, batched, RunAlone(reqs));
}

TEST_F(EngineGoldenTest, PreemptionKeepsGreedyOutputs) {
  const auto prompts = Prompts();
  std::vector<EngineRequest> reqs;
  for (const auto& p : prompts) reqs.push_back(Greedy(p));
  // 40 blocks = 640 tokens for ~5000 tokens of work; the largest request needs 16.
  std::unique_ptr<Engine> e = MakeEngine(40, 48);
  ASSERT_NE(e, nullptr);
  const std::vector<CollectedGeneration> batched = RunTogether(*e, reqs);
  ASSERT_TRUE(e->WaitIdle(kWait));
  int64_t preemptions = 0;
  for (const auto& g : batched) preemptions += g.final_event.preemptions;
  EXPECT_GT(e->Stats().preemptions, 0);
  EXPECT_GT(preemptions, 0);
  EXPECT_EQ(e->Stats().blocks_used, 0);
  ExpectGreedyOutputs(prompts, batched, RunAlone(reqs));
}

TEST_F(EngineGoldenTest, SeededSamplingIndependentOfTheBatch) {
  const auto prompts = Prompts();
  auto sampled = [&](size_t prompt, uint64_t seed) {
    EngineRequest r = Greedy(prompts[prompt]);
    r.sampling.temperature = 0.8f;
    r.sampling.top_p = 0.9f;
    r.sampling.seed = seed;
    return r;
  };
  const EngineRequest target = sampled(5, 4242);
  std::vector<CollectedGeneration> alone = RunAlone({target});
  ASSERT_EQ(alone.size(), 1u);
  ASSERT_FALSE(alone[0].ids.empty());
  EXPECT_EQ(alone[0].final_event.seed, 4242u);

  std::vector<EngineRequest> batch;
  for (size_t i = 0; i < 16; ++i) batch.push_back(sampled((i * 3) % prompts.size(), 1000 + i));
  batch.insert(batch.begin() + 7, target);
  std::unique_ptr<Engine> e = MakeEngine(32 * 16);
  ASSERT_NE(e, nullptr);
  const std::vector<CollectedGeneration> got = RunTogether(*e, batch);
  ASSERT_EQ(got.size(), 17u);
  EXPECT_EQ(got[7].ids, alone[0].ids);
  EXPECT_EQ(got[7].text, alone[0].text);
  EXPECT_EQ(got[7].final_event.seed, 4242u);
  // The other seeds really sample: not every output equals greedy's.
  std::vector<EngineRequest> greedy;
  for (size_t i = 0; i < 16; ++i) greedy.push_back(Greedy(prompts[(i * 3) % prompts.size()]));
  const std::vector<CollectedGeneration> g = RunTogether(*e, greedy);
  int differ = 0;
  for (size_t i = 0; i < 16; ++i) differ += got[i < 7 ? i : i + 1].ids != g[i].ids ? 1 : 0;
  EXPECT_GT(differ, 0);
}

// A stop string made of the end of one token and the start of the next, found in an
// actual greedy output: generation stops there and the text excludes it.
TEST_F(EngineGoldenTest, StopStringSpanningTwoTokens) {
  std::unique_ptr<Engine> e = MakeEngine(64);
  ASSERT_NE(e, nullptr);
  auto prompt = tok_->Encode("Once upon a time", EncodeOptions{.add_bos = true});
  ASSERT_TRUE(prompt.ok()) << prompt.status();
  const CollectedGeneration full = Run(*e, Greedy(*prompt));
  ASSERT_GE(full.ids.size(), 10u);
  ASSERT_EQ(full.text, Continuation(*prompt, full.ids));
  bool found = false;
  for (size_t k = 4; k + 1 < full.ids.size() && !found; ++k) {
    const std::string before = Continuation(*prompt, std::vector<int32_t>(full.ids.begin(), full.ids.begin() + static_cast<long>(k) + 1));
    const std::string next = tok_->TokenBytes(full.ids[k + 1]);
    if (before.size() < 2 || next.size() < 2 || full.text.compare(0, before.size(), before) != 0) continue;
    const std::string stop = before.substr(before.size() - 2) + next.substr(0, 2);
    bool ascii = true;
    for (char ch : stop) ascii = ascii && static_cast<unsigned char>(ch) < 0x80;
    if (!ascii || full.text.find(stop) != before.size() - 2) continue;  // first occurrence must span k|k+1
    found = true;
    SCOPED_TRACE("stop string \"" + stop + "\" between tokens " + std::to_string(k) + " and " + std::to_string(k + 1));
    EngineRequest r = Greedy(*prompt);
    r.stop.stop_strings = {stop};
    const CollectedGeneration got = Run(*e, r);
    EXPECT_EQ(got.final_event.reason, SequenceState::kFinishedStopString);
    EXPECT_EQ(got.final_event.stop_string, stop);
    EXPECT_EQ(got.text, full.text.substr(0, before.size() - 2));
    EXPECT_EQ(got.text.find(stop), std::string::npos);
    EXPECT_EQ(got.ids, std::vector<int32_t>(full.ids.begin(), full.ids.begin() + static_cast<long>(k) + 2));
  }
  EXPECT_TRUE(found) << "no stop string spanning two tokens in: " << full.text;
}

}  // namespace
}  // namespace llmserve
