// Byte-level regular expressions: the lexemes of a constraint's grammar.
//
// A RegexPool owns hash-consed nodes, so one expression built twice is one id, and two
// lexemes with the same expression are one lexeme. Everything is over bytes: a character
// class over code points becomes the UTF-8 byte sequences of its ranges (CodepointRanges).
// The pool counts its nodes against a bound; past it every builder returns Nothing() and
// status() says which bound was hit, so a hostile schema cannot grow it without limit.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"

namespace llmserve::constraint {

// A set of bytes (256 bits).
class ByteSet {
 public:
  ByteSet() = default;
  static ByteSet Single(uint8_t b) { ByteSet s; s.Add(b); return s; }
  static ByteSet Range(uint8_t lo, uint8_t hi) { ByteSet s; s.AddRange(lo, hi); return s; }
  static ByteSet All() { ByteSet s; s.AddRange(0, 255); return s; }

  void Add(uint8_t b) { bits_[b >> 6] |= uint64_t{1} << (b & 63); }
  void AddRange(uint8_t lo, uint8_t hi) { for (unsigned b = lo; b <= hi; ++b) Add(static_cast<uint8_t>(b)); }
  void AddAll(const ByteSet& o) { for (int i = 0; i < 4; ++i) bits_[i] |= o.bits_[i]; }
  bool Has(uint8_t b) const { return (bits_[b >> 6] >> (b & 63)) & 1; }
  bool Empty() const { return (bits_[0] | bits_[1] | bits_[2] | bits_[3]) == 0; }
  int Count() const;
  ByteSet Complement() const { ByteSet s; for (int i = 0; i < 4; ++i) s.bits_[i] = ~bits_[i]; return s; }
  bool operator==(const ByteSet&) const = default;
  const std::array<uint64_t, 4>& words() const { return bits_; }

 private:
  std::array<uint64_t, 4> bits_{};
};

// The UTF-8 bytes of code point cp (<= 0x10FFFF).
std::string EncodeUtf8(uint32_t cp);

using RegexId = uint32_t;

enum class RegexKind : uint8_t {
  kNothing,  // matches no string
  kEmpty,    // matches only the empty string
  kBytes,    // one byte from a set
  kConcat,   // children in sequence
  kAlt,      // any one child
  kRepeat,   // child repeated min..max times (max == kUnbounded: no upper bound)
};

struct RegexNode {
  RegexKind kind = RegexKind::kNothing;
  ByteSet bytes;                  // kBytes
  std::vector<RegexId> children;  // kConcat, kAlt: >= 2; kRepeat: exactly 1
  uint32_t min = 0, max = 0;      // kRepeat
  bool nullable = false;          // matches the empty string
};

struct RegexLimits {
  uint32_t max_nodes = 500'000;  // distinct nodes in one pool
  uint32_t max_repeat = 10'000;  // largest finite bound of a counted repetition
};

class RegexPool {
 public:
  static constexpr uint32_t kUnbounded = UINT32_MAX;

  explicit RegexPool(RegexLimits limits = {});

  RegexId Nothing() const { return 0; }
  RegexId Empty() const { return 1; }
  RegexId Bytes(const ByteSet& set);
  RegexId Byte(uint8_t b) { return Bytes(ByteSet::Single(b)); }
  RegexId Literal(std::string_view bytes);
  // Simplifies: Nothing in a concat makes it Nothing, Empty children vanish, nested concats
  // flatten; an alt drops Nothing children and duplicates, flattens nested alts, and merges
  // single-byte children into one byte set.
  RegexId Concat(std::vector<RegexId> parts);
  RegexId Alt(std::vector<RegexId> alternatives);
  // min..max repetitions; a finite max above limits.max_repeat is a bound error.
  RegexId Repeat(RegexId child, uint32_t min, uint32_t max);
  RegexId Optional(RegexId child) { return Repeat(child, 0, 1); }
  RegexId Star(RegexId child) { return Repeat(child, 0, kUnbounded); }
  RegexId Plus(RegexId child) { return Repeat(child, 1, kUnbounded); }

  // Code points in the inclusive ranges, as UTF-8 (surrogates D800-DFFF are never encoded;
  // ranges are clipped to 0..10FFFF). Ranges may overlap and come in any order.
  RegexId CodepointRanges(std::span<const std::pair<uint32_t, uint32_t>> ranges);
  RegexId AnyCodepoint();  // one UTF-8 encoded code point, no surrogates

  const RegexNode& node(RegexId id) const { return nodes_[id]; }
  bool Nullable(RegexId id) const { return nodes_[id].nullable; }
  size_t size() const { return nodes_.size(); }
  // Child entries handled while building nodes so far (how much building has cost).
  uint64_t work() const { return work_; }
  const RegexLimits& limits() const { return limits_; }
  // OK, or RESOURCE_EXHAUSTED naming the bound that was hit (the pool then only returns
  // Nothing()).
  const absl::Status& status() const { return status_; }

  // Brzozowski derivative: the strings s such that b s matches `re`. Uses `derive` for the
  // children (so the lexer can cache them); DerivativeOf recurses uncached.
  template <typename DeriveChild>
  RegexId Derivative(RegexId re, uint8_t b, DeriveChild&& derive);
  RegexId DerivativeOf(RegexId re, uint8_t b) {
    return Derivative(re, b, [this](RegexId c, uint8_t x) { return DerivativeOf(c, x); });
  }
  // `re` minus the empty string (for a lexeme, which must consume bytes).
  RegexId WithoutEmpty(RegexId re);

  // The expression in a regex-like syntax (for llmgrammar and error messages).
  std::string ToString(RegexId id) const;

 private:
  RegexId Intern(RegexNode node);

  RegexLimits limits_;
  std::vector<RegexNode> nodes_;
  absl::flat_hash_map<std::string, RegexId> intern_;  // serialized node -> id
  absl::Status status_;
  uint64_t work_ = 0;
};

template <typename DeriveChild>
RegexId RegexPool::Derivative(RegexId re, uint8_t b, DeriveChild&& derive) {
  const RegexNode& n = nodes_[re];
  switch (n.kind) {
    case RegexKind::kNothing:
    case RegexKind::kEmpty:
      return Nothing();
    case RegexKind::kBytes:
      return n.bytes.Has(b) ? Empty() : Nothing();
    case RegexKind::kConcat: {
      // d(r1 r2..rn) = d(r1) r2..rn | (r1 nullable ? d(r2..rn) : nothing)
      std::vector<RegexId> children = n.children;  // copy: the pool may grow below
      std::vector<RegexId> alts;
      for (size_t i = 0; i < children.size(); ++i) {
        RegexId head = derive(children[i], b);
        if (head != Nothing()) {
          std::vector<RegexId> seq;
          seq.reserve(children.size() - i);
          seq.push_back(head);
          seq.insert(seq.end(), children.begin() + i + 1, children.end());
          alts.push_back(Concat(std::move(seq)));
        }
        if (!Nullable(children[i])) break;
      }
      return Alt(std::move(alts));
    }
    case RegexKind::kAlt: {
      std::vector<RegexId> children = n.children;
      std::vector<RegexId> alts;
      alts.reserve(children.size());
      for (RegexId c : children) alts.push_back(derive(c, b));
      return Alt(std::move(alts));
    }
    case RegexKind::kRepeat: {
      // d(r{m,n}) = d(r) r{max(m-1,0), n-1}
      const RegexId child = n.children[0];
      const uint32_t min = n.min, max = n.max;
      RegexId head = derive(child, b);
      if (head == Nothing()) return Nothing();
      RegexId rest = Repeat(child, min > 0 ? min - 1 : 0, max == kUnbounded ? max : max - 1);
      return Concat({head, rest});
    }
  }
  return Nothing();
}

}  // namespace llmserve::constraint
