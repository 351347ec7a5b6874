#include "constraint/matcher.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "constraint/compiled_constraint.h"

namespace llmserve::constraint {

absl::StatusOr<std::shared_ptr<CompiledConstraint>> CompiledConstraint::Create(
    Grammar grammar, std::shared_ptr<const TokenVocabulary> vocab, ConstraintLimits limits) {
  std::shared_ptr<CompiledConstraint> c(new CompiledConstraint());
  c->runtime_ = std::make_unique<ConstraintRuntime>(std::move(grammar), std::move(vocab), limits);
  return c;
}

CompiledConstraint::~CompiledConstraint() = default;

const Grammar& CompiledConstraint::grammar() const {
  return runtime_->grammar;  // immutable apart from the regex pool's growth
}
const TokenVocabulary& CompiledConstraint::vocab() const { return *runtime_->vocab; }

namespace {

// All of these run with the runtime's mutex held.

Lexer::StateId LexStart(ConstraintRuntime& rt, EarleyParser& p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(rt.mu) {
  uint32_t& tag = p.TopTag();
  if (tag == UINT32_MAX) tag = rt.lexer.Start(p.Allowed());
  return tag;
}

// Reads one byte: within the lexeme if it can go on (greedy), else ends the lexeme (the
// parser scans it) and starts the next one with this byte. False if neither works; the
// parser's rows are then as before.
bool StepByte(ConstraintRuntime& rt, EarleyParser& p, Lexer::StateId& lex, uint8_t b)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(rt.mu) {
  Lexer::StateId t = rt.lexer.Next(lex, b);
  if (t == Lexer::kDead) {
    if (!rt.lexer.IsAccepting(lex)) return false;
    const uint32_t rows = p.num_rows();
    if (!p.Scan(rt.lexer.Accepting(lex), rt.lexer.AcceptingSetId(lex))) return false;
    t = rt.lexer.Next(LexStart(rt, p), b);
    if (t == Lexer::kDead) {
      p.PopTo(rows);
      return false;
    }
  }
  lex = t;
  return true;
}

// The output may end here: before any byte, where the grammar accepts the empty output;
// else where the current lexeme can end and the parser then accepts.
bool CanEnd(ConstraintRuntime& rt, EarleyParser& p, Lexer::StateId lex, bool at_start)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(rt.mu) {
  if (at_start) return p.Accepts();
  if (!rt.lexer.IsAccepting(lex)) return false;
  const uint32_t rows = p.num_rows();
  const bool ok = p.Scan(rt.lexer.Accepting(lex), rt.lexer.AcceptingSetId(lex)) && p.Accepts();
  p.PopTo(rows);
  return ok;
}

absl::Status BoundsStatus(ConstraintRuntime& rt, const EarleyParser& p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(rt.mu) {
  if (!rt.lexer.status().ok()) return rt.lexer.status();
  return p.status();
}

}  // namespace

Matcher::Matcher(std::shared_ptr<CompiledConstraint> constraint)
    : constraint_(std::move(constraint)) {
  Reset();
}
Matcher::~Matcher() = default;
Matcher::Matcher(Matcher&&) noexcept = default;
Matcher& Matcher::operator=(Matcher&&) noexcept = default;

void Matcher::Reset() {
  ConstraintRuntime& rt = constraint_->runtime();
  absl::MutexLock lock(&rt.mu);
  state_ = std::make_unique<MatcherState>(rt);
  state_->lex = LexStart(rt, state_->parser);
  finished_ = false;
  bytes_consumed_ = 0;
}

bool Matcher::AdvanceBytes(std::string_view bytes) {
  if (finished_) return bytes.empty();
  ConstraintRuntime& rt = constraint_->runtime();
  absl::MutexLock lock(&rt.mu);
  EarleyParser& p = state_->parser;
  const uint32_t rows = p.num_rows();
  Lexer::StateId lex = state_->lex;
  for (char c : bytes) {
    if (!StepByte(rt, p, lex, static_cast<uint8_t>(c))) {
      p.PopTo(rows);
      return false;
    }
  }
  state_->lex = lex;
  bytes_consumed_ += bytes.size();
  return true;
}

absl::Status Matcher::Advance(int32_t token) {
  if (finished_) return absl::FailedPreconditionError("the constraint has already ended");
  const TokenVocabulary* vocab = constraint_->runtime().vocab.get();
  if (vocab == nullptr) return absl::FailedPreconditionError("the constraint has no vocabulary");
  if (token < 0 || token >= vocab->size()) {
    return absl::InvalidArgumentError(absl::StrCat("token ", token, " is outside the vocabulary"));
  }
  if (vocab->IsEndOfGeneration(token)) {
    if (!Accepting()) {
      return absl::InvalidArgumentError("the constraint does not allow the output to end here");
    }
    finished_ = true;
    return absl::OkStatus();
  }
  if (vocab->special(token) || vocab->bytes(token).empty()) {
    return absl::InvalidArgumentError(absl::StrCat("the constraint never allows control token ", token));
  }
  if (!AdvanceBytes(vocab->bytes(token))) {
    ConstraintRuntime& rt = constraint_->runtime();
    absl::MutexLock lock(&rt.mu);
    absl::Status bounds = BoundsStatus(rt, state_->parser);
    if (!bounds.ok()) return bounds;
    return absl::InvalidArgumentError(absl::StrCat("the constraint does not allow token ", token));
  }
  return absl::OkStatus();
}

bool Matcher::Accepting() const {
  if (finished_) return false;
  ConstraintRuntime& rt = constraint_->runtime();
  absl::MutexLock lock(&rt.mu);
  return CanEnd(rt, state_->parser, state_->lex, bytes_consumed_ == 0);
}

bool Matcher::Complete() const {
  if (finished_) return true;
  ConstraintRuntime& rt = constraint_->runtime();
  absl::MutexLock lock(&rt.mu);
  EarleyParser& p = state_->parser;
  if (bytes_consumed_ == 0) return p.Accepts() && p.Allowed().empty();
  if (!rt.lexer.IsAccepting(state_->lex) || rt.lexer.CanContinue(state_->lex)) return false;
  const uint32_t rows = p.num_rows();
  const bool done = p.Scan(rt.lexer.Accepting(state_->lex), rt.lexer.AcceptingSetId(state_->lex)) &&
                    p.Accepts() && p.Allowed().empty();
  p.PopTo(rows);
  return done;
}

namespace {

// Does the lexer, from state q, allow every string of the slice's characters (up to its
// bound) without ending the lexeme? Explored a whole character at a time; gives up
// (false) rather than explore far.
bool SliceContains(Lexer& lexer, const TokenSlice& s, Lexer::StateId q) {
  constexpr size_t kMaxStates = 32;
  std::vector<Lexer::StateId> frontier = {q}, seen = {q};
  absl::flat_hash_set<uint64_t> in_char;  // (char DFA state, lexer state) within one character
  for (uint32_t level = 0;; ++level) {
    if (s.max_chars != 0 && level == s.max_chars) return true;
    std::vector<Lexer::StateId> next;
    for (Lexer::StateId x0 : frontier) {
      in_char.clear();
      std::vector<std::pair<uint8_t, Lexer::StateId>> stack = {{0, x0}};
      while (!stack.empty()) {
        auto [u, x] = stack.back();
        stack.pop_back();
        for (int b = 0; b < 256; ++b) {
          const uint8_t u2 = s.char_dfa[u][b];
          if (u2 == TokenSlice::kDead) continue;
          const Lexer::StateId y = lexer.Next(x, static_cast<uint8_t>(b));
          if (y == Lexer::kDead) return false;
          if (u2 == TokenSlice::kAccept) {
            if (std::find(next.begin(), next.end(), y) == next.end()) next.push_back(y);
          } else if (in_char.insert((uint64_t{u2} << 32) | y).second) {
            stack.push_back({u2, y});
          }
        }
      }
    }
    if (s.max_chars == 0) {
      // Unbounded: done when no new state appears.
      std::vector<Lexer::StateId> fresh;
      for (Lexer::StateId y : next) {
        if (std::find(seen.begin(), seen.end(), y) == seen.end()) fresh.push_back(y);
      }
      if (fresh.empty()) return true;
      seen.insert(seen.end(), fresh.begin(), fresh.end());
      next = std::move(fresh);
    }
    if (next.size() > kMaxStates || seen.size() > kMaxStates) return false;
    frontier = std::move(next);
  }
}

int SliceFor(ConstraintRuntime& rt, Lexer::StateId q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(rt.mu) {
  if (rt.slice_of_state.size() <= q) rt.slice_of_state.resize(rt.lexer.num_states() + 64, -2);
  int8_t& slot = rt.slice_of_state[q];
  if (slot == -2) {
    slot = -1;
    const auto& slices = rt.vocab->slices();
    for (size_t i = 0; i < slices.size(); ++i) {
      if (SliceContains(rt.lexer, slices[i], q)) {
        slot = static_cast<int8_t>(i);
        break;
      }
    }
  }
  return slot;
}

// Sets the bits of the trie's tokens that may come next: a depth-first walk carrying the
// lexer state (and the parser's row count) per depth, skipping a subtree where the lexer
// dies and no lexeme can end.
void WalkTrie(ConstraintRuntime& rt, EarleyParser& p, const TokenTrie& trie, Lexer::StateId start,
              uint64_t* bits) ABSL_EXCLUSIVE_LOCKS_REQUIRED(rt.mu) {
  Lexer& lexer = rt.lexer;
  const TokenTrie::Node* nodes = trie.nodes.data();
  const uint16_t* depths = trie.depths.data();
  const uint32_t base_rows = p.num_rows();
  std::vector<Lexer::StateId> lex(trie.max_depth + 1);
  std::vector<uint32_t> rows(trie.max_depth + 1);
  lex[0] = start;
  rows[0] = base_rows;
  const uint32_t n = static_cast<uint32_t>(trie.nodes.size());
  for (uint32_t i = 1; i < n;) {
    const TokenTrie::Node node = nodes[i];
    const uint32_t d = depths[i];
    const Lexer::StateId s = lex[d - 1];
    if (p.num_rows() != rows[d - 1]) p.PopTo(rows[d - 1]);
    Lexer::StateId t = lexer.Next(s, node.byte());
    if (t == Lexer::kDead) {
      if (lexer.IsAccepting(s) && p.Scan(lexer.Accepting(s), lexer.AcceptingSetId(s))) {
        t = lexer.Next(LexStart(rt, p), node.byte());
      }
      if (t == Lexer::kDead) {
        i = node.subtree_end;
        continue;
      }
    }
    lex[d] = t;
    rows[d] = p.num_rows();
    const int32_t tok = node.token();
    if (tok >= 0) bits[tok >> 6] |= uint64_t{1} << (tok & 63);
    ++i;
  }
  p.PopTo(base_rows);
}

}  // namespace

absl::Status Matcher::ComputeMask(TokenMask* mask) {
  ConstraintRuntime& rt = constraint_->runtime();
  if (rt.vocab == nullptr) return absl::FailedPreconditionError("the constraint has no vocabulary");
  const TokenVocabulary& vocab = *rt.vocab;
  if (finished_) {
    mask->Reset(vocab.size());
    return absl::OkStatus();
  }
  absl::MutexLock lock(&rt.mu);
  EarleyParser& p = state_->parser;
  const int slice = SliceFor(rt, state_->lex);
  if (slice >= 0) {
    *mask = vocab.slices()[slice].tokens;
    WalkTrie(rt, p, vocab.slices()[slice].rest, state_->lex, mask->words().data());
  } else {
    if (mask->size() != vocab.size()) mask->Reset(vocab.size());
    else mask->Clear();
    WalkTrie(rt, p, vocab.trie(), state_->lex, mask->words().data());
  }
  for (auto [primary, extra] : vocab.duplicate_tokens()) {
    if (mask->Has(primary)) mask->Set(extra);
  }
  if (CanEnd(rt, p, state_->lex, bytes_consumed_ == 0)) {
    for (int32_t id : vocab.end_of_generation()) mask->Set(id);
  }
  return BoundsStatus(rt, p);
}

absl::StatusOr<bool> GrammarAcceptsText(const Grammar& grammar, std::string_view text) {
  auto compiled = CompiledConstraint::Create(grammar, nullptr);
  if (!compiled.ok()) return compiled.status();
  Matcher m(*compiled);
  if (!m.AdvanceBytes(text)) {
    ConstraintRuntime& rt = (*compiled)->runtime();
    absl::MutexLock lock(&rt.mu);
    if (!rt.lexer.status().ok()) return rt.lexer.status();
    return false;
  }
  return m.Accepting();
}

}  // namespace llmserve::constraint
