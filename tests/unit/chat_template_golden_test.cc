// Golden test: every real chat template in the shared assets renders every conversation
// byte for byte as Python jinja2 (transformers' setup) does; where the reference raised,
// we fail too (with the raised message for raise_exception). Runs the shared cases and the
// repo's extra cases (tests/golden/chat_templates/, see tests/golden/README.md).
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/chat/chat_template.h"
#include "nlohmann/json.hpp"
#include "tests/util/test_assets.h"

namespace llmserve::chat {
namespace {

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

RenderOptions FixedClock() {
  RenderOptions o;
  // 2026-12-01 12:00:00, as the reference renderer fixes strftime_now.
  o.now = std::chrono::system_clock::time_point(std::chrono::seconds(1796126400));
  return o;
}

struct Tally {
  int cases = 0;
  int templates = 0;
};

// Renders every case of `cases_path` with every template that has an expected file in
// `expected_dir`, comparing with the reference's lines.
void RunGolden(const std::string& templates_dir, const std::string& cases_path,
               const std::string& expected_dir, Tally* tally) {
  const auto cases = nlohmann::ordered_json::parse(ReadFile(cases_path));
  std::vector<std::filesystem::path> expected_files;
  for (const auto& e : std::filesystem::directory_iterator(expected_dir)) {
    if (e.path().extension() == ".jsonl") expected_files.push_back(e.path());
  }
  std::sort(expected_files.begin(), expected_files.end());
  ASSERT_FALSE(expected_files.empty()) << expected_dir;
  for (const auto& exp_path : expected_files) {
    const std::string name = exp_path.stem().string();
    SCOPED_TRACE(name);
    const std::string source = ReadFile(std::filesystem::path(templates_dir) / (name + ".jinja"));
    ASSERT_FALSE(source.empty()) << "missing template " << name;
    auto tpl = ChatTemplate::Parse(name, source);
    ASSERT_TRUE(tpl.ok()) << tpl.status();
    ++tally->templates;
    std::ifstream lines(exp_path);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.empty()) continue;
      const auto want = nlohmann::json::parse(line);
      const int i = want.at("case").get<int>();
      ASSERT_GE(i, 0) << "reference could not compile " << name << ": " << line;
      ASSERT_LT(static_cast<size_t>(i), cases.size());
      SCOPED_TRACE("case " + std::to_string(i));
      auto got = tpl->Render(cases[i], FixedClock());
      ++tally->cases;
      if (want.contains("output")) {
        ASSERT_TRUE(got.ok()) << got.status();
        EXPECT_EQ(*got, want["output"].get<std::string>());
      } else {
        const std::string err = want.at("error").get<std::string>();
        ASSERT_FALSE(got.ok()) << "reference raised " << err << " but we rendered:\n" << *got;
        const std::string prefix = "TemplateError: ";
        if (err.rfind(prefix, 0) == 0) {
          EXPECT_NE(std::string(got.status().message()).find(err.substr(prefix.size())), std::string::npos)
              << got.status() << " vs " << err;
        }
      }
    }
  }
}

TEST(ChatTemplateGolden, SharedCases) {
  LLMSERVE_REQUIRE_ASSET(dir, "golden/chat_templates");
  Tally tally;
  RunGolden(dir + "/templates", dir + "/cases.json", dir + "/expected", &tally);
  EXPECT_EQ(tally.templates, 24);
  std::cout << "shared golden: " << tally.templates << " templates, " << tally.cases << " renders\n";
}

TEST(ChatTemplateGolden, RepoExtraCases) {
  LLMSERVE_REQUIRE_ASSET(dir, "golden/chat_templates/templates");
  const std::string repo = std::string(LLMSERVE_SOURCE_DIR) + "/tests/golden/chat_templates";
  Tally tally;
  RunGolden(dir, repo + "/cases_extra.json", repo + "/expected_extra", &tally);
  std::cout << "extra golden: " << tally.templates << " templates, " << tally.cases << " renders\n";
}

}  // namespace
}  // namespace llmserve::chat
