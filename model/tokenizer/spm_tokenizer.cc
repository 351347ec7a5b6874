#include "model/tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/tokenizer/special_tokens.h"
#include "model/tokenizer/spm_merge_table.h"
#include "model/tokenizer/utf8.h"

namespace llmserve {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581 "▁", SentencePiece's space
constexpr size_t kMaxTextBytes = size_t{1} << 31;     // symbol offsets are 32-bit
constexpr size_t kMaxMerges = size_t{1} << 24;        // ranks are exact in a float priority

absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// "<0xXX>" -> the byte XX.
bool ParseByteToken(std::string_view piece, uint8_t* byte) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return false;
  const int hi = HexValue(piece[3]);
  const int lo = HexValue(piece[4]);
  if (hi < 0 || lo < 0) return false;
  *byte = static_cast<uint8_t>(hi * 16 + lo);
  return true;
}

std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (true) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s.substr(pos));
  return out;
}

// One character (or merged run of characters) of the text being encoded; a doubly linked
// list over a vector, as in llama.cpp's llm_symbol.
struct Symbol {
  int32_t token;   // piece id; >= vocab size: a virtual character; -1: a character that can
                   // never merge; -2: merged into its left neighbour
  int32_t prev;
  int32_t next;
  uint32_t start;  // byte range of the character in the fragment (only used for fallback);
  uint32_t len;    // len == 0 stands for "▁" (an escaped space or the dummy prefix)
};

// A candidate merge of the adjacent symbols (left, right) into `result`.
struct Candidate {
  float priority;  // higher merges first
  int32_t left;
  int32_t right;
  int32_t left_token;
  int32_t right_token;
  int32_t result;
};

// Max-heap order: highest priority first, then leftmost.
struct CandidateLess {
  bool operator()(const Candidate& a, const Candidate& b) const {
    if (a.priority != b.priority) return a.priority < b.priority;
    return a.left > b.left;
  }
};

absl::Status ValidateSpec(const TokenizerSpec& spec) {
  const std::string src = spec.source.empty() ? std::string("<tokenizer spec>") : spec.source;
  auto error = [&](const std::string& msg) { return absl::InvalidArgumentError(absl::StrCat(src, ": ", msg)); };
  if (spec.kind != TokenizerKind::kSentencePiece) return error("not a SentencePiece-style vocabulary");
  const size_t n = spec.tokens.size();
  if (n == 0) return error("empty vocabulary");
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) return error("vocabulary too large");
  if (!spec.scores.empty() && spec.scores.size() != n) {
    return error(absl::StrCat("vocabulary has ", n, " tokens but ", spec.scores.size(), " scores"));
  }
  if (spec.scores.empty() && spec.merges.empty()) return error("neither token scores nor merges given");
  if (!spec.types.empty() && spec.types.size() != n) {
    return error(absl::StrCat("vocabulary has ", n, " tokens but ", spec.types.size(), " token types"));
  }
  for (size_t i = 0; i < spec.types.size(); ++i) {
    const auto t = static_cast<int32_t>(spec.types[i]);
    if (t < 0 || t > static_cast<int32_t>(TokenType::kByte)) {
      return error(absl::StrCat("token ", i, " has unknown type ", t));
    }
  }
  for (size_t i = 0; i < spec.scores.size(); ++i) {
    if (std::isnan(spec.scores[i])) return error(absl::StrCat("score of token ", i, " is NaN"));
  }
  const std::pair<const char*, int32_t> ids[] = {
      {"bos_id", spec.bos_id}, {"eos_id", spec.eos_id}, {"unk_id", spec.unk_id}, {"pad_id", spec.pad_id}};
  for (const auto& [name, id] : ids) {
    if (id < -1 || id >= static_cast<int64_t>(n)) {
      return error(absl::StrCat(name, " ", id, " is out of range for a vocabulary of ", n, " tokens"));
    }
  }
  if (spec.merges.size() > kMaxMerges) return error(absl::StrCat("too many merges (", spec.merges.size(), ")"));
  return absl::OkStatus();
}

class SpmTokenizer final : public Tokenizer {
 public:
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Create(TokenizerSpec spec) {
    if (absl::Status s = ValidateSpec(spec); !s.ok()) return s;
    std::unique_ptr<SpmTokenizer> tok(new SpmTokenizer(std::move(spec)));
    if (absl::Status s = tok->BuildTables(); !s.ok()) return s;
    return std::unique_ptr<Tokenizer>(std::move(tok));
  }

  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text, const EncodeOptions& opts) const override;

  std::string TokenBytes(int32_t id) const override {
    if (id < 0 || id >= vocab_size()) return {};
    return decoded_[static_cast<size_t>(id)];
  }

  bool StripsLeadingSpace() const override { return spec_.add_space_prefix; }

 private:
  // Per-call working memory (the tokenizer itself stays immutable, hence thread-safe).
  struct Scratch {
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
    absl::flat_hash_map<int32_t, std::pair<int32_t, int32_t>> rev_merge;  // unused piece -> its parts
  };
  explicit SpmTokenizer(TokenizerSpec spec) : Tokenizer(std::move(spec)), splitter_(spec_) {}

  absl::Status Error(const std::string& msg) const {
    return absl::InvalidArgumentError(absl::StrCat(spec_.source.empty() ? "<tokenizer spec>" : spec_.source, ": ", msg));
  }

  absl::Status BuildTables();
  absl::Status EncodeFragment(std::string_view text, bool prefix, Scratch* s, std::vector<int32_t>* out) const;
  absl::Status MergeSegment(std::string_view text, Scratch* s, std::vector<int32_t>* out) const;
  void TryAddPair(int32_t left, int32_t right, Scratch* s) const;
  absl::Status EmitToken(int32_t token, const Scratch& s, std::vector<int32_t>* out) const;
  absl::Status EmitFallback(std::string_view bytes, std::vector<int32_t>* out) const;

  SpecialTokenSplitter splitter_;
  std::vector<uint8_t> symbol_ok_;  // per token: may be a symbol / merge result
  std::vector<uint8_t> unused_;     // per token: kUnused (resegmented into its parts, as SentencePiece does)
  std::vector<std::string> decoded_;
  std::array<int32_t, 128> ascii_id_{};
  std::array<int32_t, 256> byte_id_{};
  int32_t space_id_ = -1;
  SpmMergeTable table_;  // points into *this (spec_, symbol_ok_): the tokenizer never moves
};

absl::Status SpmTokenizer::BuildTables() {
  const size_t n = spec_.tokens.size();
  symbol_ok_.resize(n);
  unused_.resize(n);
  decoded_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<int32_t>(i);
    const TokenType t = Type(id);
    symbol_ok_[i] = t != TokenType::kControl && t != TokenType::kUnknown && t != TokenType::kByte;
    unused_[i] = t == TokenType::kUnused;
    const std::string& piece = spec_.tokens[i];
    uint8_t byte = 0;
    if ((t == TokenType::kByte || t == TokenType::kNormal || t == TokenType::kUndefined) &&
        ParseByteToken(piece, &byte)) {
      decoded_[i] = std::string(1, static_cast<char>(byte));
    } else if (t == TokenType::kControl || t == TokenType::kUnknown || t == TokenType::kByte) {
      decoded_[i] = piece;
    } else {
      decoded_[i] = ReplaceAll(piece, kSpaceMark, " ");
    }
  }
  for (int b = 0; b < 256; ++b) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    const std::string piece = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    byte_id_[static_cast<size_t>(b)] = spec_.byte_fallback ? PieceToId(piece) : -1;
  }
  if (absl::Status s = table_.Build(*this, symbol_ok_); !s.ok()) return s;
  for (int c = 0; c < 128; ++c) ascii_id_[static_cast<size_t>(c)] = table_.CharId(std::string(1, static_cast<char>(c)));
  space_id_ = table_.CharId(kSpaceMark);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> SpmTokenizer::Encode(std::string_view text, const EncodeOptions& opts) const {
  if (text.size() >= kMaxTextBytes) return absl::InvalidArgumentError("text too long to tokenize");
  if (!utf8::IsValid(text)) return absl::InvalidArgumentError("text is not valid UTF-8");
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (opts.add_bos && spec_.bos_id >= 0) out.push_back(spec_.bos_id);
  Scratch scratch;
  // As llama.cpp: a text fragment at the start or right after a special token gets the prefix.
  bool prev_special = true;
  for (const TextFragment& f : splitter_.Split(text, opts.parse_special)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      prev_special = true;
      continue;
    }
    if (absl::Status s = EncodeFragment(f.text, spec_.add_space_prefix && prev_special, &scratch, &out); !s.ok()) {
      return s;
    }
    prev_special = false;
  }
  return out;
}

void SpmTokenizer::TryAddPair(int32_t left, int32_t right, Scratch* s) const {
  if (left < 0 || right < 0) return;
  const int32_t lt = s->symbols[static_cast<size_t>(left)].token;
  const int32_t rt = s->symbols[static_cast<size_t>(right)].token;
  if (lt < 0 || rt < 0) return;
  const SpmMergeTable::Merge* m = table_.Find(lt, rt);
  if (m == nullptr) return;
  s->heap.push_back(Candidate{m->priority, left, right, lt, rt, m->result});
  std::push_heap(s->heap.begin(), s->heap.end(), CandidateLess());
  if (unused_[static_cast<size_t>(m->result)]) s->rev_merge[m->result] = {lt, rt};
}

// Merges never cross a boundary between two characters that no merge result holds side by
// side, so the text is cut there into independent segments (in practice words: "▁" only
// starts pieces). Each segment is merged alone, with a small, cache-resident heap; the
// result is exactly that of one global pass, since no candidate pair ever spans two segments.
absl::Status SpmTokenizer::EncodeFragment(std::string_view text, bool prefix, Scratch* s,
                                          std::vector<int32_t>* out) const {
  auto& syms = s->symbols;
  syms.clear();
  s->rev_merge.clear();
  absl::Status status;
  int32_t prev_dense = -1;
  auto add = [&](int32_t token, size_t start, size_t len, int32_t dense) {
    if (!syms.empty() && !table_.Joinable(prev_dense, syms.back().token, dense, token)) {
      if (status.ok()) status = MergeSegment(text, s, out);
      syms.clear();
    }
    prev_dense = dense;
    const auto i = static_cast<int32_t>(syms.size());
    syms.push_back(Symbol{token, i - 1, i + 1, static_cast<uint32_t>(start), static_cast<uint32_t>(len)});
  };
  constexpr int32_t kMarkDense = 128;
  if (prefix) add(space_id_, 0, 0, kMarkDense);
  size_t pos = 0;
  while (pos < text.size()) {
    const auto c = static_cast<uint8_t>(text[pos]);
    if (c == ' ') {
      add(space_id_, pos, 0, kMarkDense);
      ++pos;
    } else if (c < 0x80) {
      add(ascii_id_[c], pos, 1, c);
      ++pos;
    } else {
      const size_t len = std::min(utf8::SequenceLength(c), text.size() - pos);  // text is valid UTF-8
      add(table_.CharId(text.substr(pos, len)), pos, len, -1);
      pos += len;
    }
  }
  if (status.ok() && !syms.empty()) status = MergeSegment(text, s, out);
  return status;
}

// Merges the symbols of one segment (s->symbols, linked i-1 <-> i <-> i+1) and emits them.
absl::Status SpmTokenizer::MergeSegment(std::string_view text, Scratch* s, std::vector<int32_t>* out) const {
  auto& syms = s->symbols;
  syms.back().next = -1;
  s->heap.clear();
  for (size_t i = 1; i < syms.size(); ++i) TryAddPair(static_cast<int32_t>(i - 1), static_cast<int32_t>(i), s);

  while (!s->heap.empty()) {
    std::pop_heap(s->heap.begin(), s->heap.end(), CandidateLess());
    const Candidate c = s->heap.back();
    s->heap.pop_back();
    Symbol& left = syms[static_cast<size_t>(c.left)];
    Symbol& right = syms[static_cast<size_t>(c.right)];
    // Stale: one side has merged with something else since this candidate was queued.
    if (left.token != c.left_token || right.token != c.right_token || left.next != c.right) continue;
    left.token = c.result;
    left.next = right.next;
    if (right.next >= 0) syms[static_cast<size_t>(right.next)].prev = c.left;
    right.token = -2;
    TryAddPair(left.prev, c.left, s);
    TryAddPair(c.left, left.next, s);
  }

  for (int32_t i = 0; i != -1; i = syms[static_cast<size_t>(i)].next) {
    const Symbol& sym = syms[static_cast<size_t>(i)];
    const bool real = sym.token >= 0 && sym.token < vocab_size();  // not unknown or virtual
    absl::Status st = real ? EmitToken(sym.token, *s, out)
                           : EmitFallback(sym.len == 0 ? kSpaceMark : text.substr(sym.start, sym.len), out);
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status SpmTokenizer::EmitToken(int32_t token, const Scratch& s, std::vector<int32_t>* out) const {
  if (!unused_[static_cast<size_t>(token)]) {
    out->push_back(token);
    return absl::OkStatus();
  }
  // SentencePiece never outputs unused pieces: split back into the two pieces that made it.
  const auto it = s.rev_merge.find(token);
  if (it == s.rev_merge.end()) return EmitFallback(spec_.tokens[static_cast<size_t>(token)], out);
  if (absl::Status st = EmitToken(it->second.first, s, out); !st.ok()) return st;
  return EmitToken(it->second.second, s, out);
}

absl::Status SpmTokenizer::EmitFallback(std::string_view bytes, std::vector<int32_t>* out) const {
  const bool all_bytes = std::all_of(bytes.begin(), bytes.end(), [&](char b) {
    return byte_id_[static_cast<uint8_t>(b)] >= 0;
  });
  if (all_bytes && !bytes.empty()) {
    for (char b : bytes) out->push_back(byte_id_[static_cast<uint8_t>(b)]);
    return absl::OkStatus();
  }
  if (spec_.unk_id >= 0) {
    out->push_back(spec_.unk_id);
    return absl::OkStatus();
  }
  return Error(absl::StrCat("cannot encode \"", AV(bytes), "\": no piece, no byte tokens and no unknown token"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> NewSentencePieceTokenizer(TokenizerSpec spec) {
  return SpmTokenizer::Create(std::move(spec));
}

}  // namespace llmserve
