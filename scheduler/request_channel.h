// RequestChannel: the bounded queue of events from the engine thread to one request's
// reader (a gRPC reactor, llmrun, a test).
//
//   engine thread ──PushDelta/PushFinal──▶ [ delta | delta | ... | final ] ──TryPop/PopWait──▶ reader
//
// Bounded: at most `capacity` deltas are queued. When the reader is slow and the queue is
// full, a new delta is merged into the last queued one (ids, text and logprobs appended),
// so the engine never blocks and nothing is lost. The final event is always accepted and is
// the last event. After Close() (reader gone) pushes are dropped.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/sequence.h"

namespace llmserve {

// A generated token's logprob and the top-n alternatives (id, logprob), descending.
struct TokenLogprobs {
  int32_t id = -1;
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;
};

// New output since the previous delta.
struct GenerationDelta {
  std::vector<int32_t> ids;             // generated ids (stop ids never appear)
  std::string text;                     // UTF-8 text released (stop strings cut, may be empty)
  std::vector<TokenLogprobs> logprobs;  // one per id when the request wants logprobs, else empty

  // Appends `later` to this delta.
  void Merge(GenerationDelta&& later);
};

// The end of a request: always exactly one, always last.
struct GenerationFinal {
  SequenceState reason = SequenceState::kFinishedError;  // a kFinished* state
  std::string stop_string;        // the stop string matched (kFinishedStopString)
  absl::Status status;            // OK unless reason == kFinishedError
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;  // == ids delivered in deltas
  absl::Duration queue_time;      // arrival → first scheduled (0 if never scheduled)
  absl::Duration time_to_first_token;  // arrival → first token (0 if none)
  absl::Duration total_time;      // arrival → finish
  uint64_t seed = 0;              // the sampling seed used
  int32_t preemptions = 0;
  int32_t cached_tokens = 0;    // prompt tokens whose KV came from the prefix cache
};

using ChannelEvent = std::variant<GenerationDelta, GenerationFinal>;

// Thread-safe.
class RequestChannel {
 public:
  // `capacity` >= 1 deltas.
  explicit RequestChannel(size_t capacity);

  // Engine side. Queues (or merges) a delta; calls the notifier if the reader is waiting.
  void PushDelta(GenerationDelta delta);
  // Engine side. Queues the final event (once); calls the notifier if the reader is waiting.
  void PushFinal(GenerationFinal final_event);

  // Reader side. The next event, or nullopt if none is queued — in which case the
  // notifier (if set) is armed and will be called once, from the pushing thread with no
  // lock held, when the next event arrives.
  std::optional<ChannelEvent> TryPop();
  // Reader side. Waits up to `timeout` for the next event.
  std::optional<ChannelEvent> PopWait(absl::Duration timeout);
  // Reader side. Sets the callback for TryPop's arming (call before the first TryPop).
  void SetNotifier(std::function<void()> notifier);
  // Reader side. The reader is gone: queued events are dropped, later pushes ignored.
  void Close();

  // True once the final event has been popped or the channel closed.
  bool done() const;
  // Deltas merged because the queue was full (for tests and metrics).
  int64_t coalesced() const;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ChannelEvent> queue_ ABSL_GUARDED_BY(mu_);
  std::function<void()> notifier_ ABSL_GUARDED_BY(mu_);
  bool armed_ ABSL_GUARDED_BY(mu_) = false;
  bool final_pushed_ ABSL_GUARDED_BY(mu_) = false;
  bool final_popped_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int64_t coalesced_ ABSL_GUARDED_BY(mu_) = 0;
  size_t num_deltas_ ABSL_GUARDED_BY(mu_) = 0;
};

// Everything one request produced, gathered by CollectGeneration (tools and tests).
struct CollectedGeneration {
  std::vector<int32_t> ids;             // all delta ids, in order
  std::string text;                     // all delta text, concatenated
  std::vector<TokenLogprobs> logprobs;  // all delta logprobs, in order
  GenerationFinal final_event;
  int deltas = 0;                       // delta events popped
};

// Reader side. Pops events until the final one; DEADLINE_EXCEEDED if it does not arrive
// within `timeout`, CANCELLED if the channel was closed.
absl::StatusOr<CollectedGeneration> CollectGeneration(RequestChannel& ch, absl::Duration timeout);

}  // namespace llmserve
