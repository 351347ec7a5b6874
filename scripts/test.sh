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

# ccache (in install-deps.sh) makes a rebuild on the same machine cheap, and
# scripts/container-test.sh lends this cache to the image's build. LLMSERVE_CCACHE=0: off.
launcher=()
if [ "${LLMSERVE_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$PWD"  # relative paths: the same objects from any checkout
  export CCACHE_SLOPPINESS=locale  # LANG may differ (the image build has none)
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build_dir" -G Ninja -DLLMSERVE_SANITIZE="$sanitize" -DLLMSERVE_BUILD_TESTS=ON "${launcher[@]}" "$@"
cmake --build "$build_dir" --parallel "$(nproc)"
ctest --test-dir "$build_dir" --output-on-failure --parallel "$(nproc)"
