// The same workloads planned step by step under each prefill policy, built by the
// Scheduler from its config alone (SchedulerConfig::set_prefill_policy): the plans are a
// pure function of config and inputs. Every run must also finish every sequence with the
// output of an unbatched, unpreempted run (tests/util/scheduler_harness.h checks the
// invariants and the fake KV cache after each step).
// Plan text: "D<id>@<start>" decode, "P<id>@<start>+<n>[s]" prefill ('s' = samples),
// "!<id>" preempted.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/scheduler.h"
#include "tests/util/scheduler_harness.h"

namespace llmserve {
namespace {

using ::llmserve::testing::RunReference;
using ::llmserve::testing::SchedulerHarness;

struct SeqSpec {
  int64_t id;
  int32_t prompt_len;
  int32_t max_tokens;
};

struct Workload {
  int32_t block_size, num_blocks, max_running, max_batched_tokens, max_prefill_chunk;
  std::vector<SeqSpec> seqs;
};

// A burst of three 8-token prompts under a roomy budget.
const Workload kBurst = {4, 64, 8, 16, 16, {{1, 8, 4}, {2, 8, 3}, {3, 8, 2}}};
// Three one-token prompts that go on decoding, and a longer one beside them.
const Workload kLongBehindDecodes = {4, 64, 8, 16, 16, {{1, 1, 5}, {2, 1, 5}, {3, 1, 5}, {4, 9, 1}}};
// Too few blocks for both sequences: the newest is preempted and recomputed.
const Workload kPreemption = {2, 4, 4, 16, 16, {{1, 3, 4}, {2, 2, 3}}};
// A prompt of five chunks beside a decoding sequence.
const Workload kChunked = {4, 64, 4, 8, 8, {{1, 2, 6}, {2, 40, 1}}};

PrefillPolicyConfig Bulk() { return {PrefillPolicyKind::kBulk}; }
PrefillPolicyConfig Separate(int32_t stall) {
  PrefillPolicyConfig p;
  p.kind = PrefillPolicyKind::kSeparate;
  p.max_decode_stall = stall;
  return p;
}
PrefillPolicyConfig Piggyback(int32_t rows, int32_t horizon) {
  PrefillPolicyConfig p;
  p.kind = PrefillPolicyKind::kPiggyback;
  p.rows = rows;
  p.horizon = horizon;
  return p;
}

SchedulerConfig Config(const Workload& w, const PrefillPolicyConfig& policy, int32_t prompt_pack_rows) {
  SchedulerConfig c;
  c.prompt_pack_rows = prompt_pack_rows;
  c.block_size = w.block_size;
  c.num_blocks = w.num_blocks;
  c.max_running = w.max_running;
  c.max_batched_tokens = w.max_batched_tokens;
  c.max_prefill_chunk = w.max_prefill_chunk;
  c.max_context = 4096;
  c.eos_ids = {2};
  c.set_prefill_policy(policy);
  c.prefix_caching = false;  // recompute after preemption from 0 (prefix caching: its own tests)
  return c;
}

struct PolicyCase {
  const char* name;
  const Workload* workload;
  PrefillPolicyConfig policy;
  std::vector<std::string> steps;  // expected plan of each step; then nothing is held
  int32_t prompt_pack_rows = 0;    // SchedulerConfig::prompt_pack_rows
};

class SchedulerPolicyTest : public ::testing::TestWithParam<PolicyCase> {};

TEST_P(SchedulerPolicyTest, PlansStepByStep) {
  const PolicyCase& tc = GetParam();
  const SchedulerConfig cfg = Config(*tc.workload, tc.policy, tc.prompt_pack_rows);
  ASSERT_TRUE(cfg.Validate().ok());
  SchedulerHarness h(cfg);
  EXPECT_EQ(h.sched().policy().Describe(), MakePrefillPolicy(tc.policy)->Describe());
  for (const SeqSpec& s : tc.workload->seqs) ASSERT_TRUE(h.Add(s.id, s.prompt_len, s.max_tokens).ok()) << s.id;
  std::vector<std::string> got;
  while (h.sched().num_running() + h.sched().num_waiting() > 0 && got.size() < 100) got.push_back(h.Step());
  EXPECT_EQ(got, tc.steps);
  if (HasFailure()) {
    std::string all;
    for (const std::string& s : got) all += "\"" + s + "\", ";
    ADD_FAILURE() << "plans: " << all;
  }
  EXPECT_EQ(h.sched().blocks().num_used(), 0);
  ASSERT_EQ(h.finished().size(), tc.workload->seqs.size());
  for (const SeqSpec& s : tc.workload->seqs) {
    const Sequence* f = h.Finished(s.id);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->state, SequenceState::kFinishedLength);
    const auto ref = RunReference(f->prompt, f->stop, cfg.eos_ids, cfg.max_context, h.pick());
    EXPECT_EQ(f->generated, ref.generated) << "sequence " << s.id;
  }
}

const PolicyCase kPolicyCases[] = {
    {"burst_bulk", &kBurst, Bulk(),
     {"P1@0+8s P2@0+8s", "D1@8 D2@8 P3@0+8s", "D1@9 D2@9 D3@8", "D1@10"}},
    {"burst_separate", &kBurst, Separate(2),
     {"P1@0+8s P2@0+8s", "P3@0+8s", "D1@8 D2@8 D3@8", "D1@9 D2@9", "D1@10"}},
    {"burst_piggyback", &kBurst, Piggyback(6, 4),
     {"P1@0+8s", "D1@8 P2@0+5", "D1@9 P2@5+3s P3@0+2", "D1@10 D2@8 P3@2+4", "D2@9 P3@6+2s", "D3@8"}},
    {"long_behind_decodes_bulk", &kLongBehindDecodes, Bulk(),
     {"P1@0+1s P2@0+1s P3@0+1s P4@0+9s", "D1@1 D2@1 D3@1", "D1@2 D2@2 D3@2", "D1@3 D2@3 D3@3", "D1@4 D2@4 D3@4"}},
    {"long_behind_decodes_separate", &kLongBehindDecodes, Separate(2),
     {"P1@0+1s P2@0+1s P3@0+1s P4@0+9s", "D1@1 D2@1 D3@1", "D1@2 D2@2 D3@2", "D1@3 D2@3 D3@3", "D1@4 D2@4 D3@4"}},
    {"long_behind_decodes_piggyback", &kLongBehindDecodes, Piggyback(6, 8),
     {"P1@0+1s", "D1@1 P2@0+1s P3@0+1s P4@0+3", "D1@2 D2@1 D3@1 P4@3+6s", "D1@3 D2@2 D3@2", "D1@4 D2@3 D3@3",
      "D2@4 D3@4"}},
    {"preemption_bulk", &kPreemption, Bulk(),
     {"P1@0+3s P2@0+2s", "D1@3 D2@2", "D1@4 !2", "D1@5", "P2@0+4s"}},
    {"preemption_separate", &kPreemption, Separate(2),
     {"P1@0+3s P2@0+2s", "D1@3 D2@2", "D1@4 !2", "D1@5", "P2@0+4s"}},
    {"preemption_piggyback", &kPreemption, Piggyback(6, 4),
     {"P1@0+3s", "D1@3 P2@0+2s", "D1@4 !2", "D1@5", "P2@0+3s", "D2@3"}},
    {"chunked_bulk", &kChunked, Bulk(),
     {"P1@0+2s P2@0+6", "D1@2 P2@6+7", "D1@3 P2@13+7", "D1@4 P2@20+7", "D1@5 P2@27+7", "D1@6 P2@34+6s"}},
    {"chunked_separate", &kChunked, Separate(2),
     {"P1@0+2s P2@0+6", "P2@6+8", "P2@14+8", "D1@2", "P2@22+8", "P2@30+8", "D1@3", "P2@38+2s", "D1@4", "D1@5", "D1@6"}},
    {"chunked_piggyback", &kChunked, Piggyback(6, 16),
     {"P1@0+2s", "D1@2 P2@0+5", "D1@3 P2@5+5", "D1@4 P2@10+5", "D1@5 P2@15+5", "D1@6 P2@20+5", "P2@25+8", "P2@33+7s"}},
    // prompt_pack_rows: a further prompt only when it ends there and has fewer rows than the
    // step's decodes plus prompt_pack_rows. The burst's prompts are computed one after another
    // (no step has room for a whole second one), each with the decodes of those before it...
    {"burst_bulk_packed_below_8_rows", &kBurst, Bulk(),
     {"P1@0+8s", "D1@8 P2@0+8s", "D1@9 D2@8 P3@0+8s", "D1@10 D2@9 D3@8"}, 8},
    // ... one-token prompts ride together (1 < 0 + 3), a 9-token one does not join them
    // (9 >= 0 + 3), and a step's first prompt needs no room.
    {"long_behind_decodes_bulk_packed_below_3_rows", &kLongBehindDecodes, Bulk(),
     {"P1@0+1s P2@0+1s P3@0+1s", "D1@1 D2@1 D3@1 P4@0+9s", "D1@2 D2@2 D3@2", "D1@3 D2@3 D3@3", "D1@4 D2@4 D3@4"}, 3},
    // ... and a chunk that does not end its prompt never joins a step as a further item.
    {"chunked_separate_packed_below_4_rows", &kChunked, Separate(2),
     {"P1@0+2s", "P2@0+8", "P2@8+8", "D1@2", "P2@16+8", "P2@24+8", "D1@3", "P2@32+8s", "D1@4", "D1@5", "D1@6"},
     4},
};

INSTANTIATE_TEST_SUITE_P(Policies, SchedulerPolicyTest, ::testing::ValuesIn(kPolicyCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace llmserve
