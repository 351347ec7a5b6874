// MaskBench's method (guidance-ai/jsonschemabench, maskbench/) over a directory of its
// files: compile each schema (TTFM: compile, matcher and first mask), force every valid
// instance token by token and then end of generation (each must be allowed), force every
// invalid instance (some token or the end must be refused), and time every mask (TBM).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "constraint/constraint_spec.h"
#include "model/tokenizer/tokenizer.h"

namespace llmserve::llmgrammar {

enum class Outcome { kPassing, kCompileError, kValidationError, kInvalidationError, kTimeout };
const char* OutcomeName(Outcome o);

struct SchemaResult {
  std::string file;
  Outcome outcome = Outcome::kPassing;
  std::string detail;           // the error or the failing test
  int64_t ttfm_us = 0;
  std::vector<int64_t> mask_us;  // one per token forced
  int64_t forced = 0;            // masks that allowed exactly one token
  int tests_run = 0;
};

struct BenchOptions {
  constraint::CompileLimits limits;
  bool whitespace_flexible = true;  // json.dumps puts spaces after , and :
  double timeout_s = 120;           // per schema, as MaskBench's (which used 900 s)
};

SchemaResult RunSchemaFile(const std::string& path, const Tokenizer& tokenizer,
                           std::shared_ptr<const constraint::TokenVocabulary> vocab,
                           const BenchOptions& options);

// MaskBench's table: outcome counts, TBM and TTFM percentiles (µs), tokens, forced share.
std::string SummaryTable(const std::vector<SchemaResult>& results);

}  // namespace llmserve::llmgrammar
