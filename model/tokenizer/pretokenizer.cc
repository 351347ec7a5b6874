#include "model/tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/tokenizer/utf8.h"

namespace llmserve {

namespace {

// llama.cpp's GPT-2 regex (its trailing "|\s+" is implied: unmatched gaps become pieces).
constexpr const char* kGpt2 = R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re";

// Llama 3 (tiktoken cl100k-style). llama.cpp spells (?i:'s|...) out with character classes.
constexpr const char* kLlama3 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

// Qwen2: Llama 3 with single digits.
constexpr const char* kQwen2 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

// DeepSeek LLM's cased-letter class, written with escapes (several of its characters,
// e.g. U+2126 OHM SIGN and U+212A KELVIN SIGN, are changed by Unicode normalization).
constexpr const char* kDeepseekLlmLetters =
    R"re(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF})re"
    R"re(\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1})re"
    R"re(\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5})re"
    R"re(\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A})re"
    R"re(\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B})re"
    R"re(\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC})re"
    R"re(\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})re"
    R"re(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134})re"
    R"re(\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})re"
    R"re(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787})re"
    R"re(\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A})re"
    R"re(\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2})re"
    R"re(\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)re";
// [!-/:-~！-／：-～‘-‟　-。]
constexpr const char* kDeepseekLlmPunct =
    R"re(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)re";
// [一-龥ࠀ-一가-퟿]
constexpr const char* kCjk = R"re([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)re";

struct NamedSet {
  const char* name;
  std::vector<std::string> regexes;
};

const std::vector<NamedSet>& NamedSets() {
  static const auto* sets = new std::vector<NamedSet>{
      {"gpt2", {kGpt2}},
      {"mpt", {kGpt2}},
      {"llama3", {kLlama3}},
      {"qwen2", {kQwen2}},
      {"deepseek-llm", {R"re([\r\n])re", kDeepseekLlmLetters, kDeepseekLlmPunct, R"re(\s+$)re", kCjk, R"re(\p{N}+)re"}},
      {"deepseek-coder", {R"re([\r\n])re", R"re(\s?\p{L}+)re", R"re(\s?\p{P}+)re", kCjk, R"re(\p{N})re"}},
      {"falcon", {R"re([\p{P}\$\+<=>\^~\|`]+)re", kGpt2, R"re([0-9][0-9][0-9])re"}},
      {"starcoder", {R"re(\p{N})re", kGpt2}},
      {"refact", {R"re(\p{N})re", kGpt2}},
      {"default",
       {R"re([\p{P}\$\+<=>\^~\|]+)re", kGpt2, R"re(\p{N}+)re", R"re([0-9][0-9][0-9])re"}},
  };
  return *sets;
}

// Other spellings (GGUF tokenizer.ggml.pre values that llama.cpp maps to the same regexes).
struct Alias {
  const char* alias;
  const char* name;
};
constexpr Alias kAliases[] = {
    {"gpt-2", "gpt2"},         {"llama-bpe", "llama3"},   {"llama-v3", "llama3"},   {"dbrx", "llama3"},
    {"smaug-bpe", "llama3"},   {"olmo", "gpt2"},          {"jais", "gpt2"},         {"stablelm2", "qwen2"},
    {"command-r", "starcoder"}, {"smollm", "starcoder"},  {"codeshell", "starcoder"}, {"exaone", "starcoder"},
};

}  // namespace

std::string CanonicalPreTokenizerName(std::string_view name) {
  for (const auto& set : NamedSets()) {
    if (name == set.name) return set.name;
  }
  for (const auto& a : kAliases) {
    if (name == a.alias) return a.name;
  }
  return "";
}

std::vector<std::string> PreTokenizerNames() {
  std::vector<std::string> names;
  for (const auto& set : NamedSets()) names.emplace_back(set.name);
  return names;
}

std::vector<std::string> PreTokenizerRegexes(std::string_view name) {
  for (const auto& set : NamedSets()) {
    if (name == set.name) return set.regexes;
  }
  return {};
}

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Regex() { pcre2_code_free(code); }
};

namespace {

// Per-thread match state: match data (whole-match ovector only) and a JIT stack that can
// grow to 8 MiB, so long runs of one class do not exhaust the default 32 KiB stack.
struct ThreadMatchState {
  pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* ctx = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  ThreadMatchState() {
    if (ctx != nullptr && stack != nullptr) pcre2_jit_stack_assign(ctx, nullptr, stack);
  }
  ~ThreadMatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(ctx);
    pcre2_match_data_free(md);
  }
};

ThreadMatchState& MatchState() {
  thread_local ThreadMatchState state;
  return state;
}

}  // namespace

PreTokenizer::~PreTokenizer() = default;

absl::StatusOr<std::unique_ptr<PreTokenizer>> PreTokenizer::Create(std::string_view name) {
  const std::string canonical = CanonicalPreTokenizerName(name);
  if (canonical.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown pre-tokenizer \"", std::string(name),
                                                   "\" (known: gpt2, llama3, qwen2, deepseek-llm, deepseek-coder, "
                                                   "falcon, starcoder, mpt, refact, default)"));
  }
  return FromRegexes(PreTokenizerRegexes(canonical));
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> PreTokenizer::FromRegexes(const std::vector<std::string>& regexes) {
  std::unique_ptr<PreTokenizer> pt(new PreTokenizer());
  for (const std::string& pattern : regexes) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    auto re = std::make_unique<Regex>();
    re->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                             PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &error, &offset, nullptr);
    if (re->code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(error, msg, sizeof(msg));
      return absl::InvalidArgumentError(absl::StrCat("pre-tokenizer regex \"", pattern, "\" does not compile at offset ",
                                                     offset, ": ", reinterpret_cast<const char*>(msg)));
    }
    re->jit = pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE) == 0;
    pt->regexes_.push_back(std::move(re));
  }
  return pt;
}

namespace {

// Splits `s` with one regex: matches and the gaps between them, in order.
void SplitWith(const pcre2_code* code, bool jit, std::string_view s, std::vector<std::string_view>* out) {
  if (s.empty()) return;
  ThreadMatchState& st = MatchState();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  const size_t len = s.size();
  size_t last = 0;  // end of the previous match
  size_t pos = 0;   // where the next search starts
  while (pos < len && st.md != nullptr) {
    int rc = jit ? pcre2_jit_match(code, subject, len, pos, 0, st.md, st.ctx)
                 : pcre2_match(code, subject, len, pos, PCRE2_NO_UTF_CHECK, st.md, st.ctx);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH && jit) {
      // JIT resource limit: retry with the interpreter.
      rc = pcre2_match(code, subject, len, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, st.md, st.ctx);
    }
    if (rc < 0) break;  // no match (or a resource error): the rest is one gap
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.md);
    const size_t start = ov[0];
    const size_t end = ov[1];
    if (start > len || end > len || end < start) break;
    if (end == start) {  // empty match: step over one character
      if (start >= len) break;
      const size_t step = utf8::SequenceLength(static_cast<uint8_t>(s[start]));
      pos = start + (step == 0 ? 1 : step);
      continue;
    }
    if (start > last) out->push_back(s.substr(last, start - last));
    out->push_back(s.substr(start, end - start));
    last = pos = end;
  }
  if (last < len) out->push_back(s.substr(last));
}

}  // namespace

void PreTokenizer::Split(std::string_view text, std::vector<std::string_view>* pieces) const {
  if (text.empty()) return;
  if (regexes_.empty()) {
    pieces->push_back(text);
    return;
  }
  if (regexes_.size() == 1) {
    SplitWith(regexes_[0]->code, regexes_[0]->jit, text, pieces);
    return;
  }
  std::vector<std::string_view> cur{text};
  std::vector<std::string_view> next;
  for (size_t r = 0; r < regexes_.size(); ++r) {
    const bool last = r + 1 == regexes_.size();
    std::vector<std::string_view>* dst = last ? pieces : &next;
    if (!last) next.clear();
    for (std::string_view piece : cur) SplitWith(regexes_[r]->code, regexes_[r]->jit, piece, dst);
    if (!last) std::swap(cur, next);
  }
}

}  // namespace llmserve
