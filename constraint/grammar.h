// A constraint's grammar: a context-free grammar over lexemes, each lexeme a byte-level
// regular expression (regex.h). The JSON Schema compiler, the GBNF parser and the regex,
// choice and any-JSON constraints all produce one; the matcher (matcher.h) runs it.
//
// Lexing is greedy (maximal munch): a lexeme ends only where the next byte cannot continue
// any lexeme still possible. Grammars from JSON Schema are written so that this never
// changes the language (strings end at their quote, numbers at the first non-number byte).
// Lexemes never match the empty string; GrammarBuilder::Build refuses one that does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "constraint/regex.h"

namespace llmserve::constraint {

using LexemeId = uint32_t;
using NonterminalId = uint32_t;

// A grammar symbol: a lexeme or a nonterminal.
class Symbol {
 public:
  static Symbol Lexeme(LexemeId id) { return Symbol(id << 1); }
  static Symbol Nonterminal(NonterminalId id) { return Symbol((id << 1) | 1); }
  bool is_lexeme() const { return (v_ & 1) == 0; }
  bool is_nonterminal() const { return (v_ & 1) != 0; }
  uint32_t id() const { return v_ >> 1; }
  uint32_t raw() const { return v_; }
  bool operator==(const Symbol&) const = default;

 private:
  explicit Symbol(uint32_t v) : v_(v) {}
  uint32_t v_;
};

struct GrammarLimits {
  uint32_t max_rules = 200'000;
  uint32_t max_symbols = 2'000'000;  // total right-hand-side length
  uint32_t max_lexemes = 50'000;
  RegexLimits regex;
};

struct Rule {
  NonterminalId lhs;
  std::vector<Symbol> rhs;  // empty: the nonterminal derives the empty string
};

// Immutable once built.
struct Grammar {
  RegexPool regex;
  std::vector<RegexId> lexemes;          // LexemeId -> its expression
  std::vector<std::string> nonterminal_names;
  std::vector<Rule> rules;               // grouped by lhs (rules_of gives the range)
  std::vector<std::pair<uint32_t, uint32_t>> rules_of;  // NonterminalId -> [begin, end) in rules
  std::vector<bool> nullable;            // NonterminalId -> derives the empty string
  NonterminalId start = 0;

  // The grammar in a GBNF-like text: one line per nonterminal, lexemes as /regex/.
  std::string ToString() const;
};

class GrammarBuilder {
 public:
  explicit GrammarBuilder(GrammarLimits limits = {});

  RegexPool& regex() { return grammar_.regex; }

  // The lexeme for an expression (one lexeme per distinct expression).
  LexemeId Lexeme(RegexId expr);
  Symbol LexemeSymbol(RegexId expr) { return Symbol::Lexeme(Lexeme(expr)); }

  NonterminalId NewNonterminal(std::string name);
  void AddRule(NonterminalId lhs, std::vector<Symbol> rhs);

  // Conveniences that make a fresh nonterminal.
  Symbol Sequence(std::string name, std::vector<Symbol> rhs);         // lhs -> rhs
  Symbol Choice(std::string name, std::vector<std::vector<Symbol>> alternatives);
  Symbol Optional(std::string name, Symbol s);                         // lhs -> s | ()
  Symbol Star(std::string name, Symbol s);                             // lhs -> lhs s | ()

  // Sticky: the first bound exceeded or other construction error. Build returns it.
  void Fail(absl::Status status) { if (status_.ok()) status_ = std::move(status); }
  const absl::Status& status() const;
  size_t rule_count() const { return pending_.size(); }

  // Checks the limits and that no lexeme matches the empty string; drops rules that can
  // derive no string (unproductive); computes nullability. INVALID_ARGUMENT if the start
  // symbol derives nothing ("the constraint accepts no output").
  absl::StatusOr<Grammar> Build(NonterminalId start) &&;

 private:
  GrammarLimits limits_;
  Grammar grammar_;
  std::vector<Rule> pending_;
  absl::flat_hash_map<RegexId, LexemeId> lexeme_of_;
  uint64_t symbols_ = 0;
  mutable absl::Status status_;
};

}  // namespace llmserve::constraint
