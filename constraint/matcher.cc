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
  rt.lexer.Budget(rt.limits.max_lexer_work_per_token);
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
// bound) without ending the lexeme? That holds when no string of them leads to the dead
// state: a search over whole characters from q, which gives up past `max_states`.
//
// For the unbounded slice the answer for every state the search visits is the same as
// for q, so a successful search marks them all (rt.slice_safe) and later searches stop
// at them: an object's "any other key" expression, whose states run through every
// prefix of the named keys, is explored once for all the key positions that use it.
enum class Containment { kYes, kNo, kGaveUp };

Containment SliceContainsOnce(ConstraintRuntime& rt, const TokenSlice& s, bool unbounded_memo,
                              Lexer::StateId q, size_t max_states) ABSL_EXCLUSIVE_LOCKS_REQUIRED(rt.mu) {
  Lexer& lexer = rt.lexer;
  auto& safe = rt.slice_safe;
  auto known_safe = [&](Lexer::StateId x) { return unbounded_memo && x < safe.size() && safe[x] > 0; };
  if (known_safe(q)) return Containment::kYes;
  std::vector<Lexer::StateId> frontier = {q}, seen = {q};
  absl::flat_hash_set<uint64_t> in_char;  // (char DFA state, lexer state) within one character
  Containment result = Containment::kYes;
  for (uint32_t level = 0; !frontier.empty(); ++level) {
    if (s.max_chars != 0 && level == s.max_chars) break;
    std::vector<Lexer::StateId> next;
    for (Lexer::StateId x0 : frontier) {
      if (known_safe(x0) && x0 != q) continue;
      in_char.clear();
      std::vector<std::pair<uint8_t, Lexer::StateId>> stack = {{0, x0}};
      while (!stack.empty()) {
        auto [u, x] = stack.back();
        stack.pop_back();
        for (int b = 0; b < 256; ++b) {
          const uint8_t u2 = s.char_dfa[u][b];
          if (u2 == TokenSlice::kDead) continue;
          const Lexer::StateId y = lexer.Next(x, static_cast<uint8_t>(b));
          if (y == Lexer::kDead) return Containment::kNo;
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
      seen.insert(seen.end(), fresh.begin(), fresh.end());
      next = std::move(fresh);
    }
    if (next.size() > max_states || seen.size() > max_states) {
      result = Containment::kGaveUp;
      break;
    }
    frontier = std::move(next);
  }
  if (result == Containment::kYes && unbounded_memo) {
    if (safe.size() < lexer.num_states()) safe.resize(lexer.num_states() + 64, 0);
    for (Lexer::StateId x : seen) safe[x] = 1;
  }
  return result;
}

// The whole state, or (when that explores too far, as a union of many key names does)
// any one of its pairs: a string that keeps one pair alive keeps the state alive.
bool SliceContains(ConstraintRuntime& rt, size_t slice, Lexer::StateId q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(rt.mu) {
  constexpr size_t kWholeStates = 32, kPairStates = 1024;
  Lexer& lexer = rt.lexer;
  const TokenSlice& s = rt.vocab->slices()[slice];
  const bool memo = s.max_chars == 0;
  const Containment whole = SliceContainsOnce(rt, s, memo, q, kWholeStates);
  if (whole != Containment::kGaveUp) return whole == Containment::kYes;
  // One pair alone is the state itself: nothing more to learn (and a long bounded string
  // would only be explored further).
  if (!memo || lexer.NumPairs(q) < 2) return false;
  for (size_t k = 0; k < lexer.NumPairs(q); ++k) {
    if (SliceContainsOnce(rt, s, memo, lexer.Single(q, k), kPairStates) == Containment::kYes) return true;
  }
  return false;
}

int SliceFor(ConstraintRuntime& rt, Lexer::StateId q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(rt.mu) {
  if (rt.slice_of_state.size() <= q) rt.slice_of_state.resize(rt.lexer.num_states() + 64, -2);
  int8_t& slot = rt.slice_of_state[q];
  if (slot == -2) {
    slot = -1;
    const auto& slices = rt.vocab->slices();
    for (size_t i = 0; i < slices.size(); ++i) {
      if (SliceContains(rt, i, q)) {
        slot = static_cast<int8_t>(i);
        break;
      }
    }
  }
  return slot;
}

// Where the lexer state loops on many bytes (a pattern's character class), the tokens
// made only of those bytes stay in it: they are the ByteSlice's, and only the rest of
// the trie is walked. Remembered per lexer state.
constexpr int kMinLoopBytes = 32;

const ByteSlice* LoopSliceFor(ConstraintRuntime& rt, Lexer::StateId q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(rt.mu) {
  auto it = rt.loop_slices.find(q);
  if (it != rt.loop_slices.end()) return it->second.get();
  std::array<uint64_t, 4> loop{};
  int count = 0;
  for (int b = 0; b < 256; ++b) {
    if (rt.lexer.Next(q, static_cast<uint8_t>(b)) == q) {
      loop[b >> 6] |= uint64_t{1} << (b & 63);
      ++count;
    }
  }
  std::shared_ptr<const ByteSlice> slice = count >= kMinLoopBytes ? rt.vocab->SliceOfBytes(loop) : nullptr;
  return rt.loop_slices.emplace(q, std::move(slice)).first->second.get();
}

// What a recording walk collects (ConstraintRuntime::StateWalk) and how much it visited.
struct WalkRecord {
  ConstraintRuntime::StateWalk* walk = nullptr;
  uint64_t visited = 0;
};

// Sets the bits of the tokens that may come next among trie nodes [begin, end), whose
// parent is at depth d0 with lexer state `start`: a depth-first walk carrying the lexer
// state (and the parser's row count) per depth, skipping a subtree where the lexer dies
// and no lexeme can end. With `rec`, also records the walk (tokens and boundaries reached
// without the parser).
void WalkTrie(ConstraintRuntime& rt, EarleyParser& p, const TokenTrie& trie, uint32_t begin, uint32_t end,
              uint32_t d0, Lexer::StateId start, uint64_t* bits, WalkRecord* rec)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(rt.mu) {
  Lexer& lexer = rt.lexer;
  const TokenTrie::Node* nodes = trie.nodes.data();
  const uint16_t* depths = trie.depths.data();
  const uint32_t base_rows = p.num_rows();
  std::vector<Lexer::StateId> lex(trie.max_depth + 1);
  std::vector<uint32_t> rows(trie.max_depth + 1);
  lex[d0] = start;
  rows[d0] = base_rows;
  uint64_t visited = 0;
  for (uint32_t i = begin; i < end;) {
    ++visited;
    const TokenTrie::Node node = nodes[i];
    const uint32_t d = depths[i];
    const Lexer::StateId s = lex[d - 1];
    if (p.num_rows() != rows[d - 1]) p.PopTo(rows[d - 1]);
    Lexer::StateId t = lexer.Next(s, node.byte());
    if (t == Lexer::kDead) {
      if (lexer.IsAccepting(s)) {
        if (rec != nullptr && rows[d - 1] == base_rows) rec->walk->boundaries.emplace_back(i, s);
        if (p.Scan(lexer.Accepting(s), lexer.AcceptingSetId(s))) t = lexer.Next(LexStart(rt, p), node.byte());
      }
      if (t == Lexer::kDead) {
        i = node.subtree_end;
        continue;
      }
    }
    lex[d] = t;
    rows[d] = p.num_rows();
    const int32_t tok = node.token();
    if (tok >= 0) {
      bits[tok >> 6] |= uint64_t{1} << (tok & 63);
      if (rec != nullptr && rows[d] == base_rows) rec->walk->inner.Set(tok);
    }
    ++i;
  }
  p.PopTo(base_rows);
  if (rec != nullptr) rec->visited = visited;
}

// The whole trie from lexer state `start`, through the remembered walk when there is one;
// a walk that visited many nodes is remembered (within the cache's bound).
void WalkAll(ConstraintRuntime& rt, EarleyParser& p, const TokenTrie& trie, Lexer::StateId start, TokenMask* mask)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(rt.mu) {
  const uint32_t n = static_cast<uint32_t>(trie.nodes.size());
  auto it = rt.walks.find(start);
  if (it != rt.walks.end()) {
    const ConstraintRuntime::StateWalk& w = *it->second;
    *mask = w.inner;
    uint64_t* bits = mask->words().data();
    const uint32_t base_rows = p.num_rows();
    for (auto [i, s] : w.boundaries) {
      p.PopTo(base_rows);
      if (!p.Scan(rt.lexer.Accepting(s), rt.lexer.AcceptingSetId(s))) continue;
      const TokenTrie::Node node = trie.nodes[i];
      const Lexer::StateId t = rt.lexer.Next(LexStart(rt, p), node.byte());
      if (t == Lexer::kDead) continue;
      if (node.token() >= 0) bits[node.token() >> 6] |= uint64_t{1} << (node.token() & 63);
      WalkTrie(rt, p, trie, i + 1, node.subtree_end, trie.depths[i], t, bits, nullptr);
    }
    p.PopTo(base_rows);
    return;
  }
  mask->Clear();
  const bool may_cache = rt.walks.size() < rt.limits.walk_cache_entries;
  auto walk = may_cache ? std::make_unique<ConstraintRuntime::StateWalk>() : nullptr;
  WalkRecord rec{walk.get(), 0};
  if (walk != nullptr) walk->inner.Reset(mask->size());
  WalkTrie(rt, p, trie, 1, n, 0, start, mask->words().data(), walk != nullptr ? &rec : nullptr);
  if (walk != nullptr && rec.visited >= rt.limits.walk_cache_min_nodes) rt.walks.emplace(start, std::move(walk));
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
  rt.lexer.Budget(rt.limits.max_lexer_work_per_token);
  EarleyParser& p = state_->parser;
  const int slice = SliceFor(rt, state_->lex);
  if (slice >= 0) {
    const TokenSlice& s = vocab.slices()[slice];
    *mask = s.tokens;
    WalkTrie(rt, p, s.rest, 1, static_cast<uint32_t>(s.rest.nodes.size()), 0, state_->lex, mask->words().data(), nullptr);
  } else {
    if (mask->size() != vocab.size()) mask->Reset(vocab.size());
    if (const ByteSlice* loop = LoopSliceFor(rt, state_->lex)) {
      *mask = loop->tokens;
      WalkTrie(rt, p, loop->rest, 1, static_cast<uint32_t>(loop->rest.nodes.size()), 0, state_->lex,
               mask->words().data(), nullptr);
    } else {
      WalkAll(rt, p, vocab.trie(), state_->lex, mask);
    }
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
  const bool advanced = m.AdvanceBytes(text);
  const bool accepting = advanced && m.Accepting();
  ConstraintRuntime& rt = (*compiled)->runtime();
  absl::MutexLock lock(&rt.mu);
  if (!rt.lexer.status().ok()) return rt.lexer.status();
  return accepting;
}

}  // namespace llmserve::constraint
