#include "scheduler/sequence.h"

namespace llmserve {

bool IsFinished(SequenceState s) { return s >= SequenceState::kFinishedEos; }

const char* SequenceStateName(SequenceState s) {
  switch (s) {
    case SequenceState::kWaiting: return "waiting";
    case SequenceState::kRunning: return "running";
    case SequenceState::kPreempted: return "preempted";
    case SequenceState::kFinishedEos: return "finished_eos";
    case SequenceState::kFinishedStopToken: return "finished_stop_token";
    case SequenceState::kFinishedStopString: return "finished_stop_string";
    case SequenceState::kFinishedConstraint: return "finished_constraint";
    case SequenceState::kFinishedLength: return "finished_length";
    case SequenceState::kFinishedCancelled: return "finished_cancelled";
    case SequenceState::kFinishedDeadline: return "finished_deadline";
    case SequenceState::kFinishedError: return "finished_error";
  }
  return "unknown";
}

}  // namespace llmserve
