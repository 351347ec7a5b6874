// Constrained generation through the engine (over the fake model and the tiny
// tokenizer): every output matches its constraint and ends as the constraint says;
// outputs are the same alone, batched and preempted; a constraint the vocabulary cannot
// satisfy ends the request with an error, not a crash.
#include <mutex>
#include <regex>

#include "constraint/constraint_spec.h"
#include "gtest/gtest.h"
#include "tests/util/engine_test_util.h"

namespace llmserve {
namespace {

using namespace engine_test_util;

std::shared_ptr<constraint::CompiledConstraint> Compile(Engine& e, constraint::ConstraintSpec spec) {
  EXPECT_NE(e.constraints(), nullptr);
  auto got = e.constraints()->Get(spec);
  EXPECT_TRUE(got.ok()) << got.status();
  return got.ok() ? got->constraint : nullptr;
}

constraint::ConstraintSpec Regex(std::string re) {
  constraint::ConstraintSpec s;
  s.kind = constraint::ConstraintKind::kRegex;
  s.text = std::move(re);
  return s;
}

EngineConfig ConfigWithEos() {
  EngineConfig c = SmallConfig();
  c.scheduler.eos_ids = {2};
  return c;
}

TEST(EngineConstraintTest, OutputsMatchAndEndWhereTheConstraintSays) {
  std::unique_ptr<Tokenizer> tok = ::llmserve::testing::MakeTinyTokenizer();
  Harness h(ConfigWithEos(), {}, tok.get());
  ASSERT_NE(h.engine, nullptr);
  h.engine->Start();
  const std::regex want("[a-z]{5,9}");
  for (int i = 0; i < 12; ++i) {
    EngineRequest r = i % 2 ? Sampled(Prompt(5 + i, i), 40, 77 + i) : Greedy(Prompt(5 + i, i), 40);
    r.constraint = Compile(*h.engine, Regex("[a-z]{5,9}"));
    CollectedGeneration g = Collect(MustSubmit(*h.engine, r));
    EXPECT_TRUE(std::regex_match(g.text, want)) << "request " << i << ": '" << g.text << "'";
    EXPECT_TRUE(g.final_event.reason == SequenceState::kFinishedConstraint ||
                g.final_event.reason == SequenceState::kFinishedEos)
        << SequenceStateName(g.final_event.reason);
    if (g.final_event.reason == SequenceState::kFinishedConstraint) {
      EXPECT_EQ(g.text.size(), 9u);
    }
  }
  // Choices: exactly one of them.
  constraint::ConstraintSpec choice;
  choice.kind = constraint::ConstraintKind::kChoice;
  choice.choices = {"cat", "dog", "sun and sky"};
  for (int i = 0; i < 6; ++i) {
    EngineRequest r = Sampled(Prompt(7, i), 40, 5 + i);
    r.constraint = Compile(*h.engine, choice);
    CollectedGeneration g = Collect(MustSubmit(*h.engine, r));
    EXPECT_TRUE(g.text == "cat" || g.text == "dog" || g.text == "sun and sky") << g.text;
  }
}

// Batched with others and preempted in a tiny pool, a constrained request's output is
// the same as alone (its matcher state survives recompute: generated tokens are kept).
TEST(EngineConstraintTest, SameAloneBatchedAndPreempted) {
  std::unique_ptr<Tokenizer> tok = ::llmserve::testing::MakeTinyTokenizer();
  FakeModelOptions opts;
  opts.num_blocks = 16;
  EngineConfig c = ConfigWithEos();
  c.scheduler.max_prefill_chunk = 8;
  std::vector<EngineRequest> reqs;
  for (int i = 0; i < 8; ++i) {
    reqs.push_back(i % 2 == 0 ? Greedy(Prompt(6 + i, i), 30) : Sampled(Prompt(6 + i, i), 30, 1000 + i));
  }
  const char* patterns[] = {"[a-z]{10,20}", "(the|cat|sat|on|mat| )+\\.", "[a-m]+,[n-z]+"};
  std::vector<CollectedGeneration> alone;
  {
    Harness h(c, opts, tok.get());
    ASSERT_NE(h.engine, nullptr);
    h.engine->Start();
    for (size_t i = 0; i < reqs.size(); ++i) {
      EngineRequest r = reqs[i];
      r.constraint = Compile(*h.engine, Regex(patterns[i % 3]));
      alone.push_back(Collect(MustSubmit(*h.engine, r)));
    }
  }
  Harness h(c, opts, tok.get());
  ASSERT_NE(h.engine, nullptr);
  std::vector<RequestHandle> hs;
  for (size_t i = 0; i < reqs.size(); ++i) {
    EngineRequest r = reqs[i];
    r.constraint = Compile(*h.engine, Regex(patterns[i % 3]));
    hs.push_back(MustSubmit(*h.engine, r));
  }
  h.engine->Start();
  int32_t preemptions = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    CollectedGeneration g = Collect(hs[i]);
    EXPECT_EQ(g.ids, alone[i].ids) << "request " << i;
    EXPECT_EQ(g.final_event.reason, alone[i].final_event.reason) << "request " << i;
    EXPECT_TRUE(std::regex_match(g.text, std::regex(patterns[i % 3])) ||
                g.final_event.reason == SequenceState::kFinishedLength)
        << "request " << i << ": " << g.text;
    preemptions += g.final_event.preemptions;
  }
  EXPECT_GT(preemptions, 0);
}

// The tiny vocabulary has no digits: the first mask allows nothing, and the request ends
// with an error that says so; the engine serves the next request.
TEST(EngineConstraintTest, UnsatisfiableConstraintEndsWithError) {
  std::unique_ptr<Tokenizer> tok = ::llmserve::testing::MakeTinyTokenizer();
  Harness h(ConfigWithEos(), {}, tok.get());
  ASSERT_NE(h.engine, nullptr);
  h.engine->Start();
  EngineRequest r = Greedy(Prompt(5, 1), 10);
  r.constraint = Compile(*h.engine, Regex("[0-9]+"));
  CollectedGeneration g = Collect(MustSubmit(*h.engine, r));
  EXPECT_EQ(g.final_event.reason, SequenceState::kFinishedError);
  EXPECT_NE(g.final_event.status.message().find("allows no token"), std::string::npos) << g.final_event.status;
  EXPECT_TRUE(g.ids.empty()) << "a token sampled without the mask was sent";
  CollectedGeneration ok = Collect(MustSubmit(*h.engine, Greedy(Prompt(5, 1), 10)));
  std::vector<int32_t> want = FakeGreedy(Prompt(5, 1), 10, kVocab);
  want.erase(std::find(want.begin(), want.end(), 2), want.end());  // EOS (2) ends it
  EXPECT_EQ(ok.ids, want);
}

// Counts the masks the engine reports, step by step.
class MaskCountingObserver : public EngineObserver {
 public:
  void OnStep(const StepReport& r) override {
    std::lock_guard<std::mutex> l(mu_);
    masks_ += r.constraint_masks;
    negative_ = negative_ || r.constraint_mask_time < absl::ZeroDuration();
    no_time_ = no_time_ || (r.constraint_masks == 0 && r.constraint_mask_time != absl::ZeroDuration());
  }
  std::mutex mu_;
  int64_t masks_ = 0;
  bool negative_ = false, no_time_ = false;
};

// The observer hears of one mask for every token sampled under a constraint, including
// the step where the request finishes and its mask state goes away.
TEST(EngineConstraintTest, ObserverCountsOneMaskPerConstrainedSample) {
  std::unique_ptr<Tokenizer> tok = ::llmserve::testing::MakeTinyTokenizer();
  MaskCountingObserver obs;
  Harness h(ConfigWithEos(), {}, tok.get(), &obs);
  ASSERT_NE(h.engine, nullptr);
  h.engine->Start();
  std::vector<RequestHandle> hs;
  for (int i = 0; i < 6; ++i) {
    EngineRequest r = Sampled(Prompt(4 + i, i), 40, 300 + i);
    r.constraint = Compile(*h.engine, Regex(i % 2 ? "[a-z]{3,6}" : "(cat|dog)"));
    hs.push_back(MustSubmit(*h.engine, r));
  }
  hs.push_back(MustSubmit(*h.engine, Greedy(Prompt(6, 9), 8)));  // unconstrained: no masks
  int64_t sampled = 0;
  for (size_t i = 0; i + 1 < hs.size(); ++i) {
    CollectedGeneration g = Collect(hs[i]);
    // EOS is sampled under the mask but not appended.
    sampled += static_cast<int64_t>(g.ids.size()) + (g.final_event.reason == SequenceState::kFinishedEos ? 1 : 0);
  }
  Collect(hs.back());
  ASSERT_TRUE(h.engine->WaitIdle(kWait));
  h.engine->Stop();  // OnStep of the last step has returned
  std::lock_guard<std::mutex> l(obs.mu_);
  EXPECT_EQ(obs.masks_, sampled);
  EXPECT_FALSE(obs.negative_);
  EXPECT_FALSE(obs.no_time_);
}

TEST(EngineConstraintTest, NoTokenizerNoConstraints) {
  Harness h(SmallConfig());
  ASSERT_NE(h.engine, nullptr);
  EXPECT_EQ(h.engine->constraints(), nullptr);
}

}  // namespace
}  // namespace llmserve
