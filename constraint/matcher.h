// Constraints compiled against a vocabulary, and the per-request matcher that turns one
// into token masks.
//
//   auto compiled = CompileConstraint(spec, vocab, limits);   // cached by content hash
//   Matcher m(*compiled);
//   m.ComputeMask(&mask);    // allowed next tokens (end-of-generation where it accepts)
//   m.Advance(token);        // the sampled token; an error if the mask did not allow it
//
// The matcher runs the grammar's lexer (a lazily built DFA over the lexemes, lexer.h) and
// an Earley parser over lexemes (earley.h), walking the vocabulary trie for a mask.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "constraint/grammar.h"
#include "constraint/token_vocabulary.h"

namespace llmserve::constraint {

class ConstraintRuntime;  // compiled_constraint.h

struct ConstraintLimits {
  uint32_t max_dfa_states = 200'000;  // lexer states built lazily, per compiled constraint
  uint32_t max_earley_items = 2'000'000;  // live items of one matcher
  // Full trie walks that visited at least walk_cache_min_nodes are remembered per lexer
  // state (a token mask each, ~16 KB for a 128k vocabulary), up to walk_cache_entries.
  uint32_t walk_cache_entries = 256;
  uint32_t walk_cache_min_nodes = 4096;
  // Lexer work (expression nodes derived, state pairs computed) one mask or one token may
  // take. MaskBench's schemas need at most ~0.6M; a pathological regex hits it within a
  // fraction of a second instead of stalling the batch for seconds per token.
  uint64_t max_lexer_work_per_token = 5'000'000;
};

// A grammar bound to a vocabulary, with the lazily built lexer and mask caches that every
// request using it shares. Thread-safe (the caches are guarded; see compiled_constraint.cc).
class CompiledConstraint {
 public:
  static absl::StatusOr<std::shared_ptr<CompiledConstraint>> Create(
      Grammar grammar, std::shared_ptr<const TokenVocabulary> vocab, ConstraintLimits limits = {});
  ~CompiledConstraint();

  const Grammar& grammar() const;
  const TokenVocabulary& vocab() const;
  ConstraintRuntime& runtime() const { return *runtime_; }

 private:
  CompiledConstraint() = default;
  std::unique_ptr<ConstraintRuntime> runtime_;
};

class MatcherState;  // earley.h

// One request's progress through a constraint. Not thread-safe; one owner at a time.
class Matcher {
 public:
  explicit Matcher(std::shared_ptr<CompiledConstraint> constraint);
  ~Matcher();
  Matcher(Matcher&&) noexcept;
  Matcher& operator=(Matcher&&) noexcept;

  // The tokens allowed next. mask is resized to the vocabulary.
  absl::Status ComputeMask(TokenMask* mask);
  // Feeds one token. INVALID_ARGUMENT if the constraint does not allow it (the state is
  // unchanged then). An end-of-generation token is accepted where the constraint accepts.
  absl::Status Advance(int32_t token);
  // Feeds raw bytes (for tests and llmgrammar --check): false if refused (state unchanged).
  bool AdvanceBytes(std::string_view bytes);

  // End of generation is allowed here.
  bool Accepting() const;
  // Nothing but end of generation can follow: the request is done.
  bool Complete() const;
  // An end-of-generation token has been accepted.
  bool Finished() const { return finished_; }
  // Back to the start (recompute after preemption replays the tokens).
  void Reset();
  // Bytes consumed so far.
  size_t bytes_consumed() const { return bytes_consumed_; }

 private:
  std::shared_ptr<CompiledConstraint> constraint_;
  std::unique_ptr<MatcherState> state_;
  bool finished_ = false;
  size_t bytes_consumed_ = 0;
};

// Whole-text check (tests and tools): does the grammar accept exactly `text`? An error
// only when a bound was hit.
absl::StatusOr<bool> GrammarAcceptsText(const Grammar& grammar, std::string_view text);

}  // namespace llmserve::constraint
