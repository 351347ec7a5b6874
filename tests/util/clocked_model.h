// For engine tests on a scripted clock: a thread-safe manual clock (the engine's
// EngineConfig::clock) and an EngineModel wrapper whose every Forward moves that clock by
// a step time chosen by the test (fixed, or from the batch's rows), so every engine
// timestamp and step duration is known exactly.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <utility>

#include "absl/time/time.h"
#include "scheduler/engine_model.h"

namespace llmserve::testing {

// Thread-safe.
class ManualClock {
 public:
  explicit ManualClock(absl::Time start = absl::FromUnixSeconds(1'700'000'000)) : now_(start) {}
  absl::Time Now() {
    std::lock_guard<std::mutex> l(mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    std::lock_guard<std::mutex> l(mu_);
    now_ += d;
  }

 private:
  std::mutex mu_;
  absl::Time now_;
};

// `inner`, with each Forward first advancing `clock` by step_time(batch).
class ClockedModel final : public EngineModel {
 public:
  using StepTime = std::function<absl::Duration(const ForwardBatch&)>;
  ClockedModel(std::unique_ptr<EngineModel> inner, ManualClock* clock, StepTime step_time)
      : inner_(std::move(inner)), clock_(clock), step_time_(std::move(step_time)) {}
  int32_t vocab_size() const override { return inner_->vocab_size(); }
  int32_t max_context() const override { return inner_->max_context(); }
  int32_t num_blocks() const override { return inner_->num_blocks(); }
  int32_t block_size() const override { return inner_->block_size(); }
  absl::Status Forward(const ForwardBatch& batch, float* logits) override {
    clock_->Advance(step_time_(batch));
    return inner_->Forward(batch, logits);
  }

 private:
  std::unique_ptr<EngineModel> inner_;
  ManualClock* clock_;
  StepTime step_time_;
};

}  // namespace llmserve::testing
