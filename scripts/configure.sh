#!/usr/bin/env bash
# Configures a build directory of one flavour. Every script that builds goes through here,
# so each flavour's settings are written once:
#   release  gcc, CMake's Release (-O3): the whole suite and the benchmarks (build/)
#   asan     clang, ASan+UBSan, coverage-instrumented for libFuzzer: the libFuzzer targets
#            and the sanitizer suites (tests/CMakeLists.txt), from one set of objects (build-asan/)
#   tsan     gcc, ThreadSanitizer: the engine's thread-facing tests (build-tsan/)
# Usage: scripts/configure.sh FLAVOUR BUILD_DIR [extra cmake args...]
#   LLMSERVE_CCACHE=0  no ccache (by default it is used when installed: a rebuild on the
#                      same machine is cheap, and scripts/container-test.sh lends the cache
#                      to the image's build)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$#" -lt 2 ]; then
  echo "usage: scripts/configure.sh release|asan|tsan BUILD_DIR [extra cmake args...]" >&2
  exit 2
fi
flavour="$1"
build_dir="$2"
shift 2

args=(-G Ninja)
if [ "${LLMSERVE_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null; then
  # The launcher carries ccache's settings into every later build of this directory:
  # relative paths (the same objects from any checkout, and the image's build) and no
  # dependence on LANG (the image build has none).
  args+=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$PWD;CCACHE_SLOPPINESS=locale;ccache")
fi
# mold links the ~100 test executables in a fraction of ld's time.
if command -v mold >/dev/null; then
  args+=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=mold -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=mold)
fi

case "$flavour" in
  release)
    args+=(-DCMAKE_BUILD_TYPE=Release -DLLMSERVE_BUILD_TESTS=ON)
    ;;
  asan)
    # -O1 with line tables: symbolized reports, and half the compile time of -O2 -g.
    args+=(-DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG"
           -DLLMSERVE_FUZZ=ON -DLLMSERVE_BUILD_TESTS=ON -DLLMSERVE_BUILD_BENCH=OFF)
    ;;
  tsan)
    # -O1 with minimal debug info: line numbers in reports; the tests' model is a fake.
    args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DLLMSERVE_TSAN=ON -DLLMSERVE_BUILD_TESTS=ON -DLLMSERVE_BUILD_BENCH=OFF)
    ;;
  *)
    echo "configure.sh: unknown flavour '$flavour' (release, asan or tsan)" >&2
    exit 2
    ;;
esac

cmake -S . -B "$build_dir" "${args[@]}" "$@"
