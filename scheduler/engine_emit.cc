// Engine: after Update, turn each sequence's new ids into a delta (incremental
// detokenization, stop strings held back and matched across tokens), end the requests
// that finished, and publish the step's state to other threads.
//
// A sequence's generated ids are emitted exactly once: Active::emitted counts those
// already in deltas, so a preempted sequence (whose ids stay, and which is recomputed)
// never repeats one.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "scheduler/engine.h"
#include "scheduler/engine_internal.h"
#include "spdlog/spdlog.h"

namespace llmserve {
namespace {

// `to - from`, or zero when `to` was never reached.
absl::Duration Since(absl::Time from, absl::Time to) {
  if (to == absl::InfinitePast() || from == absl::InfinitePast()) return absl::ZeroDuration();
  return to - from;
}

}  // namespace

void Engine::TakeNewIds(const Sequence& seq, Active& a, SampledToken* sampled) {
  const size_t n = seq.generated.size();
  while (a.emitted < n) {
    const int32_t id = seq.generated[a.emitted];
    a.pending.ids.push_back(id);
    if (a.want_logprobs) {
      TokenLogprobs lp;
      lp.id = id;
      // The step's sampled token is the last new id (one per step); any other id (none
      // in practice) gets no logprob data.
      if (sampled != nullptr && a.emitted + 1 == n && sampled->id == id) {
        lp.logprob = sampled->logprob;
        lp.top = std::move(sampled->top);
      }
      a.pending.logprobs.push_back(std::move(lp));
    }
    ++a.emitted;
    if (observer_ != nullptr) observer_->OnToken(seq, a.last_emitted, seq.times.last_token);
    a.last_emitted = seq.times.last_token;
    if (!a.decoder.has_value()) continue;
    if (a.matcher.has_value() && a.matcher->matched()) continue;  // text after a stop string is dropped
    std::string piece = a.decoder->Push(id);
    if (!a.matcher.has_value()) {
      a.pending.text += piece;
      continue;
    }
    StopStringMatcher::Result r = a.matcher->Push(piece);
    a.pending.text += r.release;
    if (r.matched.has_value()) a.stop_index = *r.matched;
  }
}

void Engine::Emit(const SchedulePlan& plan, std::vector<std::unique_ptr<Sequence>>& finished, absl::Time now) {
  scratch_ids_.clear();  // stop strings matched by still-running sequences
  size_t j = 0;
  for (size_t k = 0; k < plan.work.size(); ++k) {
    const ScheduledWork& w = plan.work[k];
    if (!w.sample) continue;
    Sequence& s = *w.seq;  // still valid: finished ones are owned by `finished` now
    Active& a = *work_active_[k];
    TakeNewIds(s, a, &sampled_[j++]);
    const bool matched = a.matcher.has_value() && a.matcher->matched();
    if (IsFinished(s.state)) {
      // Only length can end a step that appended the matching id (EOS and stop ids are
      // not appended); stop strings come before it.
      if (matched) scheduler_->StopStringFound(s);
      continue;  // FinishRequest pushes the pending delta
    }
    if (matched) {
      scratch_ids_.push_back(s.id);
      continue;
    }
    if (!a.pending.ids.empty() || !a.pending.text.empty()) {
      a.channel->PushDelta(std::move(a.pending));
      a.pending = GenerationDelta();
    }
  }
  for (int64_t id : scratch_ids_) {
    if (std::unique_ptr<Sequence> seq = scheduler_->Finish(id, SequenceState::kFinishedStopString, now)) {
      finished.push_back(std::move(seq));
    }
  }
  for (std::unique_ptr<Sequence>& seq : finished) FinishRequest(std::move(seq), absl::OkStatus());
}

void Engine::FinishRequest(std::unique_ptr<Sequence> seq, const absl::Status& status) {
  auto it = active_.find(seq->id);
  if (it == active_.end()) return;  // already ended (cannot happen: each id ends once)
  Active& a = *it->second;
  TakeNewIds(*seq, a, nullptr);
  // The rest of the text: what the decoder holds, then what the matcher holds back.
  if (a.decoder.has_value()) {
    std::string rest = a.decoder->Finish();
    if (!a.matcher.has_value()) {
      a.pending.text += rest;
    } else if (!a.matcher->matched()) {
      StopStringMatcher::Result r = a.matcher->Push(rest);
      a.pending.text += r.release;
      if (r.matched.has_value()) {
        a.stop_index = *r.matched;
        scheduler_->StopStringFound(*seq);
      } else {
        a.pending.text += a.matcher->Flush();
        // Flush can confirm a match that waited on an earlier, longer candidate.
        if (const std::optional<size_t> m = a.matcher->matched_index(); m.has_value()) {
          a.stop_index = *m;
          scheduler_->StopStringFound(*seq);
        }
      }
    }
  }
  if (!a.pending.ids.empty() || !a.pending.text.empty()) a.channel->PushDelta(std::move(a.pending));

  const Sequence& s = *seq;
  GenerationFinal f;
  f.reason = s.state;
  if (s.state == SequenceState::kFinishedStopString && a.stop_index < s.stop.stop_strings.size()) {
    f.stop_string = s.stop.stop_strings[a.stop_index];
  }
  if (s.state == SequenceState::kFinishedError) {
    // A fresh Status, not a copy: a copy would share one refcounted payload between the
    // engine and the reader's thread (and Debian's Abseil is not TSan-instrumented).
    f.status = status.ok() ? absl::InternalError("request failed") : absl::Status(status.code(), status.message());
  }
  f.prompt_tokens = static_cast<int32_t>(s.prompt.size());
  f.completion_tokens = static_cast<int32_t>(a.emitted);
  f.queue_time = Since(s.times.arrival, s.times.first_scheduled);
  f.time_to_first_token = Since(s.times.arrival, s.times.first_token);
  f.total_time = Since(s.times.arrival, s.times.finished);
  f.seed = a.seed;
  f.preemptions = s.num_preemptions;

  if (observer_ != nullptr) observer_->OnFinished(s, f);
  spdlog::info("request {} ({}) finished: {}, {} prompt + {} completion tokens, ttft {}, total {}{}", s.id,
               s.request_id.empty() ? "-" : s.request_id, SequenceStateName(s.state), f.prompt_tokens,
               f.completion_tokens, absl::FormatDuration(f.time_to_first_token), absl::FormatDuration(f.total_time),
               f.status.ok() ? std::string() : absl::StrCat(", ", f.status.ToString()));
  a.channel->PushFinal(std::move(f));
  ++finished_unpublished_;
  active_.erase(it);
}

void Engine::Publish() {
  EngineStats s;
  s.running = scheduler_->num_running();
  s.waiting = scheduler_->num_waiting();
  s.blocks_total = scheduler_->blocks().num_total();
  s.blocks_used = scheduler_->blocks().num_used();
  s.block_size = config_.scheduler.block_size;
  s.preemptions = scheduler_->num_preemptions();
  s.steps = steps_;
  bool idle = false;
  {
    std::lock_guard<std::mutex> lock(inbox_->mu);
    s.draining = inbox_->draining;
    inbox_->stats = s;
    inbox_->in_flight -= finished_unpublished_;
    idle = inbox_->in_flight == 0;
  }
  finished_unpublished_ = 0;
  if (idle) inbox_->idle.notify_all();
  if (observer_ != nullptr) observer_->OnStats(Stats());  // incl. requests still in the inbox
}

}  // namespace llmserve
