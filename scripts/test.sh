#!/usr/bin/env bash
# Sets up, builds and runs the whole llmserve test suite (ctest).
# Usage: scripts/test.sh [extra cmake args...]
#   LLMSERVE_TEST_ASSETS  shared assets directory (default: ../shared beside the repo)
#   BUILD_DIR             build directory (default: build)
#   LLMSERVE_SANITIZE=1   the ASan+UBSan build instead (scripts/configure.sh's asan flavour,
#                         default BUILD_DIR then: build-asan): the sanitizer suites, and the
#                         libFuzzer targets that scripts/fuzz-test.sh runs
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

flavour=release
build_dir="${BUILD_DIR:-build}"
if [ "${LLMSERVE_SANITIZE:-0}" = "1" ]; then
  flavour=asan
  build_dir="${BUILD_DIR:-build-asan}"
fi

scripts/configure.sh "$flavour" "$build_dir" "$@"
cmake --build "$build_dir" --parallel "$(nproc)"
ctest --test-dir "$build_dir" --output-on-failure --parallel "$(nproc)"
