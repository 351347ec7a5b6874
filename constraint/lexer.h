// The lexer: a DFA over all of a grammar's lexemes, built lazily by regular-expression
// derivatives (Brzozowski; states are simplified, hash-consed expressions, so counted
// repetitions like {0,10000} cost no expansion).
//
// A lexer state is the set of (lexeme, remaining expression) pairs still possible after
// the bytes read since the lexeme started. Transitions are cached in a table indexed by
// byte class (bytes no expression tells apart share a class), so a walk down the token
// trie is one table lookup per byte once a path has been seen. State 0 is dead.
// Not thread-safe: the owner (ConstraintRuntime) serializes use.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "constraint/grammar.h"

namespace llmserve::constraint {

class Lexer {
 public:
  using StateId = uint32_t;
  static constexpr StateId kDead = 0;

  // `grammar.regex` grows as derivatives are built (bounded by its RegexLimits).
  Lexer(Grammar* grammar, uint32_t max_states);

  // The state that starts any lexeme of `allowed` (sorted, unique). Dead if empty.
  StateId Start(const std::vector<LexemeId>& allowed);

  StateId Next(StateId s, uint8_t b) {
    StateId t = table_[size_t{s} * num_classes_ + class_of_[b]];
    return t != kUnknown ? t : Compute(s, b);
  }

  // Lexemes that match exactly the bytes read in state s (sorted). Empty if none.
  const std::vector<LexemeId>& Accepting(StateId s) const { return states_[s].accepting; }
  bool IsAccepting(StateId s) const { return !states_[s].accepting.empty(); }
  // Id of s's accepting set (equal sets, equal ids): the parser's scan cache key.
  uint32_t AcceptingSetId(StateId s) const { return states_[s].accepting_set; }
  // Some byte leads out of s to a live state.
  bool CanContinue(StateId s);
  // The (lexeme, expression) pairs of s, and the state of the k-th pair alone: a string
  // that keeps one pair alive keeps the whole state alive.
  size_t NumPairs(StateId s) const { return states_[s].items.size(); }
  StateId Single(StateId s, size_t k) { return Intern({states_[s].items[k]}); }

  size_t num_states() const { return states_.size(); }
  // Work done building the automaton so far: expression nodes derived plus pairs of the
  // states computed. The matcher bounds it per mask (ConstraintLimits).
  uint64_t work() const { return work_ + pool_.work(); }
  // From now on at most `limit` more work: past it the lexer fails (status()) and new
  // transitions are dead. A pathological expression (a regex whose derivatives grow with
  // every byte) then ends its requests instead of stalling the batch.
  void Budget(uint64_t limit) { budget_end_ = work() + limit; }
  int num_classes() const { return num_classes_; }
  const std::array<uint8_t, 256>& byte_classes() const { return class_of_; }
  // OK, or RESOURCE_EXHAUSTED once a bound (states, expression nodes) was hit; the lexer
  // then treats new states as dead, so the constraint refuses rather than grows.
  const absl::Status& status() const { return status_; }

 private:
  static constexpr StateId kUnknown = UINT32_MAX;
  struct State {
    std::vector<std::pair<LexemeId, RegexId>> items;  // sorted by lexeme
    std::vector<LexemeId> accepting;
    uint32_t accepting_set = 0;
    int8_t can_continue = -1;  // unknown
  };

  StateId Compute(StateId s, uint8_t b);
  StateId Intern(std::vector<std::pair<LexemeId, RegexId>> items);
  RegexId Derive(RegexId re, uint8_t b);
  void ComputeByteClasses();

  Grammar* grammar_;
  RegexPool& pool_;
  uint32_t max_states_;
  std::array<uint8_t, 256> class_of_{};
  std::array<uint8_t, 256> class_rep_{};  // a byte of each class
  int num_classes_ = 1;
  std::vector<State> states_;
  std::vector<StateId> table_;  // state * num_classes + class -> state
  absl::flat_hash_map<std::vector<std::pair<LexemeId, RegexId>>, StateId> state_of_;
  absl::flat_hash_map<std::vector<LexemeId>, StateId> start_of_;
  absl::flat_hash_map<std::vector<LexemeId>, uint32_t> accepting_set_of_;
  absl::flat_hash_map<uint64_t, RegexId> derivative_;  // (regex << 8 | class) -> derivative
  absl::Status status_;
  uint64_t work_ = 0;
  uint64_t budget_end_ = UINT64_MAX;
};

}  // namespace llmserve::constraint
