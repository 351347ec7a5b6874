#include "constraint/grammar.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace llmserve::constraint {

GrammarBuilder::GrammarBuilder(GrammarLimits limits) : limits_(limits) {
  grammar_.regex = RegexPool(limits.regex);
}

const absl::Status& GrammarBuilder::status() const {
  if (status_.ok() && !grammar_.regex.status().ok()) status_ = grammar_.regex.status();
  return status_;
}

LexemeId GrammarBuilder::Lexeme(RegexId expr) {
  auto it = lexeme_of_.find(expr);
  if (it != lexeme_of_.end()) return it->second;
  if (grammar_.lexemes.size() >= limits_.max_lexemes) {
    Fail(absl::ResourceExhaustedError(
        absl::StrCat("the constraint needs more than ", limits_.max_lexemes, " lexemes")));
    return 0;
  }
  LexemeId id = static_cast<LexemeId>(grammar_.lexemes.size());
  grammar_.lexemes.push_back(expr);
  lexeme_of_.emplace(expr, id);
  return id;
}

NonterminalId GrammarBuilder::NewNonterminal(std::string name) {
  grammar_.nonterminal_names.push_back(std::move(name));
  return static_cast<NonterminalId>(grammar_.nonterminal_names.size() - 1);
}

void GrammarBuilder::AddRule(NonterminalId lhs, std::vector<Symbol> rhs) {
  if (!status_.ok()) return;
  symbols_ += rhs.size() + 1;
  if (pending_.size() >= limits_.max_rules) {
    Fail(absl::ResourceExhaustedError(
        absl::StrCat("the constraint's grammar needs more than ", limits_.max_rules, " rules")));
    return;
  }
  if (symbols_ > limits_.max_symbols) {
    Fail(absl::ResourceExhaustedError(absl::StrCat(
        "the constraint's grammar needs more than ", limits_.max_symbols, " symbols")));
    return;
  }
  pending_.push_back(Rule{lhs, std::move(rhs)});
}

Symbol GrammarBuilder::Sequence(std::string name, std::vector<Symbol> rhs) {
  NonterminalId nt = NewNonterminal(std::move(name));
  AddRule(nt, std::move(rhs));
  return Symbol::Nonterminal(nt);
}

Symbol GrammarBuilder::Choice(std::string name, std::vector<std::vector<Symbol>> alternatives) {
  NonterminalId nt = NewNonterminal(std::move(name));
  for (auto& alt : alternatives) AddRule(nt, std::move(alt));
  return Symbol::Nonterminal(nt);
}

Symbol GrammarBuilder::Optional(std::string name, Symbol s) {
  NonterminalId nt = NewNonterminal(std::move(name));
  AddRule(nt, {s});
  AddRule(nt, {});
  return Symbol::Nonterminal(nt);
}

Symbol GrammarBuilder::Star(std::string name, Symbol s) {
  NonterminalId nt = NewNonterminal(std::move(name));
  AddRule(nt, {Symbol::Nonterminal(nt), s});
  AddRule(nt, {});
  return Symbol::Nonterminal(nt);
}

absl::StatusOr<Grammar> GrammarBuilder::Build(NonterminalId start) && {
  if (!status().ok()) return status();
  if (start >= grammar_.nonterminal_names.size()) {
    return absl::InvalidArgumentError("the grammar has no start symbol");
  }
  Grammar& g = grammar_;
  for (LexemeId l = 0; l < g.lexemes.size(); ++l) {
    if (g.regex.Nullable(g.lexemes[l])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a lexeme of the grammar matches the empty string: /", g.regex.ToString(g.lexemes[l]), "/"));
    }
  }
  const size_t n = g.nonterminal_names.size();
  // Productive nonterminals: fixpoint over the rules. A lexeme whose expression is Nothing
  // matches no string, so it is not productive either.
  std::vector<bool> productive(n, false);
  auto symbol_productive = [&](Symbol s) {
    if (s.is_lexeme()) return g.lexemes[s.id()] != g.regex.Nothing();
    return bool(productive[s.id()]);
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const Rule& r : pending_) {
      if (productive[r.lhs]) continue;
      if (std::all_of(r.rhs.begin(), r.rhs.end(), symbol_productive)) {
        productive[r.lhs] = true;
        changed = true;
      }
    }
  }
  if (!productive[start]) {
    return absl::InvalidArgumentError("the constraint accepts no output at all");
  }
  std::vector<Rule> kept;
  kept.reserve(pending_.size());
  for (Rule& r : pending_) {
    if (productive[r.lhs] && std::all_of(r.rhs.begin(), r.rhs.end(), symbol_productive)) {
      kept.push_back(std::move(r));
    }
  }
  std::stable_sort(kept.begin(), kept.end(), [](const Rule& a, const Rule& b) { return a.lhs < b.lhs; });
  g.rules = std::move(kept);
  g.rules_of.assign(n, {0, 0});
  for (uint32_t i = 0; i < g.rules.size();) {
    uint32_t j = i;
    while (j < g.rules.size() && g.rules[j].lhs == g.rules[i].lhs) ++j;
    g.rules_of[g.rules[i].lhs] = {i, j};
    i = j;
  }
  g.nullable.assign(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (const Rule& r : g.rules) {
      if (g.nullable[r.lhs]) continue;
      if (std::all_of(r.rhs.begin(), r.rhs.end(),
                      [&](Symbol s) { return s.is_nonterminal() && g.nullable[s.id()]; })) {
        g.nullable[r.lhs] = true;
        changed = true;
      }
    }
  }
  g.start = start;
  return std::move(grammar_);
}

std::string Grammar::ToString() const {
  std::string out;
  for (NonterminalId nt = 0; nt < nonterminal_names.size(); ++nt) {
    auto [b, e] = rules_of[nt];
    if (b == e) continue;
    absl::StrAppend(&out, nonterminal_names[nt], "#", nt, " ::= ");
    for (uint32_t r = b; r < e; ++r) {
      if (r > b) out += " | ";
      if (rules[r].rhs.empty()) out += "()";
      for (size_t i = 0; i < rules[r].rhs.size(); ++i) {
        Symbol s = rules[r].rhs[i];
        if (i) out += " ";
        if (s.is_lexeme()) absl::StrAppend(&out, "/", regex.ToString(lexemes[s.id()]), "/");
        else absl::StrAppend(&out, nonterminal_names[s.id()], "#", s.id());
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace llmserve::constraint
