// RegexFullMatch: the reference matcher for tests and tools.
//
// Memoized "end positions": Ends(node, i) is the set of j such that the node matches
// bytes[i, j). Each (node, i) is computed once, so the work is polynomial in the string
// length and the expression size (no backtracking blow-up on (a|a)*b, and nested counted
// repetitions cost per level, not multiplied). A counted repetition steps its child's
// end sets count by count: exactly up to min, then breadth-first with a visited set (a
// position reached with fewer repetitions dominates the same one reached with more).
#include <bit>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "constraint/regex_parser.h"

namespace llmserve::constraint {
namespace {

class Matcher {
 public:
  Matcher(const RegexPool& pool, std::string_view bytes)
      : pool_(pool), bytes_(bytes), words_(bytes.size() / 64 + 1) {}

  bool FullMatch(RegexId re) { return Has(Ends(re, 0), bytes_.size()); }

 private:
  using Set = std::vector<uint64_t>;  // positions 0..size, a bit each

  Set NewSet() const { return Set(words_, 0); }
  static bool Has(const Set& s, size_t p) { return (s[p >> 6] >> (p & 63)) & 1; }
  static void Add(Set& s, size_t p) { s[p >> 6] |= uint64_t{1} << (p & 63); }
  static bool Empty(const Set& s) {
    for (uint64_t w : s) {
      if (w) return false;
    }
    return true;
  }
  template <typename F>
  static void ForEach(const Set& s, F f) {
    for (size_t w = 0; w < s.size(); ++w) {
      for (uint64_t bits = s[w]; bits; bits &= bits - 1) f(w * 64 + static_cast<size_t>(std::countr_zero(bits)));
    }
  }

  // The union of Ends(child, p) over p in `from`.
  Set Step(RegexId child, const Set& from) {
    Set out = NewSet();
    ForEach(from, [&](size_t p) {
      const Set& e = Ends(child, p);
      for (size_t w = 0; w < words_; ++w) out[w] |= e[w];
    });
    return out;
  }

  // The result lives in memo_ (std::unordered_map: references stay valid as it grows).
  const Set& Ends(RegexId id, size_t pos) {
    const uint64_t key = (uint64_t{id} << 32) | pos;
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    Set out = Compute(id, pos);
    return memo_.emplace(key, std::move(out)).first->second;
  }

  Set Compute(RegexId id, size_t pos) {
    const RegexNode& n = pool_.node(id);
    Set out = NewSet();
    switch (n.kind) {
      case RegexKind::kNothing: break;
      case RegexKind::kEmpty: Add(out, pos); break;
      case RegexKind::kBytes:
        if (pos < bytes_.size() && n.bytes.Has(static_cast<uint8_t>(bytes_[pos]))) Add(out, pos + 1);
        break;
      case RegexKind::kConcat:
        Add(out, pos);
        for (RegexId c : n.children) {
          out = Step(c, out);
          if (Empty(out)) break;
        }
        break;
      case RegexKind::kAlt:
        for (RegexId c : n.children) {
          const Set& e = Ends(c, pos);
          for (size_t w = 0; w < words_; ++w) out[w] |= e[w];
        }
        break;
      case RegexKind::kRepeat: {
        const RegexId child = n.children[0];
        Set cur = NewSet();
        Add(cur, pos);
        // Exactly min repetitions. The sets for a nullable child only grow, so a fixed
        // point ends the loop early; otherwise the set empties within size+1 steps.
        for (uint32_t k = 0; k < n.min; ++k) {
          Set next = Step(child, cur);
          if (Empty(next)) return next;
          const bool fixed = next == cur;
          cur = std::move(next);
          if (fixed) break;
        }
        // Then up to max - min more, breadth-first.
        out = cur;
        Set frontier = std::move(cur);
        for (uint64_t k = n.min; k < n.max && !Empty(frontier); ++k) {
          Set next = Step(child, frontier);
          for (size_t w = 0; w < words_; ++w) {
            next[w] &= ~out[w];
            out[w] |= next[w];
          }
          frontier = std::move(next);
        }
        break;
      }
    }
    return out;
  }

  const RegexPool& pool_;
  std::string_view bytes_;
  size_t words_;
  std::unordered_map<uint64_t, Set> memo_;
};

}  // namespace

bool RegexFullMatch(const RegexPool& pool, RegexId re, std::string_view bytes) {
  if (re >= pool.size()) return false;
  return Matcher(pool, bytes).FullMatch(re);
}

}  // namespace llmserve::constraint
