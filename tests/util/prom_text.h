// Helpers for tests of Prometheus metrics: parse the text exposition format into
// samples, look samples up by name and labels, and run `promtool check metrics`.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/util/subprocess.h"
#include "tests/util/test_assets.h"

namespace llmserve::testing {

// One sample line: name{labels} value.
struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Every sample of `text` (comments skipped); a malformed line gives a sample named "".
inline std::vector<PromSample> ParsePromText(const std::string& text) {
  std::vector<PromSample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    PromSample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const size_t eq = line.find('=', i);
        if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') return {PromSample{}};
        std::string key = line.substr(i, eq - i), value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) ++j;
          value += line[j];
        }
        s.labels[key] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ++i;
    }
    try {
      s.value = std::stod(line.substr(i));
    } catch (...) {
      s.name.clear();
    }
    out.push_back(std::move(s));
  }
  return out;
}

// The value of the one sample named `name` whose labels include `labels`; nullopt if
// none (or several) match.
inline std::optional<double> FindSample(const std::vector<PromSample>& samples, const std::string& name,
                                        const std::map<std::string, std::string>& labels = {}) {
  std::optional<double> found;
  int matches = 0;
  for (const PromSample& s : samples) {
    if (s.name != name) continue;
    bool all = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      all = all && it != s.labels.end() && it->second == v;
    }
    if (!all) continue;
    ++matches;
    found = s.value;
  }
  return matches == 1 ? found : std::nullopt;
}

// promtool's path ("" if not installed).
inline std::string PromtoolPath() {
  for (const char* p : {"/usr/bin/promtool", "/usr/local/bin/promtool"}) {
    std::error_code ec;
    if (std::filesystem::exists(p, ec)) return p;
  }
  return "";
}

// Runs `promtool check metrics` on `text`: its exit code and output.
inline ProcessResult PromtoolCheckMetrics(const std::string& promtool, const std::string& text) {
  Subprocess p({promtool, "check", "metrics"}, text);
  return p.Wait();
}

// promtool's findings in `r`, one per output line, plus a non-zero exit code: empty means
// the exposition passed `promtool check metrics` cleanly.
inline std::vector<std::string> UnexpectedPromtoolFindings(const ProcessResult& r, const std::string& /*prefix*/) {
  std::vector<std::string> out;
  std::istringstream in(r.out + r.err);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(line);
  }
  if (r.exit_code != 0) out.push_back("exit code " + std::to_string(r.exit_code));
  return out;
}

}  // namespace llmserve::testing

// Declares `std::string var` = promtool's path; skips the test without it, except under CI
// (Debian package `prometheus`; scripts/install-deps.sh installs it).
#define LLMSERVE_REQUIRE_PROMTOOL(var)                                                        \
  const std::string var = ::llmserve::testing::PromtoolPath();                                \
  if (var.empty()) {                                                                          \
    if (::llmserve::testing::InCi()) FAIL() << "promtool not found (required under CI)";      \
    GTEST_SKIP() << "promtool not found: apt-get install prometheus (scripts/install-deps.sh)"; \
  }
