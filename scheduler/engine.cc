// Engine: creation, the thread-safe front (Submit, Abort, drain, Stop, Stats), the
// inbox, the loop and what it publishes. The step itself is in engine_step.cc, the
// output side in output_processor.cc.
#include "scheduler/engine.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "scheduler/constraint_vocabulary.h"
#include "scheduler/engine_internal.h"
#include "scheduler/output_processor.h"

namespace llmserve {

absl::Status EngineConfig::Validate() const {
  if (absl::Status s = scheduler.Validate(); !s.ok()) return s;
  if (channel_capacity < 1) return absl::InvalidArgumentError("EngineConfig.channel_capacity must be >= 1, got 0");
  if (!clock) return absl::InvalidArgumentError("EngineConfig.clock must be set");
  if (absl::Status s = constraint_limits.Validate(); !s.ok()) return s;
  if (constraint_cache_entries < 1) {
    return absl::InvalidArgumentError("EngineConfig.constraint_cache_entries must be >= 1, got 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const EngineConfig& config, std::unique_ptr<EngineModel> model,
                                                       const Tokenizer* tokenizer, EngineObserver* observer) {
  if (model == nullptr) return absl::InvalidArgumentError("Engine::Create: no model");
  EngineConfig c = config;
  SchedulerConfig& sc = c.scheduler;
  // Zero means "the model's".
  if (sc.num_blocks == 0) sc.num_blocks = model->num_blocks();
  if (sc.max_context == 0) sc.max_context = model->max_context();
  if (absl::Status s = c.Validate(); !s.ok()) return s;
  if (sc.block_size != model->block_size()) {
    return absl::InvalidArgumentError(absl::StrCat("SchedulerConfig.block_size (", sc.block_size,
                                                   ") differs from the KV cache's (", model->block_size(), ")"));
  }
  if (sc.num_blocks > model->num_blocks()) {
    return absl::InvalidArgumentError(absl::StrCat("SchedulerConfig.num_blocks (", sc.num_blocks,
                                                   ") exceeds the KV cache's (", model->num_blocks(), ")"));
  }
  if (sc.max_context > model->max_context()) {
    return absl::InvalidArgumentError(absl::StrCat("SchedulerConfig.max_context (", sc.max_context,
                                                   ") exceeds the model's (", model->max_context(), ")"));
  }
  for (int32_t id : sc.eos_ids) {
    if (id >= model->vocab_size()) {
      return absl::InvalidArgumentError(absl::StrCat("SchedulerConfig.eos_ids holds ", id,
                                                     ", outside the vocabulary (", model->vocab_size(), ")"));
    }
  }
  std::unique_ptr<Engine> engine(new Engine(c, std::move(model), tokenizer, observer));
  if (tokenizer != nullptr) {
    // The vocabulary as constraints see it; end of generation is the scheduler's EOS set.
    auto vocab = ConstraintVocabulary(*tokenizer, sc.eos_ids);
    if (!vocab.ok()) return vocab.status();
    engine->constraints_ =
        std::make_unique<constraint::ConstraintCache>(*std::move(vocab), c.constraint_limits, c.constraint_cache_entries);
  }
  return engine;
}

Engine::Engine(const EngineConfig& config, std::unique_ptr<EngineModel> model, const Tokenizer* tokenizer,
               EngineObserver* observer)
    : config_(config),
      model_(std::move(model)),
      tokenizer_(tokenizer),
      observer_(observer),
      vocab_size_(model_->vocab_size()),
      inbox_(std::make_unique<Inbox>()),
      scheduler_(std::make_unique<Scheduler>(config_.scheduler)),
      outputs_(std::make_unique<OutputProcessor>(*scheduler_, tokenizer_, observer_)) {
  std::random_device rd;
  seed_state_ = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  std::lock_guard<std::mutex> lock(inbox_->mu);
  inbox_->stats.blocks_total = scheduler_->blocks().num_total();
  inbox_->stats.block_size = config_.scheduler.block_size;
}

Engine::~Engine() { Stop(); }

void Engine::Start() {
  std::lock_guard<std::mutex> g(stop_mu_);
  if (started_ || shut_down_) return;
  started_ = true;
  thread_ = std::thread([this] { Loop(); });
}

uint64_t Engine::DrawSeed() {
  std::lock_guard<std::mutex> lock(seed_mu_);
  // splitmix64
  uint64_t z = (seed_state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

absl::Status Engine::ValidateRequest(const EngineRequest& r) const {
  if (absl::Status s = r.sampling.Validate(); !s.ok()) return s;
  if (absl::Status s = r.stop.Validate(vocab_size_); !s.ok()) return s;
  for (const auto& [id, bias] : r.sampling.logit_bias) {
    if (id >= vocab_size_) {
      return absl::InvalidArgumentError(
          absl::StrCat("logit_bias token ", id, " is outside the vocabulary (", vocab_size_, ")"));
    }
  }
  for (size_t i = 0; i < r.prompt.size(); ++i) {
    if (r.prompt[i] < 0 || r.prompt[i] >= vocab_size_) {
      return absl::InvalidArgumentError(absl::StrCat("prompt id ", r.prompt[i], " at position ", i,
                                                     " is outside the vocabulary (", vocab_size_, ")"));
    }
  }
  // The scheduler's limits (empty prompt, context, KV blocks): its check, not a copy.
  if (absl::Status s = scheduler_->admission().Check(static_cast<int64_t>(r.prompt.size()), r.stop.max_tokens);
      !s.ok()) {
    return s;
  }
  if (r.constraint != nullptr && constraints_ == nullptr) {
    return absl::InvalidArgumentError("constraints need a tokenizer; this engine has none");
  }
  if (r.constraint != nullptr && r.constraint->vocab().size() > vocab_size_) {
    return absl::InvalidArgumentError("the constraint was compiled for a larger vocabulary than the model's");
  }
  if (!r.stop.stop_strings.empty() && tokenizer_ == nullptr) {
    return absl::InvalidArgumentError("stop strings need a tokenizer; this engine has none");
  }
  return absl::OkStatus();
}

absl::StatusOr<RequestHandle> Engine::Submit(EngineRequest request) {
  if (absl::Status s = ValidateRequest(request); !s.ok()) return s;
  const absl::Time arrival = Now();
  const uint64_t seed = request.sampling.seed.has_value() ? *request.sampling.seed : DrawSeed();
  auto seq = std::make_unique<Sequence>();
  seq->request_id = std::move(request.request_id);
  seq->prompt = std::move(request.prompt);
  seq->cache_salt = std::move(request.cache_salt);
  seq->sampling = request.sampling;
  seq->sampling.seed = seed;
  seq->stop = std::move(request.stop);
  seq->times.arrival = arrival;
  RequestHandle handle;
  handle.channel = std::make_shared<RequestChannel>(config_.channel_capacity);
  auto active = std::make_unique<Active>(seq->sampling, seed, request.deadline);
  if (request.constraint != nullptr) active->matcher = std::make_unique<constraint::Matcher>(std::move(request.constraint));
  std::unique_ptr<OutputProcessor::Request> output = outputs_->NewRequest(*seq, handle.channel);
  {
    std::lock_guard<std::mutex> lock(inbox_->mu);
    if (inbox_->stop) return absl::UnavailableError("the engine is stopped");
    if (inbox_->draining) return absl::UnavailableError("the engine is draining: no new requests");
    // The scheduler's one waiting count (admission.h); the slot is given back by the
    // scheduler when the request is first scheduled or ends before.
    if (absl::Status s = scheduler_->admission().Reserve(); !s.ok()) return s;
    handle.id = inbox_->next_id++;
    seq->id = handle.id;
    ++inbox_->in_flight;
    inbox_->adds.push_back(Pending{std::move(seq), std::move(active), std::move(output)});
  }
  inbox_->wake.notify_one();
  return handle;
}

void Engine::Abort(int64_t id, SequenceState reason) {
  if (reason != SequenceState::kFinishedDeadline) reason = SequenceState::kFinishedCancelled;
  {
    std::lock_guard<std::mutex> lock(inbox_->mu);
    if (inbox_->stop) return;  // Stop() cancels everything anyway
    inbox_->aborts.emplace_back(id, reason);
  }
  inbox_->wake.notify_one();
}

void Engine::BeginDrain() {
  std::lock_guard<std::mutex> lock(inbox_->mu);
  inbox_->draining = true;
  inbox_->stats.draining = true;
}

bool Engine::WaitIdle(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(inbox_->mu);
  const auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(inbox_->mu) { return inbox_->in_flight == 0; };
  if (timeout == absl::InfiniteDuration()) {
    inbox_->idle.wait(lock, idle);
    return true;
  }
  return inbox_->idle.wait_for(lock, absl::ToChronoNanoseconds(std::max(timeout, absl::ZeroDuration())), idle);
}

void Engine::Stop() {
  std::lock_guard<std::mutex> g(stop_mu_);
  if (shut_down_) return;
  {
    std::lock_guard<std::mutex> lock(inbox_->mu);
    inbox_->stop = true;
  }
  inbox_->wake.notify_one();
  if (started_) {
    thread_.join();  // the loop ends with Shutdown()
  } else {
    Shutdown();      // no engine thread: this thread owns the engine state now
  }
  shut_down_ = true;
}

EngineStats Engine::Stats() const {
  std::lock_guard<std::mutex> lock(inbox_->mu);
  EngineStats s = inbox_->stats;
  s.waiting += static_cast<int32_t>(inbox_->adds.size());
  s.draining = inbox_->draining;
  return s;
}

void Engine::Loop() {
  while (WaitAndDrain()) {
    const absl::Time now = Now();
    ApplyDrained(now);
    ExpireDeadlines(now);
    if (!finishing_.empty()) Publish();  // cancelled and expired requests end before the step
    RunStep();
  }
  Shutdown();
}

bool Engine::WaitAndDrain() {
  Inbox& in = *inbox_;
  std::unique_lock<std::mutex> lock(in.mu);
  const auto has_messages = [&in]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(in.mu) {
    return in.stop || !in.adds.empty() || !in.aborts.empty();
  };
  if (scheduler_->num_running() + scheduler_->num_waiting() == 0) {
    in.wake.wait(lock, has_messages);  // idle: sleep until someone posts
  } else if (stalled_) {
    // Sequences are held but nothing could run last step (should not happen with a
    // consistent scheduler): do not spin, look again shortly.
    in.wake.wait_for(lock, std::chrono::milliseconds(1), has_messages);
  }
  if (in.stop) return false;
  // Swap, not move: the inbox takes over the engine's cleared buffers (kept capacity).
  in.stats.waiting += static_cast<int32_t>(in.adds.size());
  drained_adds_.swap(in.adds);
  drained_aborts_.swap(in.aborts);
  return true;
}

void Engine::ApplyDrained(absl::Time now) {
  for (Pending& p : drained_adds_) {
    const int64_t id = p.seq->id;
    const absl::Time arrival = p.seq->times.arrival;
    next_deadline_ = std::min(next_deadline_, p.active->deadline);
    active_.emplace(id, std::move(p.active));
    outputs_->Add(id, std::move(p.output));
    scheduler_->AddAdmitted(std::move(p.seq), arrival);  // Submit admitted it
  }
  drained_adds_.clear();
  for (const auto& [id, reason] : drained_aborts_) {
    if (!active_.contains(id)) continue;  // already ended
    if (std::unique_ptr<Sequence> seq = scheduler_->Finish(id, reason, now)) FinishRequest(std::move(seq), absl::OkStatus());
  }
  drained_aborts_.clear();
}

void Engine::ExpireDeadlines(absl::Time now) {
  if (now < next_deadline_) return;
  scratch_ids_.clear();
  absl::Time next = absl::InfiniteFuture();
  for (const auto& [id, a] : active_) {
    if (a->deadline <= now) {
      scratch_ids_.push_back(id);
    } else {
      next = std::min(next, a->deadline);
    }
  }
  next_deadline_ = next;
  for (int64_t id : scratch_ids_) {
    if (std::unique_ptr<Sequence> seq = scheduler_->Finish(id, SequenceState::kFinishedDeadline, now)) {
      FinishRequest(std::move(seq), absl::OkStatus());
    }
  }
}

void Engine::Shutdown() {
  const absl::Time now = Now();
  {
    std::lock_guard<std::mutex> lock(inbox_->mu);
    drained_adds_.swap(inbox_->adds);
    inbox_->aborts.clear();
  }
  for (Pending& p : drained_adds_) {
    // Through the scheduler, which ends it and gives back its waiting slot.
    const int64_t id = p.seq->id;
    const absl::Time arrival = p.seq->times.arrival;
    active_.emplace(id, std::move(p.active));
    outputs_->Add(id, std::move(p.output));
    scheduler_->AddAdmitted(std::move(p.seq), arrival);
    if (std::unique_ptr<Sequence> seq = scheduler_->Finish(id, SequenceState::kFinishedCancelled, now)) {
      FinishRequest(std::move(seq), absl::OkStatus());
    }
  }
  drained_adds_.clear();
  for (const Sequence* s : scheduler_->Sequences()) {
    if (std::unique_ptr<Sequence> seq = scheduler_->Finish(s->id, SequenceState::kFinishedCancelled, now)) {
      FinishRequest(std::move(seq), absl::OkStatus());
    }
  }
  Publish();
}

void Engine::FinishRequest(std::unique_ptr<Sequence> seq, const absl::Status& status) {
  active_.erase(seq->id);
  finishing_.emplace_back(std::move(seq), status);
}

void Engine::Publish() {
  EngineStats s;
  s.running = scheduler_->num_running();
  s.waiting = scheduler_->num_waiting();
  s.blocks_total = scheduler_->blocks().num_total();
  s.blocks_used = scheduler_->blocks().num_used();
  s.block_size = config_.scheduler.block_size;
  s.preemptions = scheduler_->num_preemptions();
  s.prefix_caching = scheduler_->config().prefix_caching;
  s.blocks_cached = scheduler_->blocks().num_cached();
  s.prefix_query_tokens = scheduler_->prefix_query_tokens();
  s.prefix_hit_tokens = scheduler_->prefix_hit_tokens();
  s.prefix_evictions = scheduler_->blocks().num_evictions();
  s.steps = steps_;
  {
    std::lock_guard<std::mutex> lock(inbox_->mu);
    s.draining = inbox_->draining;
    inbox_->stats = s;
  }
  const auto finished = static_cast<int32_t>(finishing_.size());
  for (auto& [seq, status] : finishing_) outputs_->Finish(std::move(seq), status);
  finishing_.clear();
  bool idle = false;
  {
    std::lock_guard<std::mutex> lock(inbox_->mu);
    inbox_->in_flight -= finished;
    idle = inbox_->in_flight == 0;
  }
  if (idle) inbox_->idle.notify_all();
  if (observer_ != nullptr) observer_->OnStats(Stats());  // incl. requests still in the inbox
}

}  // namespace llmserve
