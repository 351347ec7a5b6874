// An Earley parser over lexemes, with rows pushed and popped as the token trie is walked.
//
// Rules are laid flat: a dotted rule is one index into `syms_` (the symbol after the dot,
// or an end marker naming the rule's left side), and an item is (position, origin row).
// Nullable nonterminals use Aycock and Horspool's rule: predicting one also steps over it.
// Popping rows only moves a counter; a row scanned again from the same parent with the
// same lexemes is reused instead of recomputed (walking the trie scans the same lexeme
// from the same row over and over).
// Not thread-safe: one matcher (or the runtime's walk) at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "constraint/grammar.h"

namespace llmserve::constraint {

// The grammar laid out for the parser (shared by every parser of one constraint).
class EarleyTables {
 public:
  explicit EarleyTables(const Grammar& grammar);

  static constexpr uint32_t kEnd = UINT32_MAX;
  // Symbol raw value after the dot at `pos`, or kEnd at a rule's end.
  uint32_t sym(uint32_t pos) const { return syms_[pos]; }
  NonterminalId lhs_at_end(uint32_t pos) const { return end_lhs_[pos]; }
  const std::vector<uint32_t>& rule_starts(NonterminalId nt) const { return starts_[nt]; }
  bool nullable(NonterminalId nt) const { return nullable_[nt]; }
  uint32_t start_pos() const { return start_pos_; }      // S' -> . S
  uint32_t accept_pos() const { return start_pos_ + 1; }  // S' -> S .
  size_t num_nonterminals() const { return starts_.size(); }

 private:
  std::vector<uint32_t> syms_;
  std::vector<NonterminalId> end_lhs_;
  std::vector<std::vector<uint32_t>> starts_;
  std::vector<bool> nullable_;
  uint32_t start_pos_ = 0;
};

class EarleyParser {
 public:
  EarleyParser(const EarleyTables* tables, uint32_t max_items);

  // Rows 0..num_rows()-1 are live; row 0 is the start.
  uint32_t num_rows() const { return num_rows_; }
  void PopTo(uint32_t rows) { num_rows_ = rows; }

  // Scans one lexeme matched as any of `lexemes` (sorted) from the top row. Pushes the new
  // row and returns true, or returns false (nothing pushed) if no item expects them.
  // `set_id` identifies the set (equal sets, equal ids) for row reuse.
  bool Scan(const std::vector<LexemeId>& lexemes, uint32_t set_id);

  // Lexemes expected next in the top row (sorted, unique).
  const std::vector<LexemeId>& Allowed() const { return rows_[num_rows_ - 1].allowed; }
  // Per-row slot for the owner (the lexer's start state for Allowed()).
  uint32_t& TopTag() { return rows_[num_rows_ - 1].tag; }
  // The top row completes the start symbol.
  bool Accepts() const { return rows_[num_rows_ - 1].accepts; }

  // OK, or RESOURCE_EXHAUSTED once max_items was exceeded (scans then fail).
  const absl::Status& status() const { return status_; }
  size_t live_items() const { return num_rows_ ? rows_[num_rows_ - 1].end : 0; }

 private:
  struct Item {
    uint32_t pos;
    uint32_t origin;
  };
  struct Row {
    uint32_t begin = 0, end = 0;  // items_[begin, end)
    std::vector<LexemeId> allowed;
    bool accepts = false;
    uint32_t tag = UINT32_MAX;
    uint64_t gen = 0;         // identity of this physical row's contents
    uint64_t parent_gen = 0;  // gen of the row it was scanned from
    uint32_t scanned_set = UINT32_MAX;
  };

  void Close(uint32_t row);  // predict/complete items_[row.begin..] to a fixpoint
  void Add(uint32_t pos, uint32_t origin);

  const EarleyTables* t_;
  uint32_t max_items_;
  std::vector<Item> items_;
  std::vector<Row> rows_;  // physical rows; those at and above num_rows_ are reusable
  uint32_t num_rows_ = 0;
  uint64_t next_gen_ = 1;
  absl::flat_hash_set<uint64_t> seen_;             // (pos, origin) of the row being built
  std::vector<uint32_t> predicted_;                // nonterminal -> row+1 it was predicted in
  absl::Status status_;
};

}  // namespace llmserve::constraint
