#!/usr/bin/env bash
# The first command of README.md, offline: `scripts/run.sh` with no MODEL serves the committed
# models/stories260K.bin, and `llmctl generate "Once upon a time"` (greedy) prints the same
# continuation as llama2.c's run.c (golden/stories260K_greedy.txt, case 2, with f32 weights).
# Also checks the committed files' sha256 against models/README.md's provenance.
#
#   run_sh_default_model.sh BUILD_DIR SOURCE_DIR
# The golden file is in $LLMSERVE_TEST_ASSETS (relative: to SOURCE_DIR; unset: SOURCE_DIR/../shared).
# Exit 0 pass, 1 fail, 77 skip (golden file missing outside CI, or a fetched stories15M is
# in models/, which run.sh then serves instead).
set -euo pipefail
build=$1; source_dir=$2
assets=${LLMSERVE_TEST_ASSETS:-../shared}
case "$assets" in /*) ;; *) assets=$source_dir/$assets ;; esac
skip() { if [ -n "${CI:-}" ] && [ "${CI}" != 0 ] && [ "${CI}" != false ]; then echo "FAIL (CI): $1"; exit 1; fi; echo "SKIP: $1"; exit 77; }
golden=$assets/golden/stories260K_greedy.txt
[ -f "$golden" ] || skip "golden file $golden not found"
[ -f "$source_dir/models/stories15M.bin" ] && skip "models/stories15M.bin was fetched: run.sh serves it instead of stories260K"

(cd "$source_dir/models" && sha256sum -c --quiet) <<'SUMS' || { echo "FAIL: committed model files do not match their recorded sha256"; exit 1; }
b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696  stories260K.bin
037cb335abb25d1fa9e8ecae30ed2a3a8ace9302862ebcdc05d51a6bbb10c312  tok512.bin
SUMS

work=$(mktemp -d); server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# run.c's greedy case for this prompt: its stdout is the prompt, the continuation and "\n";
# it ran 256 positions (BOS + 4 prompt tokens + 252 generated).
/usr/bin/python3 - "$golden" "$work/expected" <<'PY'
import sys
text = open(sys.argv[1], encoding="utf-8").read()
case = text.split("=== CASE 2\n", 1)[1]
assert 'prompt: "Once upon a time"' in case and "args: -t 0.0 -p 0.9 -s 0 -n 256" in case, "case 2 is not the greedy run"
stdout = case.split("--- BEGIN stdout\n", 1)[1].split("--- END stdout", 1)[0]
prompt = "Once upon a time"
assert stdout.startswith(prompt) and stdout.endswith("\n")
open(sys.argv[2], "w", encoding="utf-8").write(stdout[len(prompt):-1])
PY

port=$((20000 + RANDOM % 20000))
BUILD_DIR="$build" SKIP_BUILD=1 "$source_dir/scripts/run.sh" --port "$port" --host 127.0.0.1 --metrics-port 0 \
  --threads 1 --weight-dtype f32 >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
  "$build/tools/llmctl" --addr "127.0.0.1:$port" health >/dev/null 2>&1 && break
  sleep 0.1
done
grep -q "model stories260K" "$work/server.log" || { cat "$work/server.log"; echo "FAIL: run.sh did not serve stories260K"; exit 1; }
"$build/tools/llmctl" --addr "127.0.0.1:$port" --timeout 30 generate --temperature 0 --max-tokens 252 \
  "Once upon a time" >"$work/actual" 2>"$work/stderr" || { cat "$work/stderr"; echo "FAIL: llmctl generate"; exit 1; }
if ! cmp -s "$work/expected" "$work/actual"; then
  echo "FAIL: the continuation differs from run.c's"; diff <(fold -w 100 "$work/expected") <(fold -w 100 "$work/actual") || true
  exit 1
fi
echo "PASS: run.sh serves stories260K; greedy continuation equals run.c's ($(wc -c <"$work/actual") bytes)"
