#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang with ASan+UBSan) and runs each for a
# bounded time over its committed corpus (tests/fuzz/corpus/<name>/) plus seeds made from
# the shared assets. Fails if any target crashes, leaks, trips a sanitizer, times out on
# one input or runs out of memory; the input that did it is left in BUILD_DIR/artifacts/.
# Usage: scripts/fuzz-test.sh [target ...]     (default: every target)
#   FUZZ_SECONDS          time per target (default 60)
#   FUZZ_JOBS             targets run at once (default: nproc)
#   BUILD_DIR             build directory (default build-asan, shared with the sanitizer suites)
#   LLMSERVE_TEST_ASSETS  shared assets (default ../shared); without them only the
#                         committed corpus seeds the run
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir="${BUILD_DIR:-build-asan}"
seconds="${FUZZ_SECONDS:-60}"
jobs="${FUZZ_JOBS:-$(nproc)}"
assets="${LLMSERVE_TEST_ASSETS:-../shared}"
all=(gguf hf_model llama2c llama2c_tokenizer tokenizer_json chat_template request openai_request http_request gbnf regex_parser json_schema)
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=("${all[@]}")

scripts/install-deps.sh
# The asan flavour: the objects LLMSERVE_SANITIZE=1 scripts/test.sh built are reused.
scripts/configure.sh asan "$build_dir"
cmake --build "$build_dir" --parallel "$(nproc)" --target "${targets[@]/%/_fuzzer}"

# Seeds from the shared assets, per target (large files are cut to -max_len by libFuzzer).
seeds="$build_dir/seeds"
rm -rf "$seeds"
for t in "${all[@]}"; do mkdir -p "$seeds/$t"; done
if [ -d "$assets/models" ]; then
  cp "$assets"/models/llama2c/*.bin "$seeds/llama2c/" 2>/dev/null || true
  rm -f "$seeds"/llama2c/tok*.bin "$seeds"/llama2c/*_tok512.bin "$seeds/llama2c/tokenizer.bin"
  cp "$assets"/models/llama2c/tok512.bin "$assets"/models/llama2c/aidreams260K_tok512.bin "$seeds/llama2c_tokenizer/"
  cp "$assets"/models/gguf/llama-2-tiny-random.gguf "$assets"/models/tokenizers/gguf/ggml-vocab-llama-spm.gguf \
     "$assets"/models/tokenizers/gguf/ggml-vocab-gpt-2.gguf "$seeds/gguf/"
  n=0
  for f in "$assets"/models/tokenizers/hf/*/tokenizer.json; do
    [ -f "$f" ] && cp "$f" "$seeds/tokenizer_json/shared-$((n += 1)).json"
  done
  # Each real template with one of the golden conversations as its variables.
  if [ -d "$assets/golden/chat_templates" ]; then
    /usr/bin/python3 - "$assets/golden/chat_templates" "$seeds/chat_template" <<'EOF'
import json, os, sys
src, out = sys.argv[1], sys.argv[2]
cases = json.load(open(os.path.join(src, "cases.json")))
for i, name in enumerate(sorted(os.listdir(os.path.join(src, "templates")))):
    with open(os.path.join(src, "templates", name), "rb") as f:
        template = f.read()
    with open(os.path.join(out, name), "wb") as f:
        f.write(template + b"\0" + json.dumps(cases[i % len(cases)], ensure_ascii=False).encode())
EOF
  fi
elif [ "${CI:-}" = "true" ]; then
  echo "fuzz-test: shared assets not found at $assets (LLMSERVE_TEST_ASSETS)" >&2
  exit 1
else
  echo "fuzz-test: no shared assets at $assets: seeding from the committed corpus only"
fi

# Per-target input size bound: model files need room for a header, metadata and a few
# tensors; requests and templates are small.
max_len() {
  case $1 in
    gguf | hf_model | llama2c) echo 65536 ;;
    tokenizer_json | chat_template) echo 32768 ;;
    *) echo 8192 ;;
  esac
}

run_one() {
  local t=$1 work="$build_dir/corpus/$1" log="$build_dir/logs/$1.log"
  mkdir -p "$work" "$build_dir/artifacts" "$build_dir/logs"
  # New inputs go to the first directory (the build's, never the repository's).
  if ASAN_OPTIONS=detect_leaks=1 "$build_dir/tests/fuzz/${t}_fuzzer" -max_total_time="$seconds" \
       -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$build_dir/artifacts/$t-" "$work" "tests/fuzz/corpus/$t" "$seeds/$t" >"$log" 2>&1; then
    echo "fuzz $t: ok, $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs in ${seconds}s"
  else
    echo "fuzz $t: FAILED (log $log)"
    tail -40 "$log"
    return 1
  fi
}

failed=0
pids=()
names=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  names+=("$t")
  if [ "${#pids[@]}" -ge "$jobs" ]; then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
exit "$failed"
