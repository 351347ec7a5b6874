#include "constraint/constraint_spec.h"

#include "absl/strings/str_cat.h"
#include "constraint/gbnf.h"
#include "constraint/json_schema.h"
#include "constraint/regex_parser.h"

namespace llmserve::constraint {

const char* ConstraintKindName(ConstraintKind kind) {
  switch (kind) {
    case ConstraintKind::kJsonSchema: return "json_schema";
    case ConstraintKind::kJson: return "json";
    case ConstraintKind::kRegex: return "regex";
    case ConstraintKind::kChoice: return "choice";
    case ConstraintKind::kGrammar: return "grammar";
  }
  return "unknown";
}

std::string ConstraintSpec::CacheKey() const {
  // Length-prefixed fields: no two specs share a key.
  std::string key = absl::StrCat(static_cast<int>(kind), ":", object_only ? 1 : 0,
                                 whitespace_flexible ? 1 : 0, ":", text.size(), ":", text);
  for (const std::string& c : choices) absl::StrAppend(&key, ":", c.size(), ":", c);
  return key;
}

absl::Status CompileLimits::Validate() const {
  if (max_text_bytes == 0) return absl::InvalidArgumentError("max_text_bytes must be positive");
  if (max_choices == 0) return absl::InvalidArgumentError("max_choices must be positive");
  return absl::OkStatus();
}

namespace {

absl::StatusOr<Grammar> ChoiceGrammar(const std::vector<std::string>& choices, const CompileLimits& limits) {
  if (choices.empty()) return absl::InvalidArgumentError("a choice constraint needs at least one choice");
  if (choices.size() > limits.max_choices) {
    return absl::ResourceExhaustedError(absl::StrCat("a choice constraint may list at most ", limits.max_choices, " choices"));
  }
  GrammarBuilder b(limits.grammar);
  std::vector<RegexId> alts;
  bool has_empty = false;
  for (const std::string& c : choices) {
    if (c.empty()) has_empty = true;
    else alts.push_back(b.regex().Literal(c));
  }
  NonterminalId root = b.NewNonterminal("root");
  if (!alts.empty()) b.AddRule(root, {b.LexemeSymbol(b.regex().Alt(std::move(alts)))});
  if (has_empty) b.AddRule(root, {});
  return std::move(b).Build(root);
}

absl::StatusOr<Grammar> RegexGrammar(std::string_view pattern, const CompileLimits& limits) {
  GrammarBuilder b(limits.grammar);
  RegexParseOptions opts;
  opts.search = false;
  opts.max_pattern_bytes = limits.max_text_bytes;
  auto re = CompileRegex(pattern, opts, RegexEncoding::kUtf8, b.regex());
  if (!re.ok()) return re.status();
  NonterminalId root = b.NewNonterminal("root");
  // A lexeme must consume bytes: a pattern that matches "" gets the empty output as a rule
  // of its own and the rest as the lexeme.
  if (b.regex().Nullable(*re)) b.AddRule(root, {});
  RegexId nonempty = b.regex().WithoutEmpty(*re);
  if (nonempty != b.regex().Nothing()) b.AddRule(root, {b.LexemeSymbol(nonempty)});
  return std::move(b).Build(root);
}

}  // namespace

absl::StatusOr<Grammar> CompileToGrammar(const ConstraintSpec& spec, const CompileLimits& limits) {
  if (spec.text.size() > limits.max_text_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("the ", ConstraintKindName(spec.kind), " text is ",
                                                     spec.text.size(), " bytes; the limit is ",
                                                     limits.max_text_bytes));
  }
  switch (spec.kind) {
    case ConstraintKind::kJsonSchema: {
      JsonSchemaOptions opts;
      opts.whitespace_flexible = spec.whitespace_flexible;
      opts.max_schema_bytes = limits.max_text_bytes;
      opts.grammar = limits.grammar;
      return CompileJsonSchema(spec.text, opts);
    }
    case ConstraintKind::kJson: {
      JsonSchemaOptions opts;
      opts.whitespace_flexible = spec.whitespace_flexible;
      opts.grammar = limits.grammar;
      return AnyJsonGrammar(spec.object_only, opts);
    }
    case ConstraintKind::kRegex:
      return RegexGrammar(spec.text, limits);
    case ConstraintKind::kChoice:
      return ChoiceGrammar(spec.choices, limits);
    case ConstraintKind::kGrammar: {
      GbnfOptions opts;
      opts.max_grammar_bytes = limits.max_text_bytes;
      opts.grammar = limits.grammar;
      return ParseGbnf(spec.text, opts);
    }
  }
  return absl::InvalidArgumentError("unknown constraint kind");
}

ConstraintCache::ConstraintCache(std::shared_ptr<const TokenVocabulary> vocab, CompileLimits limits, size_t capacity)
    : vocab_(std::move(vocab)), limits_(limits), capacity_(capacity) {}

absl::StatusOr<ConstraintCache::Result> ConstraintCache::Get(const ConstraintSpec& spec) {
  std::string key = spec.CacheKey();
  {
    absl::MutexLock lock(&mu_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return Result{it->second->second, true};
    }
  }
  // Compile outside the lock: another request may compile the same spec meanwhile; the
  // first to finish is kept.
  auto grammar = CompileToGrammar(spec, limits_);
  if (!grammar.ok()) return grammar.status();
  auto compiled = CompiledConstraint::Create(*std::move(grammar), vocab_, limits_.runtime);
  if (!compiled.ok()) return compiled.status();
  absl::MutexLock lock(&mu_);
  auto it = index_.find(key);
  if (it != index_.end()) return Result{it->second->second, false};
  lru_.emplace_front(key, *compiled);
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return Result{*std::move(compiled), false};
}

}  // namespace llmserve::constraint
