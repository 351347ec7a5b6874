#include "constraint/matcher.h"

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

absl::Status Matcher::ComputeMask(TokenMask* mask) {
  ConstraintRuntime& rt = constraint_->runtime();
  if (rt.vocab == nullptr) return absl::FailedPreconditionError("the constraint has no vocabulary");
  const TokenVocabulary& vocab = *rt.vocab;
  if (mask->size() != vocab.size()) mask->Reset(vocab.size());
  else mask->Clear();
  if (finished_) return absl::OkStatus();

  absl::MutexLock lock(&rt.mu);
  EarleyParser& p = state_->parser;
  Lexer& lexer = rt.lexer;
  const auto& nodes = vocab.nodes();
  const auto& depths = vocab.depths();
  const uint32_t base_rows = p.num_rows();
  // Per depth: the lexer state after the path's bytes, and the parser's row count.
  std::vector<Lexer::StateId> lex(vocab.max_token_bytes() + 1);
  std::vector<uint32_t> rows(vocab.max_token_bytes() + 1);
  lex[0] = state_->lex;
  rows[0] = base_rows;
  uint64_t* bits = mask->words().data();
  const uint32_t n = static_cast<uint32_t>(nodes.size());
  for (uint32_t i = 1; i < n;) {
    const TokenVocabulary::Node node = nodes[i];
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
  for (auto [node, id] : vocab.duplicate_tokens()) {
    if (mask->Has(nodes[node].token())) mask->Set(id);
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
