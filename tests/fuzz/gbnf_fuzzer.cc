// libFuzzer target: a GBNF grammar (constraint/gbnf.h). A grammar that parses is checked
// for the parser's promises (every lexeme is one code point, so none matches the empty
// string; the start symbol has a rule), printed (which walks every rule and lexeme), and a
// small one is run by the matcher over a few short texts. An error status is the expected
// answer to a malformed grammar. The bounds are below the defaults so that one input
// stays fast.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "constraint/gbnf.h"
#include "constraint/matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace llmserve::constraint;
  GbnfOptions opts;
  opts.grammar.max_rules = 20'000;
  opts.grammar.max_symbols = 200'000;
  opts.grammar.regex.max_repeat = 1'000;
  auto g = ParseGbnf(std::string_view(reinterpret_cast<const char*>(data), size), opts);
  if (!g.ok()) return 0;
  for (RegexId l : g->lexemes) {
    if (g->regex.Nullable(l)) __builtin_trap();
  }
  if (g->rules_of[g->start].first == g->rules_of[g->start].second) __builtin_trap();
  if (g->rules.size() >= 5'000) return 0;
  (void)g->ToString();
  for (std::string_view text : {"", "a", "ab1", "{\"a\": [1, \"x\"]}\n", "\xC3\xA9\xF0\x9F\x99\x82"}) {
    (void)GrammarAcceptsText(*g, text);
  }
  return 0;
}
