// libFuzzer target: a JSON Schema (constraint/json_schema.h). A schema that compiles is
// checked for the grammar's promises (no lexeme matches the empty string, the start
// symbol has a rule), printed (which walks every rule and lexeme), and a small grammar is
// run by the matcher over a few JSON texts. Both whitespace modes are compiled. An error
// status is the expected answer to a malformed or unsupported schema. The bounds are
// below the defaults so that one input stays fast.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "constraint/json_schema.h"
#include "constraint/matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace llmserve::constraint;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (bool flexible : {false, true}) {
    JsonSchemaOptions opts;
    opts.whitespace_flexible = flexible;
    opts.max_depth = 40;
    opts.grammar.max_rules = 20'000;
    opts.grammar.max_symbols = 200'000;
    opts.grammar.max_lexemes = 5'000;
    opts.grammar.regex.max_nodes = 100'000;
    opts.grammar.regex.max_repeat = 1'000;
    auto g = CompileJsonSchema(text, opts);
    if (!g.ok()) continue;
    for (RegexId l : g->lexemes) {
      if (g->regex.Nullable(l)) __builtin_trap();
    }
    if (g->rules_of[g->start].first == g->rules_of[g->start].second) __builtin_trap();
    if (g->rules.size() >= 5'000) continue;
    (void)g->ToString();
    for (std::string_view json : {"null", "true", "0", "-1.5e3", "\"x\"", "[]", "{}", "[1, \"a\", null]",
                                  "{\"a\": 1, \"b\": [true]}", "{\"\xC3\xA9\": \"\\u00e9\"}"}) {
      (void)GrammarAcceptsText(*g, json);
    }
  }
  return 0;
}
