// Internal to the JSON Schema compiler: the intermediate form (json_schema_ir.h) -> Grammar.
//
// Lexemes are whole JSON tokens: a string value (quotes included), a number, true, false,
// null, an object key, and the punctuation { } [ ] , :. With flexible whitespace every
// lexeme but the document's first carries a [ \t\n\r]* prefix, so whitespace may appear
// between tokens but never before the first or after the last. Whole tokens keep greedy
// lexing exact: a string ends at its quote and a number is never followed by a digit.
//
// A schema that admits no value generates a lexeme whose expression is Nothing; the
// grammar builder then drops every rule that needs it (an optional property, an anyOf
// alternative), and refuses the grammar only if the document itself admits nothing.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "constraint/grammar.h"
#include "constraint/json_schema.h"
#include "constraint/json_schema_ir.h"
#include "constraint/regex_parser.h"

namespace llmserve::constraint::json_schema {

// What the string tries of one generator have lowered (json_schema_strings.cc).
struct TrieMemo {
  // A subtree (terminal, then each child's code point and subtree id) -> its id.
  absl::flat_hash_map<std::vector<uint32_t>, uint32_t> shapes;
  absl::flat_hash_map<uint32_t, RegexId> values, others;  // subtree id -> regex
  absl::flat_hash_map<std::vector<std::pair<uint32_t, uint32_t>>, RegexId> classes;  // code points -> regex
  std::array<std::optional<RegexId>, 128> ascii;  // one ASCII code point -> regex
  std::optional<RegexId> any_string;
};

class Generator {
 public:
  Generator(Context& ctx, const JsonSchemaOptions& opts);

  // A symbol deriving the values `s` admits. `first`: the document's first token (no
  // whitespace before it).
  absl::StatusOr<Symbol> Gen(const SchemaPtr& s, bool first);
  // Generates the pending $ref definitions, then builds the grammar starting at `start`.
  absl::StatusOr<Grammar> Finish(Symbol start);
  GrammarBuilder& builder() { return b_; }

 private:
  // --- json_schema_gen.cc ---
  absl::StatusOr<Symbol> GenInner(const SchemaPtr& s, bool first, uint32_t depth);
  // The token regex of a null, boolean, number or string schema (Nothing if none), or
  // nullopt for other kinds.
  absl::StatusOr<std::optional<RegexId>> PrimitiveRegex(const Schema& s);
  absl::StatusOr<RegexId> NumberRegex(const NumberSchema& n);
  absl::StatusOr<Symbol> GenAnyOf(const Schema& s, bool first, uint32_t depth);
  absl::StatusOr<Symbol> GenRef(const std::string& ref, bool first);
  absl::StatusOr<Symbol> GenAny(bool first);
  absl::StatusOr<Symbol> GenArray(const ArraySchema& a, bool first, uint32_t depth);
  Symbol Nothing();
  // The token `re` as a lexeme (with the whitespace prefix unless first).
  Symbol Lex(RegexId re, bool first);
  Symbol Punct(char c, bool first) { return Lex(pool().Byte(static_cast<uint8_t>(c)), first); }
  Symbol Seq(std::vector<Symbol> rhs);
  Symbol Opt(Symbol s);
  // `item` max(min, 1)..max times separated by commas (max nullopt: unbounded); the
  // caller makes it optional where none is allowed.
  absl::StatusOr<Symbol> Repeated(Symbol item, uint64_t min, std::optional<uint64_t> max);

  // --- json_schema_objects.cc ---
  absl::StatusOr<Symbol> GenObject(const ObjectSchema& o, bool first, uint32_t depth);
  // Members in order, each (member, required), comma separated: the standard
  // construction with one nonterminal per (position, whether a member came before).
  Symbol Members(const std::vector<std::pair<Symbol, bool>>& items, size_t i, bool prefixed,
                 absl::flat_hash_map<std::pair<size_t, bool>, Symbol>& memo);

  // --- json_schema_strings.cc ---
  absl::StatusOr<RegexId> StringToken(const StringSchema& s);
  // A JSON string (quotes included) whose value is one of `values` (any escaping).
  absl::StatusOr<RegexId> StringOneOf(const std::vector<std::string>& values);
  // A JSON string (quotes included) whose value is none of `values`.
  absl::StatusOr<RegexId> StringNoneOf(const std::vector<std::string>& values);
  absl::StatusOr<RegexId> PatternBody(const StringRegex& r);
  RegexId Quoted(RegexId body);
  RegexId JsonChar();

  RegexPool& pool() { return b_.regex(); }

  Context& ctx_;
  JsonSchemaOptions opts_;
  GrammarBuilder b_;
  RegexId ws_;
  absl::flat_hash_map<std::pair<std::string, bool>, Symbol> ref_symbols_;
  std::vector<std::pair<std::string, bool>> pending_refs_;
  absl::flat_hash_map<std::pair<std::string, bool>, RegexId> pattern_cache_;
  std::optional<Symbol> any_[2];
  std::optional<RegexId> json_char_;
  // Memos of the string tokens (json_schema_strings.cc): building one again would only
  // find interned nodes, so they return the id the pool would.
  TrieMemo trie_memo_;
  absl::flat_hash_map<std::vector<std::string>, RegexId> one_of_cache_;
  absl::flat_hash_map<std::vector<std::string>, RegexId> none_of_cache_;
  std::string unsat_reason_;
};

}  // namespace llmserve::constraint::json_schema
