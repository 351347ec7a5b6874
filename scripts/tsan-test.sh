#!/usr/bin/env bash
# Builds the engine's thread-facing tests with ThreadSanitizer and runs them.
# (The real-model tests are left out: libgomp, which runs the kernels, is not
# instrumented, so TSan cannot judge OpenMP code. The engine tests here use a fake
# model without OpenMP; so does the HTTP API's in-process test.)
# Usage: scripts/tsan-test.sh        BUILD_DIR defaults to build-tsan
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir="${BUILD_DIR:-build-tsan}"
tests=(block_pool_test admission_test scheduler_test scheduler_finish_test scheduler_preemption_test scheduler_random_test
       request_channel_test engine_test engine_lifecycle_test engine_stress_test engine_policy_test
       stream_pump_test http_server_test openai_server_test openai_service_test engine_constraint_test)

scripts/install-deps.sh
scripts/configure.sh tsan "$build_dir"
cmake --build "$build_dir" --parallel "$(nproc)" --target "${tests[@]}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1}"

for t in "${tests[@]}"; do
  echo "== $t (ThreadSanitizer)"
  "$build_dir/tests/$t" --gtest_brief=1
done
