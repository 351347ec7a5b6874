#include "constraint/earley.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace llmserve::constraint {

EarleyTables::EarleyTables(const Grammar& g) {
  const size_t n = g.nonterminal_names.size();
  starts_.resize(n);
  nullable_ = g.nullable;
  // The augmented start rule S' -> S first, so its positions are fixed.
  start_pos_ = 0;
  syms_.push_back(Symbol::Nonterminal(g.start).raw());
  end_lhs_.push_back(0);
  syms_.push_back(kEnd);
  end_lhs_.push_back(static_cast<NonterminalId>(n));  // S': no rule refers to it
  for (const Rule& r : g.rules) {
    starts_[r.lhs].push_back(static_cast<uint32_t>(syms_.size()));
    for (Symbol s : r.rhs) {
      syms_.push_back(s.raw());
      end_lhs_.push_back(0);
    }
    syms_.push_back(kEnd);
    end_lhs_.push_back(r.lhs);
  }
}

EarleyParser::EarleyParser(const EarleyTables* tables, uint32_t max_items)
    : t_(tables), max_items_(max_items), predicted_(tables->num_nonterminals(), 0) {
  rows_.push_back(Row{});
  rows_[0].gen = next_gen_++;
  seen_.clear();
  Add(t_->start_pos(), 0);
  Close(0);
  num_rows_ = 1;
}

void EarleyParser::Add(uint32_t pos, uint32_t origin) {
  if (seen_.insert((uint64_t{pos} << 32) | origin).second) items_.push_back(Item{pos, origin});
}

void EarleyParser::Close(uint32_t r) {
  Row& row = rows_[r];
  const uint32_t stamp = static_cast<uint32_t>(row.gen);
  std::vector<LexemeId> allowed;
  bool accepts = false;
  for (size_t i = row.begin; i < items_.size(); ++i) {
    const Item it = items_[i];
    const uint32_t s = t_->sym(it.pos);
    if (s == EarleyTables::kEnd) {
      if (it.pos == t_->accept_pos()) {
        accepts = accepts || it.origin == 0;
        continue;
      }
      if (it.origin == r) continue;  // an empty completion: stepped over when predicted
      const uint32_t want = Symbol::Nonterminal(t_->lhs_at_end(it.pos)).raw();
      const Row& from = rows_[it.origin];
      for (uint32_t j = from.begin; j < from.end; ++j) {
        if (t_->sym(items_[j].pos) == want) Add(items_[j].pos + 1, items_[j].origin);
      }
    } else if (s & 1) {
      const NonterminalId b = s >> 1;
      if (predicted_[b] != stamp) {
        predicted_[b] = stamp;
        for (uint32_t p : t_->rule_starts(b)) Add(p, r);
      }
      if (t_->nullable(b)) Add(it.pos + 1, it.origin);
    } else {
      allowed.push_back(s >> 1);
    }
  }
  std::sort(allowed.begin(), allowed.end());
  allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
  Row& done = rows_[r];
  done.end = static_cast<uint32_t>(items_.size());
  done.allowed = std::move(allowed);
  done.accepts = accepts;
}

bool EarleyParser::Scan(const std::vector<LexemeId>& lexemes, uint32_t set_id) {
  const uint32_t k = num_rows_;
  const Row& parent = rows_[k - 1];
  if (rows_.size() > k && rows_[k].parent_gen == parent.gen && rows_[k].scanned_set == set_id) {
    if (rows_[k].begin == rows_[k].end) return false;  // remembered failure
    num_rows_ = k + 1;
    return true;
  }
  if (!status_.ok()) return false;
  items_.resize(parent.end);
  rows_.resize(k);
  Row row;
  row.begin = static_cast<uint32_t>(items_.size());
  row.gen = next_gen_++;
  row.parent_gen = rows_[k - 1].gen;
  row.scanned_set = set_id;
  rows_.push_back(std::move(row));
  seen_.clear();
  const Row& from = rows_[k - 1];
  for (uint32_t j = from.begin; j < from.end; ++j) {
    const uint32_t s = t_->sym(items_[j].pos);
    if (s != EarleyTables::kEnd && !(s & 1) &&
        std::binary_search(lexemes.begin(), lexemes.end(), s >> 1)) {
      Add(items_[j].pos + 1, items_[j].origin);
    }
  }
  if (items_.size() == rows_[k].begin) {
    rows_[k].end = rows_[k].begin;
    return false;
  }
  Close(k);
  if (items_.size() > max_items_) {
    status_ = absl::ResourceExhaustedError(
        absl::StrCat("the constraint's parser needs more than ", max_items_, " items"));
    items_.resize(rows_[k].begin);
    rows_[k].end = rows_[k].begin;
    return false;
  }
  num_rows_ = k + 1;
  return true;
}

}  // namespace llmserve::constraint
