#include "tools/llmgrammar/maskbench.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "tools/llmgrammar/python_json.h"

namespace llmserve::llmgrammar {

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPassing: return "passing";
    case Outcome::kCompileError: return "compile error";
    case Outcome::kValidationError: return "validation error";
    case Outcome::kInvalidationError: return "invalidation error";
    case Outcome::kTimeout: return "timeout";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;
int64_t Micros(Clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - since).count();
}

}  // namespace

SchemaResult RunSchemaFile(const std::string& path, const Tokenizer& tokenizer,
                           std::shared_ptr<const constraint::TokenVocabulary> vocab,
                           const BenchOptions& options) {
  SchemaResult r;
  r.file = path.substr(path.find_last_of('/') + 1);
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::ordered_json file;
  try {
    file = nlohmann::ordered_json::parse(text.str());
  } catch (const std::exception& e) {
    r.outcome = Outcome::kCompileError;
    r.detail = absl::StrCat("not a MaskBench file: ", e.what());
    return r;
  }
  constraint::ConstraintSpec spec;
  spec.kind = constraint::ConstraintKind::kJsonSchema;
  spec.text = file.contains("schema") ? file["schema"].dump() : "{}";
  spec.whitespace_flexible = options.whitespace_flexible;

  const Clock::time_point start = Clock::now();
  auto grammar = constraint::CompileToGrammar(spec, options.limits);
  if (!grammar.ok()) {
    r.outcome = Outcome::kCompileError;
    r.detail = std::string(grammar.status().message());
    return r;
  }
  auto compiled = constraint::CompiledConstraint::Create(*std::move(grammar), vocab, options.limits.runtime);
  if (!compiled.ok()) {
    r.outcome = Outcome::kCompileError;
    r.detail = std::string(compiled.status().message());
    return r;
  }
  constraint::TokenMask mask(vocab->size());
  {
    constraint::Matcher first(*compiled);
    absl::Status s = first.ComputeMask(&mask);
    r.ttfm_us = Micros(start);
    if (!s.ok()) {
      r.outcome = Outcome::kCompileError;
      r.detail = std::string(s.message());
      return r;
    }
  }
  if (!file.contains("tests")) return r;
  int index = 0;
  for (const auto& test : file["tests"]) {
    const int i = index++;
    const bool valid = test.value("valid", false);
    const std::string instance = PythonJsonDumps(test["data"]);
    auto tokens = tokenizer.Encode(instance, EncodeOptions{});
    if (!tokens.ok()) continue;  // not UTF-8: the tokenizer cannot say it
    ++r.tests_run;
    constraint::Matcher m(*compiled);
    bool accepted = true;
    std::string why;
    for (int32_t t : *tokens) {
      const Clock::time_point t0 = Clock::now();
      absl::Status s = m.ComputeMask(&mask);
      bool ok = s.ok() && mask.Has(t);
      if (ok) ok = m.Advance(t).ok();
      r.mask_us.push_back(Micros(t0));
      if (s.ok() && mask.Count() == 1) ++r.forced;
      if (!ok) {
        accepted = false;
        why = s.ok() ? absl::StrCat("token ", t, " ", tokenizer.TokenBytes(t), " refused after ",
                                    m.bytes_consumed(), " bytes")
                     : std::string(s.message());
        break;
      }
      if (std::chrono::duration<double>(Clock::now() - start).count() > options.timeout_s) {
        r.outcome = Outcome::kTimeout;
        return r;
      }
    }
    if (accepted && !m.Accepting()) {
      accepted = false;
      why = "end of generation refused";
    }
    if (valid && !accepted) {
      r.outcome = Outcome::kValidationError;
      r.detail = absl::StrCat("test #", i, ": should accept but didn't (", why, "): ", instance.substr(0, 300));
      return r;
    }
    if (!valid && accepted) {
      r.outcome = Outcome::kInvalidationError;
      r.detail = absl::StrCat("test #", i, ": should reject but didn't: ", instance.substr(0, 300));
      return r;
    }
  }
  return r;
}

namespace {

int64_t Percentile(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(p / 100.0 * (sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

std::string Row(const std::string& name, const std::string& value) {
  return absl::StrFormat("| %-18s | %14s |\n", name, value);
}

}  // namespace

std::string SummaryTable(const std::vector<SchemaResult>& results) {
  int counts[5] = {};
  std::vector<int64_t> tbm, ttfm;
  int64_t forced = 0;
  for (const SchemaResult& r : results) {
    ++counts[static_cast<int>(r.outcome)];
    tbm.insert(tbm.end(), r.mask_us.begin(), r.mask_us.end());
    forced += r.forced;
    if (r.outcome != Outcome::kCompileError) ttfm.push_back(r.ttfm_us);
  }
  std::sort(tbm.begin(), tbm.end());
  std::sort(ttfm.begin(), ttfm.end());
  auto avg = [](const std::vector<int64_t>& v) {
    if (v.empty()) return int64_t{0};
    long double s = 0;
    for (int64_t x : v) s += x;
    return static_cast<int64_t>(s / v.size() + 0.5);
  };
  std::string out = Row("metric", "llmserve");
  out += "|:-------------------|---------------:|\n";
  const double ps[] = {25, 50, 75, 90, 95, 99, 99.9, 100};
  out += Row("TBM avg", absl::StrCat(avg(tbm)));
  for (double p : ps) out += Row(absl::StrCat("TBM p", p), absl::StrCat(Percentile(tbm, p)));
  out += Row("TTFM avg", absl::StrCat(avg(ttfm)));
  for (double p : ps) out += Row(absl::StrCat("TTFM p", p), absl::StrCat(Percentile(ttfm, p)));
  out += Row("tokens", absl::StrCat(tbm.size()));
  out += Row("forced share", absl::StrFormat("%.1f%%", tbm.empty() ? 0.0 : 100.0 * forced / tbm.size()));
  out += Row("schemas", absl::StrCat(results.size()));
  for (Outcome o : {Outcome::kPassing, Outcome::kCompileError, Outcome::kTimeout,
                    Outcome::kValidationError, Outcome::kInvalidationError}) {
    out += Row(OutcomeName(o), absl::StrCat(counts[static_cast<int>(o)]));
  }
  return out;
}

}  // namespace llmserve::llmgrammar
