// Engine: one step — schedule, build the ragged batch, forward, sample, update, emit.
//
//   plan.work:   [ decode a ][ decode b ][ prefill c: 5 tokens ][ prefill d: 3 ]
//   rows:          0           1           2 3 4 5 6              7 8 9
//   batch_seqs_:  {0,1,cached}{1,1,..}    {2,5,start_c}          {7,3,start_d}
//   logit_rows_:   0           1           6 (if c's chunk ends its tokens)  9
#include <cstdio>
#include <cstdlib>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "scheduler/engine.h"
#include "scheduler/engine_internal.h"

namespace llmserve {

absl::Status Engine::Forward(const SchedulePlan& plan) {
  tokens_.clear();
  batch_seqs_.clear();
  logit_rows_.clear();
  for (const ScheduledWork& w : plan.work) {
    const Sequence& s = *w.seq;
    const auto row_start = static_cast<int32_t>(tokens_.size());
    for (int32_t i = w.start; i < w.start + w.num_tokens; ++i) tokens_.push_back(s.token(i));
    ForwardBatch::Seq bs;
    bs.row_start = row_start;
    bs.rows = w.num_tokens;
    bs.cached = w.start;
    bs.block_table = std::span<const int32_t>(s.block_table);
    batch_seqs_.push_back(bs);
    if (w.sample) logit_rows_.push_back(row_start + w.num_tokens - 1);
  }
  logits_.resize(logit_rows_.size() * static_cast<size_t>(vocab_size_));
  ForwardBatch batch;
  batch.tokens = tokens_;
  batch.seqs = batch_seqs_;
  batch.logit_rows = logit_rows_;
  return model_->Forward(batch, logits_.data());
}

void Engine::RunStep() {
  const absl::Time t0 = Now();
  SchedulePlan plan = scheduler_->Schedule(t0);
  const absl::Time t1 = Now();
  if (plan.empty()) {
    stalled_ = scheduler_->num_running() + scheduler_->num_waiting() > 0;
    Publish();
    return;
  }
  stalled_ = false;
  ++steps_;

  work_active_.clear();
  for (const ScheduledWork& w : plan.work) {
    auto it = active_.find(w.seq->id);
    if (it == active_.end()) {
      std::fprintf(stderr, "llmserve engine bug: scheduled sequence %lld has no request state\n",
                   static_cast<long long>(w.seq->id));
      std::abort();
    }
    work_active_.push_back(it->second.get());
  }

  const absl::Status fwd = Forward(plan);
  const absl::Time t2 = Now();
  absl::Time t3 = t2;
  if (!fwd.ok()) {
    // The step's requests fail; their blocks go back; the engine carries on.
    const absl::Status err = absl::InternalError(absl::StrCat("forward pass failed: ", fwd.message()));
    for (const ScheduledWork& w : plan.work) {
      if (std::unique_ptr<Sequence> seq = scheduler_->Finish(w.seq->id, SequenceState::kFinishedError, t2)) {
        FinishRequest(std::move(seq), err);
      }
    }
  } else {
    sampled_ids_.clear();
    sampled_.clear();
    size_t row = 0;
    for (size_t k = 0; k < plan.work.size(); ++k) {
      const ScheduledWork& w = plan.work[k];
      if (!w.sample) continue;
      const Sequence& s = *w.seq;
      std::span<float> logits(logits_.data() + row * static_cast<size_t>(vocab_size_),
                              static_cast<size_t>(vocab_size_));
      ++row;
      sampled_.push_back(work_active_[k]->sampler.Sample(logits, s.prompt, s.generated));
      sampled_ids_.push_back(sampled_.back().id);
    }
    t3 = Now();
    std::vector<std::unique_ptr<Sequence>> finished = scheduler_->Update(plan, sampled_ids_, t3);
    Emit(plan, finished, t3);
  }
  const absl::Time t4 = Now();
  Publish();
  if (observer_ != nullptr) {
    StepReport r;
    r.decode_tokens = plan.num_decode_tokens;
    r.prefill_tokens = plan.num_prefill_tokens;
    r.preemptions = static_cast<int32_t>(plan.preempted.size());
    r.schedule = t1 - t0;
    r.forward = t2 - t1;
    r.sample = t3 - t2;
    r.emit = t4 - t3;
    r.stats = Stats();
    observer_->OnStep(r);
  }
}

}  // namespace llmserve
