#include "scheduler/request_channel.h"

#include <cstdlib>
#include <iterator>

namespace llmserve {

void GenerationDelta::Merge(GenerationDelta&& later) {
  ids.insert(ids.end(), later.ids.begin(), later.ids.end());
  text += later.text;
  logprobs.insert(logprobs.end(), std::make_move_iterator(later.logprobs.begin()),
                  std::make_move_iterator(later.logprobs.end()));
}

RequestChannel::RequestChannel(size_t capacity) : capacity_(capacity) {
  if (capacity < 1) std::abort();  // a bug in the caller
}

void RequestChannel::PushDelta(GenerationDelta delta) {
  std::function<void()> notify;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || final_pushed_) return;
    if (num_deltas_ >= capacity_) {
      // Full: the last queued event is a delta (the final is not pushed yet).
      std::get<GenerationDelta>(queue_.back()).Merge(std::move(delta));
      ++coalesced_;
    } else {
      queue_.emplace_back(std::move(delta));
      ++num_deltas_;
    }
    if (armed_) {
      armed_ = false;
      notify = notifier_;
    }
  }
  cv_.notify_all();
  if (notify) notify();
}

void RequestChannel::PushFinal(GenerationFinal final_event) {
  std::function<void()> notify;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || final_pushed_) return;
    final_pushed_ = true;
    queue_.emplace_back(std::move(final_event));
    if (armed_) {
      armed_ = false;
      notify = notifier_;
    }
  }
  cv_.notify_all();
  if (notify) notify();
}

std::optional<ChannelEvent> RequestChannel::TryPop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (queue_.empty()) {
    if (!closed_ && !final_popped_) armed_ = true;
    return std::nullopt;
  }
  ChannelEvent ev = std::move(queue_.front());
  queue_.pop_front();
  if (std::holds_alternative<GenerationDelta>(ev)) {
    --num_deltas_;
  } else {
    final_popped_ = true;
  }
  return ev;
}

std::optional<ChannelEvent> RequestChannel::PopWait(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || closed_ || final_popped_;
  };
  if (!ready()) {
    if (timeout == absl::InfiniteDuration()) {
      cv_.wait(lock, ready);
    } else {
      cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), ready);
    }
  }
  if (queue_.empty()) return std::nullopt;
  ChannelEvent ev = std::move(queue_.front());
  queue_.pop_front();
  if (std::holds_alternative<GenerationDelta>(ev)) {
    --num_deltas_;
  } else {
    final_popped_ = true;
  }
  return ev;
}

void RequestChannel::SetNotifier(std::function<void()> notifier) {
  std::lock_guard<std::mutex> lock(mu_);
  notifier_ = std::move(notifier);
}

void RequestChannel::Close() {
  std::function<void()> drop;  // destroyed outside the lock
  std::deque<ChannelEvent> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    armed_ = false;
    dropped.swap(queue_);
    num_deltas_ = 0;
    drop.swap(notifier_);
  }
  cv_.notify_all();
}

bool RequestChannel::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return final_popped_ || closed_;
}

int64_t RequestChannel::coalesced() const {
  std::lock_guard<std::mutex> lock(mu_);
  return coalesced_;
}

absl::StatusOr<CollectedGeneration> CollectGeneration(RequestChannel& ch, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  CollectedGeneration out;
  while (true) {
    std::optional<ChannelEvent> ev = ch.PopWait(deadline - absl::Now());
    if (!ev.has_value()) {
      if (ch.done()) return absl::CancelledError("channel closed before the final event");
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError("no final event within the timeout");
      }
      continue;
    }
    if (auto* d = std::get_if<GenerationDelta>(&*ev)) {
      out.ids.insert(out.ids.end(), d->ids.begin(), d->ids.end());
      out.text += d->text;
      out.logprobs.insert(out.logprobs.end(), std::make_move_iterator(d->logprobs.begin()),
                          std::make_move_iterator(d->logprobs.end()));
      ++out.deltas;
    } else {
      out.final_event = std::get<GenerationFinal>(std::move(*ev));
      return out;
    }
  }
}

}  // namespace llmserve
