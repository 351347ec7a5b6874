// What a request asks its output to match, and how that becomes a compiled constraint.
//
// ConstraintSpec is protocol-neutral: the gRPC and HTTP front ends fill it from their own
// fields (JSON Schema text, a regex, a list of choices, a GBNF grammar, or any JSON).
// ConstraintCache compiles each distinct spec once per vocabulary and keeps the result
// (and the lexer states and masks it learns) for the requests that repeat it.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "constraint/grammar.h"
#include "constraint/matcher.h"

namespace llmserve::constraint {

enum class ConstraintKind {
  kJsonSchema,  // text: a JSON Schema
  kJson,        // any JSON value (text empty); object_only for OpenAI's json_object
  kRegex,       // text: a regular expression the whole output matches
  kChoice,      // choices: the output is exactly one of them
  kGrammar,     // text: a GBNF grammar (llama.cpp syntax), start rule `root`
};

const char* ConstraintKindName(ConstraintKind kind);  // "json_schema", "json", ...

struct ConstraintSpec {
  ConstraintKind kind = ConstraintKind::kJson;
  std::string text;
  std::vector<std::string> choices;
  bool object_only = false;          // kJson: the value must be an object
  bool whitespace_flexible = false;  // JSON kinds: any JSON whitespace between tokens

  // A digest of everything above (the cache key).
  std::string CacheKey() const;
};

struct CompileLimits {
  uint32_t max_text_bytes = 4 << 20;  // schema, grammar or regex text
  uint32_t max_choices = 100'000;
  GrammarLimits grammar;
  ConstraintLimits runtime;

  absl::Status Validate() const;
};

// The spec as a grammar. INVALID_ARGUMENT names what is wrong or unsupported (keyword and
// path, line and column); RESOURCE_EXHAUSTED names the bound.
absl::StatusOr<Grammar> CompileToGrammar(const ConstraintSpec& spec, const CompileLimits& limits);

// Thread-safe. Bounded: least recently used entries go first.
class ConstraintCache {
 public:
  ConstraintCache(std::shared_ptr<const TokenVocabulary> vocab, CompileLimits limits, size_t capacity);

  struct Result {
    std::shared_ptr<CompiledConstraint> constraint;
    bool cache_hit = false;
  };
  absl::StatusOr<Result> Get(const ConstraintSpec& spec);

  const TokenVocabulary& vocab() const { return *vocab_; }
  const CompileLimits& limits() const { return limits_; }

 private:
  const std::shared_ptr<const TokenVocabulary> vocab_;
  const CompileLimits limits_;
  const size_t capacity_;
  absl::Mutex mu_;
  std::list<std::pair<std::string, std::shared_ptr<CompiledConstraint>>> lru_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, decltype(lru_)::iterator> index_ ABSL_GUARDED_BY(mu_);
};

}  // namespace llmserve::constraint
