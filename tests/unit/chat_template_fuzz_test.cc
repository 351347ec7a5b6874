// Robustness: seeded random mutations of the real chat templates, and random (often
// malformed) message lists, never crash or hang the renderer. Every render finishes within
// the step and output caps and returns either text no larger than the output cap or a
// clean INVALID_ARGUMENT / RESOURCE_EXHAUSTED status.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/chat/chat_template.h"
#include "nlohmann/json.hpp"
#include "tests/util/test_assets.h"

namespace llmserve::chat {
namespace {

using nlohmann::ordered_json;

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TemplateLimits FuzzLimits() {
  TemplateLimits l;
  l.max_steps = 200'000;
  l.max_output_bytes = 64 << 10;
  l.max_string_bytes = 256 << 10;
  l.max_alloc_bytes = 16 << 20;
  l.max_collection_size = 1 << 14;
  l.max_call_depth = 16;
  return l;
}

class Fuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = ::llmserve::testing::AssetPath("golden/chat_templates");
    if (dir.empty()) GTEST_SKIP() << "shared chat templates not found (LLMSERVE_TEST_ASSETS)";
    for (const auto& e : std::filesystem::directory_iterator(dir + "/templates")) {
      sources_.push_back(ReadFile(e.path()));
    }
    std::sort(sources_.begin(), sources_.end());
    cases_ = ordered_json::parse(ReadFile(dir + "/cases.json"));
  }

  // Checks one render's outcome against the caps.
  void Check(const ChatTemplate& t, const ordered_json& vars) {
    const auto start = std::chrono::steady_clock::now();
    auto r = t.Render(vars);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(secs, 5.0) << "render took too long";
    if (r.ok()) {
      EXPECT_LE(r->size(), t.limits().max_output_bytes);
      ++ok_;
    } else {
      const auto code = r.status().code();
      EXPECT_TRUE(code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kResourceExhausted)
          << r.status();
      EXPECT_NE(r.status().message().find("template '"), std::string::npos) << r.status();
      ++failed_;
    }
  }

  std::vector<std::string> sources_;
  ordered_json cases_;
  int ok_ = 0, failed_ = 0;
};

const char* const kTokens[] = {
    "{{", "}}", "{%", "%}", "{%-", "-%}", "{{-", "-}}", "{#", "#}", "for", "endfor", "if", "endif", "else",
    "elif", "set", "macro", "endmacro", "(", ")", "[", "]", "{", "}", "|", "~", "'", "\"", ",", ".", ":",
    "loop", "ns", "messages", "range(99)", "*", "**", "+", "-", "/", "//", "%", " ", "\n", "in", "not",
    "is", "defined", "none", "tojson", "|trim", "|length", "raise_exception('x')", "[::-1]", "0", "1e9",
    "caller()", "namespace(a=1)", "{% for x in messages %}", "{% endfor %}", "{% raw %}", "é", "\\",
};

std::string Mutate(std::string s, std::mt19937& rng) {
  std::uniform_int_distribution<int> nmut(1, 4);
  const int n = rng() % 2 == 0 ? 1 : nmut(rng);  // half get one mutation, so more still parse
  for (int k = 0; k < n; ++k) {
    if (s.empty()) s.assign(1, 'x');
    std::uniform_int_distribution<size_t> pos(0, s.size() - 1);
    const size_t p = pos(rng);
    switch (rng() % 5) {
      case 0: s.erase(p, 1 + rng() % 8); break;                                    // delete chars
      case 1: s.insert(p, kTokens[rng() % std::size(kTokens)]); break;            // insert a token
      case 2: {                                                                    // swap two chunks
        const size_t q = pos(rng), len = 1 + rng() % 16;
        if (p + len < s.size() && q + len < s.size()) {
          std::string a = s.substr(p, len);
          s.replace(p, len, s.substr(q, len));
          s.replace(q, len, a);
        }
        break;
      }
      case 3: {                                                                    // duplicate a chunk
        const size_t len = 1 + rng() % 200;
        s.insert(p, s.substr(p, len));
        break;
      }
      default: s[p] = static_cast<char>(32 + rng() % 95); break;                   // replace a char
    }
  }
  return s;
}

std::string RandomText(std::mt19937& rng) {
  static const char* const kParts[] = {"hello", " ", "\n", "\t", "{{ x }}", "{%", "%}", "}}", "{#", "Привет",
                                       "世界", "🎉", "\"", "'", "\\", "</think>", "<think>", "/no_think",
                                       "<tool_response>", "\u2028", "\x01", ""};
  std::string out;
  const int n = static_cast<int>(rng() % 8);
  for (int i = 0; i < n; ++i) out += kParts[rng() % std::size(kParts)];
  return out;
}

ordered_json RandomValue(std::mt19937& rng, int depth) {
  switch (rng() % (depth > 2 ? 5 : 8)) {
    case 0: return nullptr;
    case 1: return static_cast<int>(rng() % 100) - 50;
    case 2: return (rng() % 2) == 0;
    case 3: return 1.5;
    case 4: return RandomText(rng);
    case 5: {
      ordered_json a = ordered_json::array();
      for (int i = 0, n = rng() % 4; i < n; ++i) a.push_back(RandomValue(rng, depth + 1));
      return a;
    }
    default: {
      ordered_json o = ordered_json::object();
      static const char* const kKeys[] = {"type", "text", "name", "function", "arguments", "id", "content",
                                          "properties", "required", "description", "items", "enum"};
      for (int i = 0, n = rng() % 4; i < n; ++i) o[kKeys[rng() % std::size(kKeys)]] = RandomValue(rng, depth + 1);
      return o;
    }
  }
}

ordered_json RandomConversation(std::mt19937& rng) {
  static const char* const kRoles[] = {"user", "assistant", "system", "tool", "ipython", "developer", "👾", ""};
  ordered_json msgs = ordered_json::array();
  for (int i = 0, n = rng() % 6; i < n; ++i) {
    ordered_json m = ordered_json::object();
    if (rng() % 10 != 0) m["role"] = kRoles[rng() % std::size(kRoles)];
    switch (rng() % 6) {
      case 0: break;  // no content
      case 1: m["content"] = nullptr; break;
      case 2: m["content"] = RandomValue(rng, 1); break;
      case 3: m["content"] = ordered_json::array({{{"type", "text"}, {"text", RandomText(rng)}}}); break;
      default: m["content"] = RandomText(rng);
    }
    if (rng() % 4 == 0) {
      ordered_json call = {{"id", "abcdefghi"}, {"type", "function"},
                           {"function", {{"name", RandomText(rng)}, {"arguments", RandomValue(rng, 1)}}}};
      m["tool_calls"] = rng() % 5 == 0 ? RandomValue(rng, 1) : ordered_json::array({call});
    }
    if (rng() % 6 == 0) m["reasoning_content"] = RandomText(rng);
    msgs.push_back(m);
  }
  ordered_json vars = {{"messages", msgs}, {"add_generation_prompt", rng() % 2 == 0},
                       {"bos_token", "<s>"}, {"eos_token", "</s>"}};
  if (rng() % 3 == 0) vars["tools"] = rng() % 2 ? RandomValue(rng, 0) : ordered_json::array({RandomValue(rng, 1)});
  if (rng() % 4 == 0) vars["enable_thinking"] = RandomValue(rng, 2);
  return vars;
}

TEST_F(Fuzz, MutatedTemplatesNeverCrashOrHang) {
  std::mt19937 rng(20261201);
  int parsed = 0;
  for (int i = 0; i < 1000; ++i) {
    const std::string src = Mutate(sources_[i % sources_.size()], rng);
    auto t = ChatTemplate::Parse("fuzz" + std::to_string(i), src, FuzzLimits());
    if (!t.ok()) {
      EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << t.status();
      continue;
    }
    ++parsed;
    Check(*t, cases_[rng() % cases_.size()]);
  }
  std::cout << "mutated templates: " << parsed << " parsed, renders ok " << ok_ << ", failed cleanly " << failed_ << "\n";
}

TEST_F(Fuzz, RandomConversationsNeverCrashOrHang) {
  std::mt19937 rng(7);
  std::vector<ChatTemplate> templates;
  for (size_t i = 0; i < sources_.size(); ++i) {
    auto t = ChatTemplate::Parse("real" + std::to_string(i), sources_[i], FuzzLimits());
    ASSERT_TRUE(t.ok()) << t.status();
    templates.push_back(std::move(*t));
  }
  for (int i = 0; i < 1000; ++i) Check(templates[i % templates.size()], RandomConversation(rng));
  std::cout << "random conversations: renders ok " << ok_ << ", failed cleanly " << failed_ << "\n";
}

TEST_F(Fuzz, TightCapsAreHonoured) {
  std::mt19937 rng(99);
  TemplateLimits tight = FuzzLimits();
  tight.max_output_bytes = 300;
  tight.max_steps = 2000;
  for (size_t i = 0; i < sources_.size(); ++i) {
    auto t = ChatTemplate::Parse("tight" + std::to_string(i), sources_[i], tight);
    ASSERT_TRUE(t.ok()) << t.status();
    for (const auto& c : cases_) Check(*t, c);
    Check(*t, RandomConversation(rng));
  }
}

}  // namespace
}  // namespace llmserve::chat
