// Engine: one step — schedule, build the ragged batch, forward, sample, update, then hand
// the results to the output processor (emit).
//
//   plan.work:   [ decode a ][ decode b ][ prefill c: 5 tokens ][ prefill d: 3 ]
//   rows:          0           1           2 3 4 5 6              7 8 9
//   batch_seqs_:  {0,1,cached}{1,1,..}    {2,5,start_c}          {7,3,start_d}
//   logit_rows_:   0           1           6 (if c's chunk ends its tokens)  9
#include <cstdio>
#include <cstdlib>
#include <limits>
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
  batch.block_copies = plan.copies;
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
  StartMasks(plan);
  const absl::Status fwd = Forward(plan);
  // The masks' figures are read now: a request that finishes this step takes its mask
  // state with it.
  const auto masks = static_cast<int32_t>(mask_jobs_.size());
  absl::Duration mask_time;
  if (masks > 0) {
    mask_worker_->Wait();
    for (const MaskWorker::Job& j : mask_jobs_) mask_time += *j.duration;
    mask_jobs_.clear();
  }
  const absl::Time t2 = Now();
  absl::Time t3 = t2;
  if (!fwd.ok()) {
    FailStep(plan, fwd, t2);
  } else {
    Sample(plan);
    t3 = Now();
    Emit(plan, scheduler_->Update(plan, sampled_ids_, t3), t3);
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
    r.constraint_masks = masks;
    r.constraint_mask_time = mask_time;
    r.stats = Stats();
    observer_->OnStep(r);
  }
}

void Engine::Sample(const SchedulePlan& plan) {
  sampled_ids_.clear();
  sampled_.clear();
  constraint_errors_.clear();
  size_t row = 0;
  for (const ScheduledWork& w : plan.work) {
    if (!w.sample) continue;
    const Sequence& s = *w.seq;
    auto it = active_.find(s.id);
    if (it == active_.end()) {
      std::fprintf(stderr, "llmserve engine bug: scheduled sequence %lld has no request state\n",
                   static_cast<long long>(s.id));
      std::abort();
    }
    std::span<float> logits(logits_.data() + row * static_cast<size_t>(vocab_size_), static_cast<size_t>(vocab_size_));
    ++row;
    Active& a = *it->second;
    // The constraint's mask comes first: a disallowed token's logit is -inf before bias,
    // penalties and truncation, so nothing can bring it back.
    if (a.matcher != nullptr) ApplyConstraint(s, a, logits);
    sampled_.push_back(a.sampler.Sample(logits, s.prompt, s.generated));
    sampled_ids_.push_back(sampled_.back().id);
    if (a.matcher != nullptr && (constraint_errors_.empty() || constraint_errors_.back().first != s.id)) {
      if (absl::Status st = a.matcher->Advance(sampled_ids_.back()); !st.ok()) constraint_errors_.emplace_back(s.id, st);
    }
  }
}

void Engine::StartMasks(const SchedulePlan& plan) {
  mask_jobs_.clear();
  for (const ScheduledWork& w : plan.work) {
    if (!w.sample) continue;
    auto it = active_.find(w.seq->id);
    if (it == active_.end() || it->second->matcher == nullptr) continue;
    Active& a = *it->second;
    mask_jobs_.push_back({a.matcher.get(), &a.mask, &a.mask_status, &a.mask_time});
  }
  if (mask_jobs_.empty()) return;
  if (mask_worker_ == nullptr) mask_worker_ = std::make_unique<MaskWorker>();
  mask_worker_->Start(&mask_jobs_);
}

void Engine::ApplyConstraint(const Sequence& seq, Active& a, std::span<float> logits) {
  absl::Status st = a.mask_status;
  if (st.ok() && a.mask.Count() == 0) {
    st = absl::FailedPreconditionError("the constraint allows no token of this vocabulary here");
  }
  if (!st.ok()) {
    constraint_errors_.emplace_back(seq.id, std::move(st));
    return;
  }
  const std::vector<uint64_t>& words = a.mask.words();
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (size_t w = 0; w * 64 < logits.size(); ++w) {
    const uint64_t bits = w < words.size() ? words[w] : 0;
    if (bits == ~uint64_t{0}) continue;
    const size_t end = std::min(logits.size(), (w + 1) * 64);
    for (size_t i = w * 64; i < end; ++i) {
      if (!((bits >> (i & 63)) & 1)) logits[i] = kNegInf;
    }
  }
}

void Engine::Emit(const SchedulePlan& plan, std::vector<std::unique_ptr<Sequence>> finished, absl::Time now) {
  // A request whose constraint failed this step ends with the error, before anything is
  // emitted: its last token was sampled without the mask, so it is dropped, not sent.
  for (auto& [id, error] : constraint_errors_) {
    if (std::unique_ptr<Sequence> seq = scheduler_->Finish(id, SequenceState::kFinishedError, now)) {
      if (!seq->generated.empty()) seq->generated.pop_back();
      FinishRequest(std::move(seq), error);
    }
  }
  scratch_ids_.clear();  // running sequences whose text reached a stop string
  outputs_->Emit(plan, sampled_, scratch_ids_);
  for (int64_t id : scratch_ids_) {
    if (std::unique_ptr<Sequence> seq = scheduler_->Finish(id, SequenceState::kFinishedStopString, now)) {
      finished.push_back(std::move(seq));
    }
  }
  // A request whose output completed its constraint (nothing but the end could follow)
  // ends as a stop.
  for (const ScheduledWork& w : plan.work) {
    if (!w.sample || w.seq->state != SequenceState::kRunning) continue;
    auto it = active_.find(w.seq->id);
    if (it == active_.end() || it->second->matcher == nullptr || !it->second->matcher->Complete()) continue;
    if (std::unique_ptr<Sequence> seq = scheduler_->Finish(w.seq->id, SequenceState::kFinishedConstraint, now)) {
      finished.push_back(std::move(seq));
    }
  }
  for (std::unique_ptr<Sequence>& seq : finished) FinishRequest(std::move(seq), absl::OkStatus());
}

void Engine::FailStep(const SchedulePlan& plan, const absl::Status& error, absl::Time now) {
  // The step's requests fail; their blocks go back; the engine carries on.
  const absl::Status err = absl::InternalError(absl::StrCat("forward pass failed: ", error.message()));
  for (const ScheduledWork& w : plan.work) {
    if (std::unique_ptr<Sequence> seq = scheduler_->Finish(w.seq->id, SequenceState::kFinishedError, now)) {
      FinishRequest(std::move(seq), err);
    }
  }
}

}  // namespace llmserve
