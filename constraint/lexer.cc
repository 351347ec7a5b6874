#include "constraint/lexer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace llmserve::constraint {

Lexer::Lexer(Grammar* grammar, uint32_t max_states)
    : grammar_(grammar), pool_(grammar->regex), max_states_(max_states) {
  ComputeByteClasses();
  states_.reserve(1024);
  table_.reserve(size_t{1024} * num_classes_);
  derivative_.reserve(4096);
  states_.push_back(State{});  // dead
  table_.assign(num_classes_, kDead);
  accepting_set_of_.emplace(std::vector<LexemeId>{}, 0);
}

void Lexer::ComputeByteClasses() {
  // Bytes are equivalent when every byte set in the expressions has both or neither.
  // Refine the partition by each distinct set: (old class, in set) -> new class.
  std::array<uint16_t, 256> cls{};
  std::array<uint16_t, 512> split;
  for (size_t id = 0; id < pool_.size(); ++id) {
    const RegexNode& n = pool_.node(static_cast<RegexId>(id));
    if (n.kind != RegexKind::kBytes) continue;
    split.fill(UINT16_MAX);
    uint16_t next = 0;
    for (int b = 0; b < 256; ++b) {
      uint16_t& slot = split[cls[b] * 2 + (n.bytes.Has(static_cast<uint8_t>(b)) ? 1 : 0)];
      if (slot == UINT16_MAX) slot = next++;
      cls[b] = slot;
    }
  }
  for (int b = 0; b < 256; ++b) class_of_[b] = static_cast<uint8_t>(cls[b]);
  std::array<bool, 256> seen{};
  for (int b = 0; b < 256; ++b) {
    if (!seen[cls[b]]) {
      seen[cls[b]] = true;
      class_rep_[cls[b]] = static_cast<uint8_t>(b);
    }
  }
  num_classes_ = 0;
  for (int b = 0; b < 256; ++b) num_classes_ = std::max(num_classes_, static_cast<int>(cls[b]) + 1);
}

RegexId Lexer::Derive(RegexId re, uint8_t b) {
  uint64_t key = (uint64_t{re} << 8) | class_of_[b];
  auto it = derivative_.find(key);
  if (it != derivative_.end()) return it->second;
  if (work() > budget_end_) {
    // Over the budget (see Budget): stop deriving; the state being built fails.
    if (status_.ok()) {
      status_ = absl::ResourceExhaustedError(
          "the constraint's lexer needs too much work for one token (a pathological expression?)");
    }
    return pool_.Nothing();
  }
  work_ += 1 + pool_.node(re).children.size();
  RegexId result = pool_.Derivative(re, b, [this](RegexId c, uint8_t x) { return Derive(c, x); });
  derivative_.emplace(key, result);
  return result;
}

Lexer::StateId Lexer::Intern(std::vector<std::pair<LexemeId, RegexId>> items) {
  if (items.empty()) return kDead;
  auto it = state_of_.find(items);
  if (it != state_of_.end()) return it->second;
  if (states_.size() >= max_states_ || !pool_.status().ok()) {
    if (status_.ok()) {
      status_ = !pool_.status().ok()
                    ? pool_.status()
                    : absl::ResourceExhaustedError(absl::StrCat(
                          "the constraint's lexer needs more than ", max_states_, " states"));
    }
    return kDead;
  }
  State st;
  for (auto [lexeme, re] : items) {
    if (pool_.Nullable(re)) st.accepting.push_back(lexeme);
  }
  auto [set_it, fresh] = accepting_set_of_.try_emplace(st.accepting, accepting_set_of_.size());
  st.accepting_set = set_it->second;
  st.items = items;
  StateId id = static_cast<StateId>(states_.size());
  states_.push_back(std::move(st));
  table_.resize(table_.size() + num_classes_, kUnknown);
  state_of_.emplace(std::move(items), id);
  return id;
}

Lexer::StateId Lexer::Start(const std::vector<LexemeId>& allowed) {
  auto it = start_of_.find(allowed);
  if (it != start_of_.end()) return it->second;
  std::vector<std::pair<LexemeId, RegexId>> items;
  items.reserve(allowed.size());
  for (LexemeId l : allowed) items.emplace_back(l, grammar_->lexemes[l]);
  StateId s = Intern(std::move(items));
  start_of_.emplace(allowed, s);
  return s;
}

Lexer::StateId Lexer::Compute(StateId s, uint8_t b) {
  if (work() > budget_end_) {
    if (status_.ok()) {
      status_ = absl::ResourceExhaustedError(
          "the constraint's lexer needs too much work for one token (a pathological expression?)");
    }
    return kDead;
  }
  std::vector<std::pair<LexemeId, RegexId>> next;
  const auto items = states_[s].items;  // copy: Intern may grow states_
  work_ += items.size();
  next.reserve(items.size());
  for (auto [lexeme, re] : items) {
    RegexId d = Derive(re, b);
    if (d != pool_.Nothing()) next.emplace_back(lexeme, d);
  }
  // Past a bound the lexer has failed for good (status()): nothing more is built or
  // cached, and every new transition is dead.
  if (!status_.ok()) return kDead;
  StateId t = Intern(std::move(next));
  if (t != kDead || status_.ok()) table_[size_t{s} * num_classes_ + class_of_[b]] = t;
  return t;
}

bool Lexer::CanContinue(StateId s) {
  if (s == kDead) return false;
  if (states_[s].can_continue < 0) {
    bool any = false;
    for (int c = 0; c < num_classes_ && !any; ++c) any = Next(s, class_rep_[c]) != kDead;
    states_[s].can_continue = any;
  }
  return states_[s].can_continue > 0;
}

}  // namespace llmserve::constraint
