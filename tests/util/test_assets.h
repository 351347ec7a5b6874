// Access to the shared third-party test assets (../shared, via LLMSERVE_TEST_ASSETS).
//
// When the assets cannot be found a test is skipped with a message, except under CI
// (the CI environment variable is set), where it fails: CI must never silently skip.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "gtest/gtest.h"

namespace llmserve::testing {

// Root of the asset tree, or "" if it is not a directory. LLMSERVE_TEST_ASSETS names it;
// a relative value is taken relative to the source tree (so ".ci/run"'s "../shared"
// works from any ctest working directory); unset means "<source>/../shared".
inline std::string AssetsRoot() {
  const char* env = std::getenv("LLMSERVE_TEST_ASSETS");
  std::filesystem::path root = (env != nullptr && *env != '\0') ? env : "../shared";
  if (root.is_relative()) root = std::filesystem::path(LLMSERVE_SOURCE_DIR) / root;
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec)) return "";
  return root.lexically_normal().string();
}

// True when running under CI.
inline bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && *ci != '\0' && std::string(ci) != "0" && std::string(ci) != "false";
}

// Path of `relative` under the asset root, or "" if it does not exist.
inline std::string AssetPath(const std::string& relative) {
  const std::string root = AssetsRoot();
  if (root.empty()) return "";
  std::filesystem::path p = std::filesystem::path(root) / relative;
  std::error_code ec;
  return std::filesystem::exists(p, ec) ? p.string() : "";
}

// A scratch directory for one test, removed by the caller or left in /tmp.
inline std::string ScratchDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("llmserve_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace llmserve::testing

// Declares `std::string var` = path of the asset `relative`; if it is missing, skips
// the test (outside CI) or fails it (in CI), saying which file and why.
#define LLMSERVE_REQUIRE_ASSET(var, relative)                                                      \
  const std::string var = ::llmserve::testing::AssetPath(relative);                                \
  if (var.empty()) {                                                                               \
    if (::llmserve::testing::InCi()) {                                                             \
      FAIL() << "test asset " << (relative) << " not found under LLMSERVE_TEST_ASSETS='"           \
             << (std::getenv("LLMSERVE_TEST_ASSETS") ? std::getenv("LLMSERVE_TEST_ASSETS") : "")  \
             << "' (required under CI)";                                                          \
    }                                                                                              \
    GTEST_SKIP() << "test asset " << (relative)                                                    \
                 << " not found: set LLMSERVE_TEST_ASSETS to the shared assets directory";        \
  }
