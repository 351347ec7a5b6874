// Internal: what a CompiledConstraint holds. The grammar, its parser tables, the lazily
// built lexer and the vocabulary, behind one mutex: a matcher takes it for a mask or an
// advance, so requests sharing a constraint share (and fill) one lexer.
#pragma once

#include <memory>

#include "absl/container/flat_hash_map.h"

#include "absl/synchronization/mutex.h"
#include "constraint/earley.h"
#include "constraint/lexer.h"
#include "constraint/matcher.h"

namespace llmserve::constraint {

class ConstraintRuntime {
 public:
  ConstraintRuntime(Grammar g, std::shared_ptr<const TokenVocabulary> v, ConstraintLimits l)
      : grammar(std::move(g)), tables(grammar), lexer(&grammar, l.max_dfa_states),
        vocab(std::move(v)), limits(l) {}

  absl::Mutex mu;
  Grammar grammar ABSL_GUARDED_BY(mu);  // its regex pool grows with the lexer's derivatives
  const EarleyTables tables;
  Lexer lexer ABSL_GUARDED_BY(mu);
  const std::shared_ptr<const TokenVocabulary> vocab;  // null: text matching only
  const ConstraintLimits limits;
  // Lexer state -> the first vocabulary slice it contains (-1: none; -2: not yet known).
  std::vector<int8_t> slice_of_state ABSL_GUARDED_BY(mu);

  // A full trie walk from one lexer state, remembered: the tokens that stay inside the
  // current lexeme depend on the lexer state alone, so they are kept as a mask; where a
  // lexeme ends inside a token (a boundary: trie node, lexer state before its byte) the
  // parser decides, so those subtrees are walked again each time.
  struct StateWalk {
    TokenMask inner;
    std::vector<std::pair<uint32_t, uint32_t>> boundaries;  // (trie node, lexer state)
  };
  absl::flat_hash_map<uint32_t, std::unique_ptr<StateWalk>> walks ABSL_GUARDED_BY(mu);
  // Lexer state -> 1 when no string of the unbounded JSON-string slice leads it to the
  // dead state (0: not known).
  std::vector<int8_t> slice_safe ABSL_GUARDED_BY(mu);
  // Lexer state -> the vocabulary's slice of the bytes it loops on (null: too few).
  absl::flat_hash_map<uint32_t, std::shared_ptr<const ByteSlice>> loop_slices ABSL_GUARDED_BY(mu);
};

// A matcher's own state: its parser rows and where the lexer is in the current lexeme.
class MatcherState {
 public:
  explicit MatcherState(ConstraintRuntime& rt)
      : parser(&rt.tables, rt.limits.max_earley_items) {}
  EarleyParser parser;
  Lexer::StateId lex = Lexer::kDead;  // kDead until the first byte: then at a lexeme start
};

}  // namespace llmserve::constraint
