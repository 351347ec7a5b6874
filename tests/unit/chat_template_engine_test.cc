// Unit tests of the Jinja engine behind ChatTemplate: whitespace rules, expressions,
// statements, filters/tests/methods, undefined semantics, errors with positions, limits.
// Expected strings are what Python jinja2 3.1.2 (transformers' setup) prints.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "model/chat/chat_template.h"
#include "nlohmann/json.hpp"

namespace llmserve::chat {
namespace {

using nlohmann::ordered_json;

absl::StatusOr<std::string> RenderWith(const std::string& src, const ordered_json& vars,
                                       const TemplateLimits& limits = TemplateLimits()) {
  auto t = ChatTemplate::Parse("t", src, limits);
  if (!t.ok()) return t.status();
  RenderOptions o;
  o.now = std::chrono::system_clock::time_point(std::chrono::seconds(1796126400));
  return t->Render(vars, o);
}

std::string R(const std::string& src, const ordered_json& vars = ordered_json::object()) {
  auto r = RenderWith(src, vars);
  return r.ok() ? *r : "ERR: " + std::string(r.status().message());
}

const ordered_json kVars = {{"d", {{"a", 1}, {"items", 2}}}, {"l", {1, 2, 3}}};

TEST(JinjaWhitespace, TrimAndLstripBlocks) {
  EXPECT_EQ(R("  {% if true %}\n  x\n  {% endif %}\ny"), "  x\ny");
  EXPECT_EQ(R("a  {%- if true -%}  b  {%- endif %}"), "ab");
  EXPECT_EQ(R("a\n  {%+ if true %}b{% endif %}"), "a\n  b");
  EXPECT_EQ(R("{{ 'a' }}\n{{ 'b' -}}\n  c"), "a\nbc");
  EXPECT_EQ(R("x {# note #}\ny\n"), "x y");  // one trailing newline dropped
  EXPECT_EQ(R("x\n  {# c #}\ny"), "x\ny");
  EXPECT_EQ(R("{% raw %}{{ not }}{% endraw %}"), "{{ not }}");
  EXPECT_EQ(R("a\r\nb"), "a\nb");
}

TEST(JinjaExpr, Literals) {
  EXPECT_EQ(R("{{ 1.0 }} {{ 1e16 }} {{ 1.5e-5 }} {{ 0.1+0.2 }} {{ 10/4 }} {{ 7//-2 }} {{ -7 % 3 }} {{ 2**-1 }} {{ 2**10 }}"),
            "1.0 1e+16 1.5e-05 0.30000000000000004 2.5 -4 2 0.5 1024");
  EXPECT_EQ(R("{{ [1,'a',none,true,1.5,('x',)] }} {{ {'a':[1]} }} {{ 'it\\'s' }} {{ ['it\\'s', \"q\\\"\", 'a\\nb'] }}"),
            "[1, 'a', None, True, 1.5, ('x',)] {'a': [1]} it's [\"it's\", 'q\"', 'a\\nb']");
  EXPECT_EQ(R("{{ 'a' 'b' }}{{ \"\\u00e9\\x41\" }}{{ True }}{{ None }}{{ 1, 2 }}"), "abéATrueNone(1, 2)");
  EXPECT_EQ(R("{{ 1 == 1.0 }}{{ true == 1 }}{{ 'ab' * 2 }}{{ [1] + [2] }}{{ 3 * 'x' }}"), "TrueTrueabab[1, 2]xxx");
}

TEST(JinjaExpr, OperatorsAndPrecedence) {
  EXPECT_EQ(R("{{ 1 + 2 * 3 }} {{ -2 ** 2 }} {{ not 1 == 2 }} {{ 1 < 2 < 3 }} {{ 'a' ~ 1 ~ none }}"), "7 4 True True a1None");
  EXPECT_EQ(R("{{ 'y' if 0 else 'n' }}{{ 'x' if false }}|{{ 0 or 'b' }}{{ 1 and 'c' }}"), "n|bc");
  EXPECT_EQ(R("{{ 'b' in 'abc' }}{{ 2 not in l }}{{ 'a' in d }}{{ 'x' in undef }}", kVars), "TrueFalseTrueFalse");
  EXPECT_EQ(R("{{ -l[0]|abs }}{{ l|length + 1 }}", kVars), "14");
}

TEST(JinjaExpr, SubscriptsSlicesAttributes) {
  EXPECT_EQ(R("{{ l[::-1] }}{{ l[1:] }}{{ l[:-1] }}{{ 'hello'[1:3] }}{{ 'hello'[::-1] }}{{ l[-1] }}", kVars),
            "[3, 2, 1][2, 3][1, 2]elolleh3");
  EXPECT_EQ(R("{{ 'héllo'[1] }}{{ 'héllo'[:2] }}{{ 'héllo'|length }}"), "éhé5");
  EXPECT_EQ(R("{{ d['items'] }}|{{ d.a }}|{{ d.get('z', 5) }}|{{ d.pop is defined }}|{{ l[10] }}|{{ none.foo }}", kVars),
            "2|1|5|False||");
  EXPECT_EQ(R("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", kVars), "a=1;items=2;");
  EXPECT_EQ(R("{{ d.items() }}{{ d.keys() }}{{ d.values()|list }}{{ d.keys()|length }}", kVars),
            "dict_items([('a', 1), ('items', 2)])dict_keys(['a', 'items'])[1, 2]2");
}

TEST(JinjaStmt, ForLoopVariables) {
  EXPECT_EQ(R("{% for x in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }}-{{ loop.cycle('a','b') }}-{{ loop.revindex }}"
              "{% if x == 2 %}{% break %}{% endif %};{% endfor %}"),
            "-2-a-3;1-3-b-2");
  EXPECT_EQ(R("{% for x in [1,2,3] if x > 1 %}{{ loop.index }}/{{ loop.length }}{% else %}E{% endfor %}"), "1/22/2");
  EXPECT_EQ(R("{% for x in [] %}{% else %}E{% endfor %}"), "E");
  EXPECT_EQ(R("{% for x in [1,2,3] %}{% if x == 2 %}{% continue %}{% endif %}{{ x }}{% endfor %}"), "13");
  EXPECT_EQ(R("{% for a in [1] %}{% for b in [2] %}{{ loop.index }}{{ a }}{{ loop.first }}{{ loop.last }}{% endfor %}{% endfor %}"),
            "11TrueTrue");
}

TEST(JinjaStmt, ScopingMatchesJinja2) {
  EXPECT_EQ(R("{% for i in [1,2] %}{% if i == 2 %}{{ x }}{% endif %}{% set x = i %}{% endfor %}[{{ x }}]"), "[]");
  EXPECT_EQ(R("{% set x = 1 %}{% for i in [1,2] %}{{ x }}{% set x = 5 %}{{ x }}{% endfor %}{{ x }}"), "15151");
  EXPECT_EQ(R("{% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ m() }}"), "2");
  EXPECT_EQ(R("{% macro m() %}{{ y }}{% endmacro %}{% for y in [7] %}{{ m() }}{% endfor %}"), "");
  EXPECT_EQ(R("{% set ns = namespace(a=1) %}{% for i in [1,2] %}{% set ns.a = ns.a + i %}{% endfor %}{{ ns.a }}{{ ns }}"),
            "4<Namespace {'a': 4}>");
  EXPECT_EQ(R("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c %}x{{ a }}{% endset %}{{ c }}"), "12x1");
  EXPECT_EQ(R("{% set c | upper %}abc{% endset %}{{ c }}{% filter trim %}  t  {% endfilter %}"), "ABCt");
}

TEST(JinjaStmt, MacrosAndCallBlocks) {
  EXPECT_EQ(R("{% macro f(a, b=2, c='z') %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ f(1) }}|{{ f(1, c=3) }}|{{ f(b=0, a=9) }}"),
            "12z|123|90z");
  EXPECT_EQ(R("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}"), "321");
  EXPECT_EQ(R("{% macro w() %}[{{ caller() }}]{% endmacro %}{% call w() %}in{% endcall %}"), "[in]");
  EXPECT_EQ(R("{% macro f() %}{{ kwargs }}{% endmacro %}{{ f(x=1) }}"), "{'x': 1}");
  EXPECT_NE(R("{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}").find("takes not more than 1 argument"), std::string::npos);
}

TEST(JinjaFilters, Strings) {
  EXPECT_EQ(R("{{ '  x  '|trim }}|{{ 'hello world'|title }}|{{ 'hELLo'|capitalize }}|{{ 'aXb'|upper }}{{ 'aXb'|lower }}"),
            "x|Hello World|Hello|AXBaxb");
  EXPECT_EQ(R("{{ 'ab\ncd\n\nef'|indent(2) }}|{{ 'ab\ncd\n\nef'|indent(2, true, true) }}|{{ 'ab\n'|indent }}"),
            "ab\n  cd\n\n  ef|  ab\n  cd\n  \n  ef|ab\n");
  EXPECT_EQ(R("{{ 'abc'|center(9) }}|{{ 'a b c'|wordcount }}|{{ \"it's\"|replace(\"'\", '\"') }}|{{ '<a>'|e }}"),
            "   abc   |3|it\"s|&lt;a&gt;");
  EXPECT_EQ(R("{{ x|default('q') }}{{ ''|default('q') }}{{ ''|default('q', true) }}{{ none|d('q') }}"), "qqNone");
  EXPECT_EQ(R("{{ 3|string ~ 'x' }}{{ '3'|int + 1 }}{{ 'x'|int }}{{ '3.7'|float }}{{ 3.7|int }}{{ 2.567|round(2) }}{{ 2.5|round }}"),
            "3x403.732.572.0");
}

TEST(JinjaFilters, FormatAndTruncate) {
  EXPECT_EQ(R("{{ '%d items' % 3 }}{{ '%s-%s' % ('a', 1) }}{{ '%5.2f|%-4d|%04d|%x|%r|%.2s|%%' % (3.14159, 7, 42, 255, 'q', 'hello') }}"
              "{{ '%s'|format([1]) }}"),
            "3 itemsa-1 3.14|7   |0042|ff|'q'|he|%[1]");
  EXPECT_NE(R("{{ '%s %s' % ('a',) }}").find("not enough arguments for format string"), std::string::npos);
  EXPECT_EQ(R("{{ 'Hello World'|truncate(5) }}|{{ 'Hello World'|truncate(7, true) }}|{{ 'hello world foo bar baz qux'|truncate(12) }}"),
            "He...|Hello World|hello...");
}

TEST(JinjaFilters, Sequences) {
  const ordered_json v = {{"people", {{{"n", "b"}, {"age", 2}}, {{"n", "A"}, {"age", 1}}, {{"n", "c"}}}}};
  EXPECT_EQ(R("{{ people|map(attribute='n')|join(',') }}|{{ people|selectattr('age', 'defined')|list|length }}"
              "|{{ people|rejectattr('age')|map(attribute='n')|first }}|{{ people|sort(attribute='n')|map(attribute='n')|list }}",
              v),
            "b,A,c|2|c|['A', 'b', 'c']");
  EXPECT_EQ(R("{{ [3,1,2]|sort(reverse=true) }}{{ [1,1,2]|unique|list }}{{ [1,2,3]|select('odd')|list }}{{ [1,2,3]|sum }}"
              "{{ [1,2,3]|max }}{{ ['b','A']|min }}{{ [1,2,3,4,5]|batch(2)|list }}{{ {'b':1,'a':2}|dictsort }}"),
            "[3, 2, 1][1, 2][1, 3]63A[[1, 2], [3, 4], [5]][('a', 2), ('b', 1)]");
  EXPECT_EQ(R("{{ 'abc'|list }}{{ d|list }}{{ d|items|list }}{{ l|map('string')|list }}{{ 'abc'|reverse }}", kVars),
            "['a', 'b', 'c']['a', 'items'][('a', 1), ('items', 2)]['1', '2', '3']cba");
}

TEST(JinjaFilters, ToJson) {
  EXPECT_EQ(R("{{ {'b':1,'a':[1,2,{}],'c':[]}|tojson }}"), "{\"b\": 1, \"a\": [1, 2, {}], \"c\": []}");
  EXPECT_EQ(R("{{ {'b':1,'a':[1,{}]}|tojson(indent=2) }}"), "{\n  \"b\": 1,\n  \"a\": [\n    1,\n    {}\n  ]\n}");
  EXPECT_EQ(R("{{ 'é\"\n\x01'|tojson }}{{ 1.0|tojson }}{{ {'b':1,'a':2}|tojson(sort_keys=true) }}{{ 'é'|tojson(ensure_ascii=true) }}"),
            "\"é\\\"\\n\\u0001\"1.0{\"a\": 2, \"b\": 1}\"\\u00e9\"");
  EXPECT_NE(R("{{ x|tojson }}").find("Object of type Undefined is not JSON serializable"), std::string::npos);
  EXPECT_NE(R("{{ [1]|map('string')|tojson }}").find("not JSON serializable"), std::string::npos);
}

TEST(JinjaTests, Tests) {
  EXPECT_EQ(R("{{ 'a' is string }}{{ 1 is number }}{{ true is number }}{{ 1.0 is integer }}{{ true is boolean }}"
              "{{ d is mapping }}{{ l is sequence }}{{ 'a' is iterable }}{{ none is none }}{{ 3 is divisibleby 3 }}"
              "{{ 1 is sameas 1 }}{{ 'A' is upper }}{{ range is callable }}{{ undef is iterable }}{{ 2 is even }}"
              "{{ x is not defined }}{{ 1 is eq 1 }}{{ 1 is lt 2 }}{{ 1 is in [1] }}{{ false is false }}",
              kVars),
            "TrueTrueTrueFalseTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrue");
}

TEST(JinjaMethods, StringMethods) {
  EXPECT_EQ(R("{{ 'a,b,,c'.split(',') }}{{ ' a  b '.split() }}{{ 'a b c'.split(none, 1) }}{{ 'a,b,c'.rsplit(',', 1) }}"),
            "['a', 'b', '', 'c']['a', 'b']['a', 'b c']['a,b', 'c']");
  EXPECT_EQ(R("{{ '  x  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ 'abc'.startswith(('x','a')) }}|{{ '\nab'.lstrip('\n') }}"
              "|{{ 'abc'.endswith('bc') }}|{{ 'aXa'.replace('a', 'b') }}|{{ 'héllo'.find('l') }}|{{ 'a-b'.title() }}"),
            "x|a|True|ab|True|bXb|2|A-B");
  EXPECT_EQ(R("{{ 'a\nb'.splitlines() }}{{ ','.join(['a', 'b']) }}{{ 'aaa'.count('a') }}{{ '12'.isdigit() }}"),
            "['a', 'b']a,b3True");
}

TEST(JinjaSandbox, MutationIsBlocked) {
  EXPECT_NE(R("{% set x = [] %}{{ x.append(1) }}").find("SecurityError: access to attribute 'append' of 'list' object is unsafe."),
            std::string::npos);
  EXPECT_NE(R("{{ d.pop('a') }}", kVars).find("SecurityError"), std::string::npos);
  EXPECT_NE(R("{% set d2 = {} %}{% set d2.x = 1 %}").find("cannot assign attribute on non-namespace object"), std::string::npos);
  EXPECT_NE(R("{{ ''.__class__ }}").find(""), std::string::npos);
}

TEST(JinjaUndefined, Semantics) {
  EXPECT_EQ(R("[{{ x }}]{{ x is defined }}{{ not x }}{% for i in x %}no{% endfor %}{{ x|length }}{{ x == y }}"), "[]FalseTrue0True");
  EXPECT_EQ(R("{{ undef.foo }}"), "ERR: template 't' line 1 col 9: UndefinedError: 'undef' is undefined");
  EXPECT_NE(R("{{ d.b.c }}", kVars).find("'dict object' has no attribute 'b'"), std::string::npos);
  EXPECT_NE(R("{{ none.foo.bar }}").find("'None' has no attribute 'foo'"), std::string::npos);
  EXPECT_NE(R("{{ l[10].c }}", kVars).find("list object has no element 10"), std::string::npos);
  EXPECT_NE(R("{{ x + 1 }}").find("UndefinedError"), std::string::npos);
}

TEST(JinjaErrors, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(R("a\nb\n{% if x %}{% endfor %}"), "ERR: template 't' line 3 col 14: unexpected 'endfor'");
  EXPECT_EQ(R("{{ 1 + }}"), "ERR: template 't' line 1 col 8: unexpected end of print statement");
  EXPECT_NE(R("{% for x in y %}").find("unexpected end of template, expected 'endfor' or 'else'"), std::string::npos);
  EXPECT_NE(R("{{ x|nosuch }}").find("No filter named 'nosuch'."), std::string::npos);
  EXPECT_NE(R("{{ x is nosuch }}").find("No test named 'nosuch'."), std::string::npos);
  EXPECT_NE(R("{% break %}").find("'break' outside of a loop"), std::string::npos);
  EXPECT_NE(R("{% foo %}").find("Encountered unknown tag 'foo'."), std::string::npos);
  EXPECT_NE(R("{{ 'abc }}").find("line 1 col 4: unexpected char"), std::string::npos);
  EXPECT_NE(R("{# never closed").find("Missing end of comment tag"), std::string::npos);
  EXPECT_NE(R("{{ (1 }}").find("line 1 col"), std::string::npos);
}

TEST(JinjaErrors, RuntimeErrorsAndRaise) {
  EXPECT_EQ(R("ok\n  {{ raise_exception('bad role') }}"), "ERR: template 't' line 2 col 6: TemplateError: bad role");
  EXPECT_NE(R("{{ 'a' + 1 }}").find("TypeError: can only concatenate str (not \"int\") to str"), std::string::npos);
  EXPECT_NE(R("{{ 1 < 'a' }}").find("'<' not supported between instances of 'int' and 'str'"), std::string::npos);
  EXPECT_NE(R("{{ 7 / 0 }}").find("ZeroDivisionError"), std::string::npos);
  auto r = RenderWith("{{ raise_exception('x') }}", ordered_json::object());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(JinjaGlobals, RangeNamespaceStrftime) {
  EXPECT_EQ(R("{{ range(3)|list }}{{ range(1, 7, 2)|list }}{{ range(3, 0, -1)|list }}"), "[0, 1, 2][1, 3, 5][3, 2, 1]");
  EXPECT_EQ(R("{{ strftime_now('%Y-%m-%d %d %b %Y %B') }}"), "2026-12-01 01 Dec 2026 December");
  EXPECT_EQ(R("{{ dict(a=1) }}{{ namespace({'a': 2}).a }}"), "{'a': 1}2");
}

TEST(JinjaLimits, CapsAreCleanErrors) {
  TemplateLimits lim;
  lim.max_output_bytes = 100;
  auto out = RenderWith("{% for i in range(1000) %}xx{% endfor %}", ordered_json::object(), lim);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  lim = TemplateLimits();
  lim.max_steps = 1000;
  out = RenderWith("{% for i in range(100000) %}{% endfor %}", ordered_json::object(), lim);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  out = RenderWith("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", ordered_json::object());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(out.status().message().find("max_call_depth"), std::string::npos);
  out = RenderWith("{{ 'x' * 1000000000 }}", ordered_json::object());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  out = RenderWith("{{ range(100000000)|list|length }}", ordered_json::object());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  out = RenderWith("{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
                   ordered_json::object());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  out = RenderWith("{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = [ns.l] %}{% endfor %}",
                   ordered_json::object());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  out = RenderWith("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}", ordered_json::object());
  EXPECT_TRUE(out.ok()) << out.status();  // a cycle: printed with "...", freed at the end
  std::string deep(500, '(');
  out = RenderWith("{{ " + deep + "1" + std::string(500, ')') + " }}", ordered_json::object());
  EXPECT_FALSE(out.ok());
  std::string chain = "{{ 1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  out = RenderWith(chain + " }}", ordered_json::object());
  EXPECT_FALSE(out.ok());
  TemplateLimits bad;
  bad.max_steps = 0;
  EXPECT_FALSE(bad.Validate().ok());
  EXPECT_TRUE(TemplateLimits().Validate().ok());
  EXPECT_FALSE(ChatTemplate::Parse("t", "x", bad).ok());
}

TEST(ChatTemplateApi, ConcurrentRendersShareOneTemplate) {
  auto t = ChatTemplate::Parse("t", "{% for m in messages %}{{ m.role }}:{{ m.content|trim }};{% endfor %}");
  ASSERT_TRUE(t.ok());
  const ordered_json vars = {{"messages", {{{"role", "user"}, {"content", " hi "}}}}};
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 200; ++k) good += *t->Render(vars) == "user:hi;";
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(good.load(), 800);
  EXPECT_EQ(*t->RenderJsonText(R"({"messages": [{"role": "a", "content": "b"}]})"), "a:b;");
  EXPECT_FALSE(t->RenderJsonText("not json").ok());
  EXPECT_FALSE(t->Render(ordered_json::array()).ok());
}

}  // namespace
}  // namespace llmserve::chat
