// Engine with the fake model (tests/util/fake_engine_model.h): Submit's checks, admission
// control, batched equals alone under both step policies, preemption, stop conditions,
// text and stop strings, logprobs, seeds. Runs under ThreadSanitizer.
// (Aborts, deadlines, failures, drain/stop, slow readers, the observer: engine_lifecycle_test.cc.)
#include "scheduler/engine.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/engine_test_util.h"
#include "tests/util/fake_engine_model.h"

namespace llmserve {
namespace {

using namespace ::llmserve::engine_test_util;  // NOLINT: the engine tests' shared vocabulary

TEST(EngineTest, CreateChecksTheConfigAgainstTheModel) {
  auto state = std::make_shared<FakeModelState>();
  EngineConfig c = SmallConfig();
  c.scheduler.block_size = 8;  // the fake's cache has 4
  EXPECT_EQ(Engine::Create(c, std::make_unique<FakeEngineModel>(FakeModelOptions{}, state), nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  c = SmallConfig();
  c.scheduler.num_blocks = 65;  // more than the cache
  EXPECT_EQ(Engine::Create(c, std::make_unique<FakeEngineModel>(FakeModelOptions{}, state), nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  c = SmallConfig();
  c.channel_capacity = 0;
  EXPECT_EQ(Engine::Create(c, std::make_unique<FakeEngineModel>(FakeModelOptions{}, state), nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto ok = Engine::Create(SmallConfig(), std::make_unique<FakeEngineModel>(FakeModelOptions{}, state), nullptr);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)->config().scheduler.num_blocks, 64);
  EXPECT_EQ((*ok)->config().scheduler.max_context, 256);
  EXPECT_EQ((*ok)->Stats().blocks_total, 64);
}

TEST(EngineTest, SubmitRefusesBadRequests) {
  FakeModelOptions opts;
  opts.num_blocks = 16;  // 64 tokens of cache
  Harness h(SmallConfig(), opts);
  ASSERT_NE(h.engine, nullptr);
  struct Case {
    const char* name;
    EngineRequest req;
  };
  std::vector<Case> cases;
  cases.push_back({"empty prompt", Greedy({}, 4)});
  cases.push_back({"id too large", Greedy({5, kVocab}, 4)});
  cases.push_back({"negative id", Greedy({-1, 5}, 4)});
  EngineRequest bad_temp = Greedy({5}, 4);
  bad_temp.sampling.temperature = -1.0f;
  cases.push_back({"temperature", bad_temp});
  EngineRequest bad_top_p = Greedy({5}, 4);
  bad_top_p.sampling.top_p = 0.0f;
  cases.push_back({"top_p", bad_top_p});
  cases.push_back({"max_tokens 0", Greedy({5}, 0)});
  EngineRequest bad_stop_id = Greedy({5}, 4);
  bad_stop_id.stop.stop_token_ids = {kVocab};
  cases.push_back({"stop id", bad_stop_id});
  cases.push_back({"beyond context", Greedy(Prompt(200, 1), 57)});  // 257 > 256
  cases.push_back({"beyond the cache", Greedy(Prompt(40, 1), 25)});  // 65 tokens > 16 blocks of 4
  EngineRequest stop_string = Greedy({5}, 4);
  stop_string.stop.stop_strings = {"x"};
  cases.push_back({"stop string without tokenizer", stop_string});
  for (Case& c : cases) {
    auto r = h.engine->Submit(c.req);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.name << ": " << r.status();
  }
  // The largest request that fits is accepted: 64 tokens, 16 blocks.
  h.engine->Start();
  RequestHandle ok = MustSubmit(*h.engine, Greedy(Prompt(40, 1), 24));
  CollectedGeneration g = Collect(ok);
  EXPECT_EQ(g.final_event.reason, SequenceState::kFinishedLength);
  EXPECT_EQ(g.ids, FakeGreedy(Prompt(40, 1), 24, kVocab));
}

TEST(EngineTest, MaxWaitingGivesResourceExhausted) {
  EngineConfig c = SmallConfig();
  c.scheduler.max_waiting = 4;
  Harness h(c);
  ASSERT_NE(h.engine, nullptr);
  std::vector<RequestHandle> hs;
  for (int i = 0; i < 4; ++i) hs.push_back(MustSubmit(*h.engine, Greedy(Prompt(5, i), 6)));  // not started: all wait
  EXPECT_EQ(h.engine->Stats().waiting, 4);
  auto refused = h.engine->Submit(Greedy(Prompt(5, 9), 6));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  h.engine->Start();
  for (int i = 0; i < 4; ++i) {
    CollectedGeneration g = Collect(hs[static_cast<size_t>(i)]);
    EXPECT_EQ(g.ids, FakeGreedy(Prompt(5, i), 6, kVocab)) << i;
  }
  ASSERT_TRUE(h.engine->WaitIdle(kWait));
  // Scheduled requests no longer count: four more are accepted.
  for (int i = 0; i < 4; ++i) hs[static_cast<size_t>(i)] = MustSubmit(*h.engine, Greedy(Prompt(5, i), 6));
  for (auto& x : hs) EXPECT_EQ(Collect(x).final_event.reason, SequenceState::kFinishedLength);
}

class EnginePolicyTest : public ::testing::TestWithParam<StepPolicy> {};

// Many requests at once (chunked prefill, decode batching): each output equals the
// fake's greedy output alone; the final's bookkeeping is right; blocks all come back.
TEST_P(EnginePolicyTest, BatchedGreedyEqualsAlone) {
  EngineConfig c = SmallConfig();
  c.scheduler.step_policy = GetParam();
  c.scheduler.max_prefill_chunk = 7;
  Harness h(c);
  ASSERT_NE(h.engine, nullptr);
  h.engine->Start();
  std::vector<RequestHandle> hs;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 12; ++i) {
    prompts.push_back(Prompt(1 + (i * 5) % 23, i));
    EngineRequest r = Greedy(prompts.back(), 3 + i * 2);
    r.request_id = "req-" + std::to_string(i);
    hs.push_back(MustSubmit(*h.engine, std::move(r)));
  }
  for (int i = 0; i < 12; ++i) {
    CollectedGeneration g = Collect(hs[static_cast<size_t>(i)]);
    EXPECT_EQ(g.ids, FakeGreedy(prompts[static_cast<size_t>(i)], 3 + i * 2, kVocab)) << "request " << i;
    EXPECT_EQ(g.final_event.reason, SequenceState::kFinishedLength);
    EXPECT_TRUE(g.final_event.status.ok());
    EXPECT_EQ(g.final_event.prompt_tokens, static_cast<int32_t>(prompts[static_cast<size_t>(i)].size()));
    EXPECT_GE(g.final_event.total_time, g.final_event.time_to_first_token);
    EXPECT_GE(g.final_event.time_to_first_token, g.final_event.queue_time);
    EXPECT_TRUE(g.text.empty());  // no tokenizer
  }
  ASSERT_TRUE(h.engine->WaitIdle(kWait));
  EngineStats s = h.engine->Stats();
  EXPECT_EQ(s.running, 0);
  EXPECT_EQ(s.waiting, 0);
  EXPECT_EQ(s.blocks_used, 0);
  EXPECT_GT(s.steps, 0);
}

INSTANTIATE_TEST_SUITE_P(Policies, EnginePolicyTest, ::testing::Values(StepPolicy::kMixed, StepPolicy::kSeparate),
                         [](const auto& info) { return std::string(StepPolicyName(info.param)); });

// A pool far too small for the load: sequences are preempted and recomputed; every
// output still equals its output alone (greedy and seeded), and the fake's cache checks
// (positions, prefix chains, block ownership) hold throughout.
TEST(EngineTest, PreemptionKeepsOutputsIdentical) {
  FakeModelOptions opts;
  opts.num_blocks = 16;
  EngineConfig c = SmallConfig();
  c.scheduler.max_prefill_chunk = 8;
  std::vector<CollectedGeneration> alone;
  std::vector<EngineRequest> reqs;
  for (int i = 0; i < 8; ++i) {
    reqs.push_back(i % 2 == 0 ? Greedy(Prompt(6 + i, i), 30) : Sampled(Prompt(6 + i, i), 30, 1000 + i));
  }
  {
    Harness h(c, opts);
    ASSERT_NE(h.engine, nullptr);
    h.engine->Start();
    for (const EngineRequest& r : reqs) alone.push_back(Collect(MustSubmit(*h.engine, r)));  // one at a time
    EXPECT_EQ(h.engine->Stats().preemptions, 0);
  }
  Harness h(c, opts);
  ASSERT_NE(h.engine, nullptr);
  std::vector<RequestHandle> hs;
  for (const EngineRequest& r : reqs) hs.push_back(MustSubmit(*h.engine, r));
  h.engine->Start();
  int32_t preemptions = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    CollectedGeneration g = Collect(hs[i]);
    EXPECT_EQ(g.ids, alone[i].ids) << "request " << i;
    if (i % 2 == 0) {
      EXPECT_EQ(g.ids, FakeGreedy(reqs[i].prompt, 30, kVocab)) << "request " << i;
    } else {
      EXPECT_EQ(g.final_event.seed, 1000u + i);
    }
    preemptions += g.final_event.preemptions;
  }
  ASSERT_TRUE(h.engine->WaitIdle(kWait));
  EXPECT_GT(h.engine->Stats().preemptions, 0);
  EXPECT_GT(preemptions, 0);
  EXPECT_EQ(h.engine->Stats().blocks_used, 0);
}

TEST(EngineTest, StopTokensAndEos) {
  const std::vector<int32_t> prompt = Prompt(9, 3);
  const std::vector<int32_t> full = FakeGreedy(prompt, 20, kVocab);
  ASSERT_EQ(full.size(), 20u);
  // The first id that occurs at position >= 3 and not before it.
  size_t k = 3;
  while (std::find(full.begin(), full.begin() + static_cast<long>(k), full[k]) != full.begin() + static_cast<long>(k)) ++k;
  ASSERT_LT(k, full.size());
  const int32_t stop_id = full[k];
  const std::vector<int32_t> expect(full.begin(), full.begin() + static_cast<long>(k));
  {
    Harness h(SmallConfig());
    h.engine->Start();
    EngineRequest r = Greedy(prompt, 20);
    r.stop.stop_token_ids = {stop_id};
    CollectedGeneration g = Collect(MustSubmit(*h.engine, r));
    EXPECT_EQ(g.final_event.reason, SequenceState::kFinishedStopToken);
    EXPECT_EQ(g.ids, expect);
  }
  EngineConfig c = SmallConfig();
  c.scheduler.eos_ids = {stop_id};
  Harness h(c);
  h.engine->Start();
  CollectedGeneration eos = Collect(MustSubmit(*h.engine, Greedy(prompt, 20)));
  EXPECT_EQ(eos.final_event.reason, SequenceState::kFinishedEos);
  EXPECT_EQ(eos.ids, expect);
  EngineRequest ign = Greedy(prompt, 20);
  ign.stop.ignore_eos = true;
  CollectedGeneration ignored = Collect(MustSubmit(*h.engine, ign));
  EXPECT_EQ(ignored.final_event.reason, SequenceState::kFinishedLength);
  EXPECT_EQ(ignored.ids, full);
}

// With a tokenizer: the streamed text equals Decode(ids) (byte tokens split "é" and
// make invalid sequences: the deltas stay valid UTF-8); a stop string spanning two
// tokens ends the request and is cut from the text.
TEST(EngineTest, TextAndStopStringAcrossTokens) {
  std::unique_ptr<Tokenizer> tok = ::llmserve::testing::MakeTinyTokenizer();
  ASSERT_NE(tok, nullptr);
  ASSERT_EQ(tok->vocab_size(), kVocab);
  Harness h(SmallConfig(), {}, tok.get());
  ASSERT_NE(h.engine, nullptr);
  h.engine->Start();
  bool found = false;
  for (int salt = 0; salt < 40 && !found; ++salt) {
    const std::vector<int32_t> prompt = Prompt(5, salt);
    CollectedGeneration g = Collect(MustSubmit(*h.engine, Greedy(prompt, 40)));
    ASSERT_EQ(g.ids, FakeGreedy(prompt, 40, kVocab));
    ASSERT_EQ(g.text, tok->Decode(g.ids)) << "salt " << salt;
    // A stop string made of the last char of token k and the first of token k+1, whose
    // first occurrence in the text is exactly there.
    std::string text;
    for (size_t k = 0; k + 1 < g.ids.size() && !found; ++k) {
      const std::string a = tok->Decode(std::vector<int32_t>{g.ids[k]});
      const std::string b = tok->TokenBytes(g.ids[k + 1]);
      text = tok->Decode(std::vector<int32_t>(g.ids.begin(), g.ids.begin() + static_cast<long>(k) + 1));
      if (a.empty() || b.empty() || static_cast<unsigned char>(a.back()) >= 0x80 ||
          static_cast<unsigned char>(b[0]) >= 0x80 || text != g.text.substr(0, text.size())) {
        continue;
      }
      const std::string stop = std::string(1, a.back()) + b[0];
      if (g.text.find(stop) != text.size() - 1) continue;
      found = true;
      EngineRequest r = Greedy(prompt, 40);
      r.stop.stop_strings = {"never-there", stop};
      CollectedGeneration s = Collect(MustSubmit(*h.engine, r));
      EXPECT_EQ(s.final_event.reason, SequenceState::kFinishedStopString);
      EXPECT_EQ(s.final_event.stop_string, stop);
      EXPECT_EQ(s.text, g.text.substr(0, text.size() - 1));
      EXPECT_EQ(s.ids, std::vector<int32_t>(g.ids.begin(), g.ids.begin() + static_cast<long>(k) + 2));
    }
  }
  EXPECT_TRUE(found) << "no usable stop string in 40 outputs";
}

TEST(EngineTest, LogprobsMatchTheModelsLogits) {
  Harness h(SmallConfig());
  h.engine->Start();
  const std::vector<int32_t> prompt = Prompt(7, 2);
  EngineRequest r = Greedy(prompt, 5);
  r.sampling.want_logprobs = true;
  r.sampling.logprobs = 3;
  CollectedGeneration g = Collect(MustSubmit(*h.engine, r));
  ASSERT_EQ(g.ids.size(), 5u);
  ASSERT_EQ(g.logprobs.size(), 5u);
  std::vector<int32_t> tokens = prompt;
  for (size_t i = 0; i < g.ids.size(); ++i) {
    const std::vector<float> logits = FakeLogitsFor(tokens, kVocab);
    const float mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float l : logits) sum += std::exp(static_cast<double>(l - mx));
    const double want = logits[static_cast<size_t>(g.ids[i])] - mx - std::log(sum);
    EXPECT_EQ(g.logprobs[i].id, g.ids[i]);
    EXPECT_NEAR(g.logprobs[i].logprob, want, 1e-4) << i;
    ASSERT_EQ(g.logprobs[i].top.size(), 3u);
    EXPECT_EQ(g.logprobs[i].top[0].first, g.ids[i]);  // greedy: the top one
    tokens.push_back(g.ids[i]);
  }
  // Without want_logprobs there are none.
  CollectedGeneration plain = Collect(MustSubmit(*h.engine, Greedy(prompt, 5)));
  EXPECT_TRUE(plain.logprobs.empty());
  EXPECT_EQ(plain.ids, g.ids);
}

TEST(EngineTest, SeedIsReportedAndReproduces) {
  Harness h(SmallConfig());
  h.engine->Start();
  EngineRequest r = Sampled(Prompt(6, 4), 24, 0);
  r.sampling.seed.reset();
  CollectedGeneration a = Collect(MustSubmit(*h.engine, r));
  r.sampling.seed = a.final_event.seed;
  CollectedGeneration b = Collect(MustSubmit(*h.engine, r));
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(b.final_event.seed, a.final_event.seed);
}

}  // namespace
}  // namespace llmserve
