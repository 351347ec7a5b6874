#!/usr/bin/env bash
# Sets up, builds and runs the whole llmserve test suite (ctest).
# Usage: scripts/test.sh [extra cmake args...]
#   LLMSERVE_TEST_ASSETS  shared assets directory (default: ../shared beside the repo)
#   BUILD_DIR             build directory (default: build)
#   LLMSERVE_SANITIZE=1   ASan+UBSan build (default BUILD_DIR then: build-asan)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

sanitize=OFF
build_dir="${BUILD_DIR:-build}"
if [ "${LLMSERVE_SANITIZE:-0}" = "1" ]; then
  sanitize=ON
  build_dir="${BUILD_DIR:-build-asan}"
fi

cmake -S . -B "$build_dir" -G Ninja -DLLMSERVE_SANITIZE="$sanitize" -DLLMSERVE_BUILD_TESTS=ON "$@"
cmake --build "$build_dir" --parallel "$(nproc)"
ctest --test-dir "$build_dir" --output-on-failure --parallel "$(nproc)"
