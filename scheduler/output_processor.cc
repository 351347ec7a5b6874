// OutputProcessor: deltas (detokenization, stop strings), finals, per-request stats.
#include "scheduler/output_processor.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace llmserve {
namespace {

// `to - from`, or zero when `to` was never reached.
absl::Duration Since(absl::Time from, absl::Time to) {
  if (to == absl::InfinitePast() || from == absl::InfinitePast()) return absl::ZeroDuration();
  return to - from;
}

}  // namespace

OutputProcessor::OutputProcessor(const Scheduler& scheduler, const Tokenizer* tokenizer, EngineObserver* observer)
    : scheduler_(scheduler), tokenizer_(tokenizer), observer_(observer) {}

std::unique_ptr<OutputProcessor::Request> OutputProcessor::NewRequest(const Sequence& seq,
                                                                      std::shared_ptr<RequestChannel> channel) const {
  auto r = std::make_unique<Request>();
  r->channel = std::move(channel);
  r->seed = seq.sampling.seed.value_or(0);
  r->want_logprobs = seq.sampling.want_logprobs;
  if (tokenizer_ != nullptr) {
    r->decoder.emplace(*tokenizer_);
    // Text deltas continue the prompt's text (keeping, e.g., SentencePiece's leading space).
    r->decoder->Prime(seq.prompt);
  }
  if (!seq.stop.stop_strings.empty()) r->matcher.emplace(seq.stop.stop_strings);
  return r;
}

void OutputProcessor::Add(int64_t id, std::unique_ptr<Request> request) { requests_.emplace(id, std::move(request)); }

OutputProcessor::Request& OutputProcessor::Get(int64_t id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) {
    std::fprintf(stderr, "llmserve engine bug: sequence %lld has no output state\n", static_cast<long long>(id));
    std::abort();
  }
  return *it->second;
}

void OutputProcessor::TakeNewIds(const Sequence& seq, Request& r, SampledToken* sampled) {
  const size_t n = seq.generated.size();
  while (r.emitted < n) {
    const int32_t id = seq.generated[r.emitted];
    r.pending.ids.push_back(id);
    if (r.want_logprobs) {
      TokenLogprobs lp;
      lp.id = id;
      // The step's sampled token is the last new id (one per step); any other id (none
      // in practice) gets no logprob data.
      if (sampled != nullptr && r.emitted + 1 == n && sampled->id == id) {
        lp.logprob = sampled->logprob;
        lp.top = std::move(sampled->top);
      }
      r.pending.logprobs.push_back(std::move(lp));
    }
    ++r.emitted;
    if (observer_ != nullptr) observer_->OnToken(seq, r.last_emitted, seq.times.last_token);
    r.last_emitted = seq.times.last_token;
    if (!r.decoder.has_value()) continue;
    if (r.matcher.has_value() && r.matcher->matched()) continue;  // text after a stop string is dropped
    std::string piece = r.decoder->Push(id);
    if (!r.matcher.has_value()) {
      r.pending.text += piece;
      continue;
    }
    StopStringMatcher::Result m = r.matcher->Push(piece);
    r.pending.text += m.release;
    if (m.matched.has_value()) r.stop_index = *m.matched;
  }
}

void OutputProcessor::Emit(const SchedulePlan& plan, std::span<SampledToken> sampled,
                           std::vector<int64_t>& stop_matched) {
  size_t j = 0;
  for (const ScheduledWork& w : plan.work) {
    if (!w.sample) continue;
    Sequence& s = *w.seq;  // still valid: finished ones are owned by Update's result
    Request& r = Get(s.id);
    TakeNewIds(s, r, &sampled[j++]);
    const bool matched = r.matcher.has_value() && r.matcher->matched();
    if (IsFinished(s.state)) {
      // Only length can end a step that appended the matching id (EOS and stop ids are
      // not appended); stop strings come before it.
      if (matched) scheduler_.StopStringFound(s);
      continue;  // Finish pushes the pending delta
    }
    if (matched) {
      stop_matched.push_back(s.id);
      continue;
    }
    if (!r.pending.ids.empty() || !r.pending.text.empty()) {
      r.channel->PushDelta(std::move(r.pending));
      r.pending = GenerationDelta();
    }
  }
}

void OutputProcessor::Finish(std::unique_ptr<Sequence> seq, const absl::Status& status) {
  auto it = requests_.find(seq->id);
  if (it == requests_.end()) return;  // already ended (cannot happen: each id ends once)
  Request& r = *it->second;
  TakeNewIds(*seq, r, nullptr);
  // The rest of the text: what the decoder holds, then what the matcher holds back.
  if (r.decoder.has_value()) {
    std::string rest = r.decoder->Finish();
    if (!r.matcher.has_value()) {
      r.pending.text += rest;
    } else if (!r.matcher->matched()) {
      StopStringMatcher::Result m = r.matcher->Push(rest);
      r.pending.text += m.release;
      if (m.matched.has_value()) {
        r.stop_index = *m.matched;
        scheduler_.StopStringFound(*seq);
      } else {
        r.pending.text += r.matcher->Flush();
        // Flush can confirm a match that waited on an earlier, longer candidate.
        if (const std::optional<size_t> mi = r.matcher->matched_index(); mi.has_value()) {
          r.stop_index = *mi;
          scheduler_.StopStringFound(*seq);
        }
      }
    }
  }
  if (!r.pending.ids.empty() || !r.pending.text.empty()) r.channel->PushDelta(std::move(r.pending));

  const Sequence& s = *seq;
  GenerationFinal f;
  f.reason = s.state;
  if (s.state == SequenceState::kFinishedStopString && r.stop_index < s.stop.stop_strings.size()) {
    f.stop_string = s.stop.stop_strings[r.stop_index];
  }
  if (s.state == SequenceState::kFinishedError) {
    // A fresh Status, not a copy: a copy would share one refcounted payload between the
    // engine and the reader's thread (and Debian's Abseil is not TSan-instrumented).
    f.status = status.ok() ? absl::InternalError("request failed") : absl::Status(status.code(), status.message());
  }
  f.prompt_tokens = static_cast<int32_t>(s.prompt.size());
  f.completion_tokens = static_cast<int32_t>(r.emitted);
  f.queue_time = Since(s.times.arrival, s.times.first_scheduled);
  f.time_to_first_token = Since(s.times.arrival, s.times.first_token);
  f.total_time = Since(s.times.arrival, s.times.finished);
  f.seed = r.seed;
  f.preemptions = s.num_preemptions;
  f.cached_tokens = s.num_cached_tokens;

  if (observer_ != nullptr) observer_->OnFinished(s, f);
  spdlog::info("request {} ({}) finished: {}, {} prompt + {} completion tokens, ttft {}, total {}{}", s.id,
               s.request_id.empty() ? "-" : s.request_id, SequenceStateName(s.state), f.prompt_tokens,
               f.completion_tokens, absl::FormatDuration(f.time_to_first_token), absl::FormatDuration(f.total_time),
               f.status.ok() ? std::string() : absl::StrCat(", ", f.status.ToString()));
  r.channel->PushFinal(std::move(f));
  requests_.erase(it);
}

}  // namespace llmserve
