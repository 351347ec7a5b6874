// MaskWorker: computes a step's constraint masks on a thread of its own while the engine
// thread runs the forward pass, so constrained rows do not serialize the step behind
// their masks. The engine hands over (matcher, mask) pairs after scheduling and collects
// the results before sampling; nothing else touches those matchers in between.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "constraint/matcher.h"

namespace llmserve {

class MaskWorker {
 public:
  struct Job {
    constraint::Matcher* matcher;
    constraint::TokenMask* mask;
    absl::Status* status;      // ComputeMask's result
    absl::Duration* duration;  // how long it took (for metrics)
  };

  MaskWorker();
  ~MaskWorker();  // joins the thread

  // Engine thread. Starts computing `jobs` (which must stay untouched until Wait returns).
  void Start(std::vector<Job>* jobs);
  // Engine thread. Waits for the jobs given to Start.
  void Wait();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Job>* jobs_ = nullptr;  // guarded by mu_: non-null while work is pending
  bool done_ = true;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace llmserve
