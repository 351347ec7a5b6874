// llmgrammar: compile a constraint (JSON Schema, regex, GBNF grammar, choices, any JSON)
// against a tokenizer and show what it became; check an instance against it token by
// token; or run MaskBench's method over a directory of MaskBench files.
//
//   llmgrammar --tokenizer DIR --json_schema schema.json [--print_grammar]
//   llmgrammar --tokenizer DIR --regex '[a-z]+@[a-z]+\.com' --check_text 'me@x.com'
//   llmgrammar --tokenizer DIR --bench maskbench/data [--list FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_split.h"
#include "constraint/constraint_spec.h"
#include "model/tokenizer/tokenizer_loader.h"
#include "scheduler/constraint_vocabulary.h"
#include "tools/llmgrammar/maskbench.h"

ABSL_FLAG(std::string, tokenizer, "", "tokenizer: .gguf, tokenizer.json, directory, tokenizer.bin, or vocab file");
ABSL_FLAG(std::string, json_schema, "", "a JSON Schema file");
ABSL_FLAG(bool, json, false, "any JSON value");
ABSL_FLAG(std::string, regex, "", "a regular expression the whole output matches");
ABSL_FLAG(std::string, grammar, "", "a GBNF grammar file (llama.cpp syntax, start rule root)");
ABSL_FLAG(std::string, choice, "", "choices separated by '|'");
ABSL_FLAG(bool, flexible_whitespace, false, "JSON kinds: allow any JSON whitespace between tokens");
ABSL_FLAG(bool, print_grammar, false, "print the compiled grammar");
ABSL_FLAG(std::string, check, "", "a file whose text is fed token by token");
ABSL_FLAG(std::string, check_text, "", "text fed token by token");
ABSL_FLAG(std::string, bench, "", "a directory of MaskBench files: run MaskBench's method over them");
ABSL_FLAG(std::string, list, "", "with --bench: write each file's outcome to this file");
ABSL_FLAG(int, max_files, 0, "with --bench: only the first N files (sorted), 0 = all");
ABSL_FLAG(double, timeout, 120, "with --bench: seconds per schema before it counts as a timeout");

namespace {

using namespace llmserve;
using Clock = std::chrono::steady_clock;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "llmgrammar: %s\n", std::string(s.message()).c_str());
  return 1;
}

int RunBench(const Tokenizer& tok, std::shared_ptr<const constraint::TokenVocabulary> vocab) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(absl::GetFlag(FLAGS_bench), ec)) {
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  }
  if (ec) return Fail(absl::NotFoundError("cannot list " + absl::GetFlag(FLAGS_bench) + ": " + ec.message()));
  std::sort(files.begin(), files.end());
  if (int n = absl::GetFlag(FLAGS_max_files); n > 0 && files.size() > static_cast<size_t>(n)) files.resize(n);
  llmgrammar::BenchOptions opts;
  opts.timeout_s = absl::GetFlag(FLAGS_timeout);
  std::vector<llmgrammar::SchemaResult> results;
  std::ofstream list;
  if (!absl::GetFlag(FLAGS_list).empty()) list.open(absl::GetFlag(FLAGS_list));
  for (const std::string& f : files) {
    results.push_back(llmgrammar::RunSchemaFile(f, tok, vocab, opts));
    const auto& r = results.back();
    if (list.is_open()) {
      int64_t max_mask = r.mask_us.empty() ? 0 : *std::max_element(r.mask_us.begin(), r.mask_us.end());
      const auto slow = std::count_if(r.mask_us.begin(), r.mask_us.end(), [](int64_t us) { return us > 500; });
      list << r.file << "\t" << llmgrammar::OutcomeName(r.outcome) << "\t" << r.ttfm_us << "\t" << max_mask
           << "\t" << r.mask_us.size() << "\t" << slow << "\t" << r.detail << "\n";
    }
  }
  std::printf("%s", llmgrammar::SummaryTable(results).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("compile and check output constraints; run MaskBench's method");
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_tokenizer).empty()) return Fail(absl::InvalidArgumentError("--tokenizer is required"));
  auto tok = LoadTokenizer(absl::GetFlag(FLAGS_tokenizer));
  if (!tok.ok()) return Fail(tok.status());
  std::vector<int32_t> eos;
  if ((*tok)->eos_id() >= 0) eos.push_back((*tok)->eos_id());
  auto vocab = ConstraintVocabulary(**tok, eos);
  if (!vocab.ok()) return Fail(vocab.status());
  if (!absl::GetFlag(FLAGS_bench).empty()) return RunBench(**tok, *vocab);

  constraint::ConstraintSpec spec;
  int kinds = 0;
  if (!absl::GetFlag(FLAGS_json_schema).empty()) {
    spec.kind = constraint::ConstraintKind::kJsonSchema;
    spec.text = ReadFile(absl::GetFlag(FLAGS_json_schema));
    ++kinds;
  }
  if (absl::GetFlag(FLAGS_json)) { spec.kind = constraint::ConstraintKind::kJson; ++kinds; }
  if (!absl::GetFlag(FLAGS_regex).empty()) {
    spec.kind = constraint::ConstraintKind::kRegex;
    spec.text = absl::GetFlag(FLAGS_regex);
    ++kinds;
  }
  if (!absl::GetFlag(FLAGS_grammar).empty()) {
    spec.kind = constraint::ConstraintKind::kGrammar;
    spec.text = ReadFile(absl::GetFlag(FLAGS_grammar));
    ++kinds;
  }
  if (!absl::GetFlag(FLAGS_choice).empty()) {
    spec.kind = constraint::ConstraintKind::kChoice;
    for (absl::string_view c : absl::StrSplit(absl::GetFlag(FLAGS_choice), '|')) spec.choices.emplace_back(c);
    ++kinds;
  }
  if (kinds != 1) {
    return Fail(absl::InvalidArgumentError("give exactly one of --json-schema, --json, --regex, --grammar, --choice, or --bench"));
  }
  spec.whitespace_flexible = absl::GetFlag(FLAGS_flexible_whitespace);

  constraint::CompileLimits limits;
  const Clock::time_point t0 = Clock::now();
  auto grammar = constraint::CompileToGrammar(spec, limits);
  if (!grammar.ok()) return Fail(grammar.status());
  const double compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("%s constraint: %zu rules, %zu lexemes, %zu nonterminals; compiled in %.3f ms\n",
              constraint::ConstraintKindName(spec.kind), grammar->rules.size(), grammar->lexemes.size(),
              grammar->nonterminal_names.size(), compile_ms);
  if (absl::GetFlag(FLAGS_print_grammar)) std::printf("%s", grammar->ToString().c_str());
  auto compiled = constraint::CompiledConstraint::Create(*std::move(grammar), *vocab, limits.runtime);
  if (!compiled.ok()) return Fail(compiled.status());
  constraint::Matcher m(*compiled);
  constraint::TokenMask mask;
  const Clock::time_point t1 = Clock::now();
  if (absl::Status s = m.ComputeMask(&mask); !s.ok()) return Fail(s);
  std::printf("first mask: %d of %d tokens allowed, %.3f ms\n", mask.Count(), mask.size(),
              std::chrono::duration<double, std::milli>(Clock::now() - t1).count());

  std::string text = absl::GetFlag(FLAGS_check_text);
  if (!absl::GetFlag(FLAGS_check).empty()) text = ReadFile(absl::GetFlag(FLAGS_check));
  if (text.empty() && absl::GetFlag(FLAGS_check).empty()) return 0;
  auto tokens = (*tok)->Encode(text, EncodeOptions{});
  if (!tokens.ok()) return Fail(tokens.status());
  size_t offset = 0;
  for (size_t i = 0; i < tokens->size(); ++i) {
    const int32_t t = (*tokens)[i];
    if (absl::Status s = m.ComputeMask(&mask); !s.ok()) return Fail(s);
    if (!mask.Has(t) || !m.Advance(t).ok()) {
      std::printf("refused: token %zu (id %d, \"%s\") at byte %zu: \"%s\" <- here\n", i, t,
                  (*tok)->TokenBytes(t).c_str(), offset, text.substr(0, offset).c_str());
      return 2;
    }
    offset += (*tok)->TokenBytes(t).size();
  }
  if (!m.Accepting()) {
    std::printf("refused: the text is a prefix; the constraint does not accept it as a whole output\n");
    return 2;
  }
  std::printf("accepted: %zu tokens\n", tokens->size());
  return 0;
}
