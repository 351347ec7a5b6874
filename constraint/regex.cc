#include "constraint/regex.h"

#include <algorithm>
#include <bit>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace llmserve::constraint {

int ByteSet::Count() const {
  int n = 0;
  for (uint64_t w : bits_) n += std::popcount(w);
  return n;
}

RegexPool::RegexPool(RegexLimits limits) : limits_(limits) {
  RegexNode nothing;
  nothing.kind = RegexKind::kNothing;
  Intern(nothing);
  RegexNode empty;
  empty.kind = RegexKind::kEmpty;
  empty.nullable = true;
  Intern(empty);
}

RegexId RegexPool::Intern(RegexNode node) {
  work_ += 1 + node.children.size();
  std::string key;
  key.reserve(48 + node.children.size() * 4);
  key.push_back(static_cast<char>(node.kind));
  if (node.kind == RegexKind::kBytes) {
    for (uint64_t w : node.bytes.words()) key.append(reinterpret_cast<const char*>(&w), sizeof w);
  }
  for (RegexId c : node.children) key.append(reinterpret_cast<const char*>(&c), sizeof c);
  if (node.kind == RegexKind::kRepeat) {
    key.append(reinterpret_cast<const char*>(&node.min), sizeof node.min);
    key.append(reinterpret_cast<const char*>(&node.max), sizeof node.max);
  }
  auto it = intern_.find(key);
  if (it != intern_.end()) return it->second;
  if (nodes_.size() >= limits_.max_nodes) {
    if (status_.ok()) {
      status_ = absl::ResourceExhaustedError(absl::StrCat(
          "the constraint's regular expressions need more than ", limits_.max_nodes, " nodes"));
    }
    return Nothing();
  }
  RegexId id = static_cast<RegexId>(nodes_.size());
  nodes_.push_back(std::move(node));
  intern_.emplace(std::move(key), id);
  return id;
}

RegexId RegexPool::Bytes(const ByteSet& set) {
  if (set.Empty()) return Nothing();
  RegexNode n;
  n.kind = RegexKind::kBytes;
  n.bytes = set;
  return Intern(std::move(n));
}

RegexId RegexPool::Literal(std::string_view bytes) {
  std::vector<RegexId> parts;
  parts.reserve(bytes.size());
  for (char c : bytes) parts.push_back(Byte(static_cast<uint8_t>(c)));
  return Concat(std::move(parts));
}

RegexId RegexPool::Concat(std::vector<RegexId> parts) {
  std::vector<RegexId> flat;
  flat.reserve(parts.size());
  for (RegexId p : parts) {
    const RegexNode& n = nodes_[p];
    if (n.kind == RegexKind::kNothing) return Nothing();
    if (n.kind == RegexKind::kEmpty) continue;
    if (n.kind == RegexKind::kConcat) {
      flat.insert(flat.end(), n.children.begin(), n.children.end());
    } else {
      flat.push_back(p);
    }
  }
  if (flat.empty()) return Empty();
  if (flat.size() == 1) return flat[0];
  RegexNode n;
  n.kind = RegexKind::kConcat;
  n.nullable = std::all_of(flat.begin(), flat.end(), [&](RegexId c) { return nodes_[c].nullable; });
  n.children = std::move(flat);
  return Intern(std::move(n));
}

RegexId RegexPool::Alt(std::vector<RegexId> alternatives) {
  std::vector<RegexId> flat;
  ByteSet singles;
  bool has_empty = false;
  for (RegexId a : alternatives) {
    const RegexNode& n = nodes_[a];
    switch (n.kind) {
      case RegexKind::kNothing: break;
      case RegexKind::kEmpty: has_empty = true; break;
      case RegexKind::kBytes: singles.AddAll(n.bytes); break;
      case RegexKind::kAlt:
        for (RegexId c : n.children) {
          if (nodes_[c].kind == RegexKind::kBytes) singles.AddAll(nodes_[c].bytes);
          else if (nodes_[c].kind == RegexKind::kEmpty) has_empty = true;
          else flat.push_back(c);
        }
        break;
      default: flat.push_back(a);
    }
  }
  if (!singles.Empty()) flat.push_back(Bytes(singles));
  std::sort(flat.begin(), flat.end());
  flat.erase(std::unique(flat.begin(), flat.end()), flat.end());
  if (has_empty) {
    bool any_nullable = std::any_of(flat.begin(), flat.end(), [&](RegexId c) { return nodes_[c].nullable; });
    if (!any_nullable) flat.push_back(Empty());
  }
  if (flat.empty()) return Nothing();
  if (flat.size() == 1) return flat[0];
  RegexNode n;
  n.kind = RegexKind::kAlt;
  n.nullable = std::any_of(flat.begin(), flat.end(), [&](RegexId c) { return nodes_[c].nullable; });
  n.children = std::move(flat);
  return Intern(std::move(n));
}

RegexId RegexPool::Repeat(RegexId child, uint32_t min, uint32_t max) {
  if (max != kUnbounded && max < min) return Nothing();
  if ((max != kUnbounded && max > limits_.max_repeat) || min > limits_.max_repeat) {
    if (status_.ok()) {
      status_ = absl::ResourceExhaustedError(absl::StrCat(
          "a repetition bound of ", max != kUnbounded ? max : min, " is above the limit of ",
          limits_.max_repeat));
    }
    return Nothing();
  }
  const RegexNode& c = nodes_[child];
  if (c.kind == RegexKind::kNothing) return min == 0 ? Empty() : Nothing();
  if (c.kind == RegexKind::kEmpty || max == 0) return Empty();
  if (min == 1 && max == 1) return child;
  // (x*)* = x*, (x*)? = x*, (x+)* = x*.
  if (c.kind == RegexKind::kRepeat && c.max == kUnbounded && c.min <= 1 && max == kUnbounded) {
    return Repeat(c.children[0], std::min(min, c.min), kUnbounded);
  }
  RegexNode n;
  n.kind = RegexKind::kRepeat;
  n.children = {child};
  n.min = min;
  n.max = max;
  n.nullable = min == 0 || c.nullable;
  return Intern(std::move(n));
}

namespace {

// UTF-8 encodes the code points lo..hi (same encoded length) as byte-range sequences, in
// the manner of RE2's and Rust's utf8-ranges: split until every byte position is a full
// range.
struct Utf8Seq {
  int len;
  uint8_t lo[4], hi[4];
};

int EncodedLength(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

void Encode(uint32_t cp, uint8_t* out) {
  switch (EncodedLength(cp)) {
    case 1: out[0] = static_cast<uint8_t>(cp); break;
    case 2:
      out[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
      out[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
    case 3:
      out[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
      out[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
      out[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
    default:
      out[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
      out[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
      out[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
      out[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  }
}

void SplitUtf8(uint32_t lo, uint32_t hi, std::vector<Utf8Seq>* out) {
  if (lo > hi) return;
  // Split at encoded-length boundaries.
  static constexpr uint32_t kMax[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  for (int i = 0; i < 3; ++i) {
    if (lo <= kMax[i] && hi > kMax[i]) {
      SplitUtf8(lo, kMax[i], out);
      SplitUtf8(kMax[i] + 1, hi, out);
      return;
    }
  }
  if (hi < 0x80) {
    out->push_back({1, {static_cast<uint8_t>(lo)}, {static_cast<uint8_t>(hi)}});
    return;
  }
  // Split so that each continuation position below the first differing one is a full
  // 0x80..0xBF range.
  for (int i = 1; i < 4; ++i) {
    uint32_t m = (uint32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        SplitUtf8(lo, lo | m, out);
        SplitUtf8((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        SplitUtf8(lo, (hi & ~m) - 1, out);
        SplitUtf8(hi & ~m, hi, out);
        return;
      }
    }
  }
  Utf8Seq s;
  s.len = EncodedLength(lo);
  Encode(lo, s.lo);
  Encode(hi, s.hi);
  out->push_back(s);
}

}  // namespace

std::string EncodeUtf8(uint32_t cp) {
  uint8_t bytes[4];
  Encode(cp, bytes);
  return std::string(reinterpret_cast<const char*>(bytes), EncodedLength(cp));
}

RegexId RegexPool::CodepointRanges(std::span<const std::pair<uint32_t, uint32_t>> ranges) {
  std::vector<std::pair<uint32_t, uint32_t>> rs;
  for (auto [lo, hi] : ranges) {
    hi = std::min<uint32_t>(hi, 0x10FFFF);
    if (lo > hi) continue;
    // Drop surrogates.
    if (lo < 0xD800 && hi >= 0xD800) {
      if (hi > 0xDFFF) rs.push_back({0xE000, hi});
      hi = 0xD7FF;
    } else if (lo >= 0xD800 && lo <= 0xDFFF) {
      if (hi <= 0xDFFF) continue;
      lo = 0xE000;
    }
    rs.push_back({lo, hi});
  }
  std::sort(rs.begin(), rs.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (auto r : rs) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  std::vector<Utf8Seq> seqs;
  for (auto [lo, hi] : merged) SplitUtf8(lo, hi, &seqs);
  std::vector<RegexId> alts;
  alts.reserve(seqs.size());
  for (const Utf8Seq& s : seqs) {
    std::vector<RegexId> parts;
    for (int i = 0; i < s.len; ++i) parts.push_back(Bytes(ByteSet::Range(s.lo[i], s.hi[i])));
    alts.push_back(Concat(std::move(parts)));
  }
  return Alt(std::move(alts));
}

RegexId RegexPool::AnyCodepoint() {
  const std::pair<uint32_t, uint32_t> all[] = {{0, 0x10FFFF}};
  return CodepointRanges(all);
}

RegexId RegexPool::WithoutEmpty(RegexId re) {
  if (!Nullable(re)) return re;
  // re minus "" = the union over first bytes b of b . d(re, b); bytes with the same
  // derivative share one byte set.
  absl::flat_hash_map<RegexId, ByteSet> by_rest;
  std::vector<RegexId> order;
  for (int b = 0; b < 256; ++b) {
    RegexId d = DerivativeOf(re, static_cast<uint8_t>(b));
    if (d == Nothing()) continue;
    auto [it, fresh] = by_rest.try_emplace(d);
    if (fresh) order.push_back(d);
    it->second.Add(static_cast<uint8_t>(b));
  }
  std::vector<RegexId> alts;
  for (RegexId d : order) alts.push_back(Concat({Bytes(by_rest[d]), d}));
  return Alt(std::move(alts));
}

namespace {

std::string ByteSetString(const ByteSet& s) {
  auto show = [](unsigned b) {
    if (b >= 0x21 && b < 0x7F && b != '\\' && b != ']' && b != '-' && b != '^') {
      return std::string(1, static_cast<char>(b));
    }
    return absl::StrFormat("\\x%02X", b);
  };
  if (s.Count() == 1) {
    for (unsigned b = 0; b < 256; ++b) {
      if (s.Has(static_cast<uint8_t>(b))) {
        if (b >= 0x21 && b < 0x7F && std::string_view("\\.[]()|*+?{}^$").find(static_cast<char>(b)) == std::string_view::npos) {
          return std::string(1, static_cast<char>(b));
        }
        return absl::StrFormat("\\x%02X", b);
      }
    }
  }
  std::string out = "[";
  for (unsigned b = 0; b < 256;) {
    if (!s.Has(static_cast<uint8_t>(b))) { ++b; continue; }
    unsigned e = b;
    while (e + 1 < 256 && s.Has(static_cast<uint8_t>(e + 1))) ++e;
    out += show(b);
    if (e > b) absl::StrAppend(&out, "-", show(e));
    b = e + 1;
  }
  return out + "]";
}

}  // namespace

std::string RegexPool::ToString(RegexId id) const {
  const RegexNode& n = nodes_[id];
  switch (n.kind) {
    case RegexKind::kNothing: return "(?!)";
    case RegexKind::kEmpty: return "()";
    case RegexKind::kBytes: return ByteSetString(n.bytes);
    case RegexKind::kConcat: {
      std::string out;
      for (RegexId c : n.children) {
        bool paren = nodes_[c].kind == RegexKind::kAlt;
        out += paren ? absl::StrCat("(", ToString(c), ")") : ToString(c);
      }
      return out;
    }
    case RegexKind::kAlt: {
      std::string out;
      for (size_t i = 0; i < n.children.size(); ++i) {
        if (i) out += "|";
        out += ToString(n.children[i]);
      }
      return out;
    }
    case RegexKind::kRepeat: {
      RegexId c = n.children[0];
      bool atom = nodes_[c].kind == RegexKind::kBytes;
      std::string inner = atom ? ToString(c) : absl::StrCat("(", ToString(c), ")");
      if (n.min == 0 && n.max == 1) return inner + "?";
      if (n.min == 0 && n.max == kUnbounded) return inner + "*";
      if (n.min == 1 && n.max == kUnbounded) return inner + "+";
      if (n.max == kUnbounded) return absl::StrCat(inner, "{", n.min, ",}");
      if (n.min == n.max) return absl::StrCat(inner, "{", n.min, "}");
      return absl::StrCat(inner, "{", n.min, ",", n.max, "}");
    }
  }
  return "";
}

}  // namespace llmserve::constraint
