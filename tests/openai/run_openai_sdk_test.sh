#!/usr/bin/env bash
# The OpenAI-compatible HTTP API driven by the official `openai` npm client (ctest
# openai_sdk, label integration): installs the pinned client with `npm ci` (reused while
# package-lock.json is unchanged), starts three llmserve processes on stories260K with a
# ChatML template (the main one with an API key; one with a one-request waiting queue; one
# to drain), tokenizes the test prompt with llmctl, and runs openai_sdk.test.mjs with
# `node --test`.
# Usage: tests/openai/run_openai_sdk_test.sh LLMSERVE LLMCTL SOURCE_DIR
# Exit 77 (skipped) when stories260K, node/npm or the npm registry is missing, except
# under CI=true, where that fails.
set -euo pipefail
llmserve="$1" llmctl="$2" src="$3"
here="$src/tests/openai"

skip() {
  if [ "${CI:-}" = "true" ]; then echo "FAIL (required under CI): $*"; exit 1; fi
  echo "SKIP: $*"
  exit 77
}

assets="${LLMSERVE_TEST_ASSETS:-../shared}"
case "$assets" in /*) ;; *) assets="$src/$assets" ;; esac
model="$assets/models/llama2c/stories260K.bin"
tok="$assets/models/llama2c/tok512.bin"
[ -f "$model" ] && [ -f "$tok" ] || skip "stories260K not found under LLMSERVE_TEST_ASSETS=$assets"
command -v node >/dev/null && command -v npm >/dev/null || skip "node and npm are needed (scripts/install-deps.sh)"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 18 ] || skip "node $node_major is too old for the openai client (18 or later)"

# The pinned client, reinstalled only when the lock file changed.
if [ ! -f "$here/node_modules/.package-lock.json" ] || [ "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ]; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error) || skip "npm ci failed (is the npm registry reachable?)"
fi

work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/chatml.jinja" <<'TEMPLATE'
{%- for message in messages -%}
{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\n' }}{%- endif -%}
TEMPLATE
key="sdk-test-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$key" > "$work/keys.txt"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start NAME ARGS...: llmserve on free ports; sets ${NAME}_http, ${NAME}_grpc, ${NAME}_pid.
start() {
  local name="$1"; shift
  local grpc http
  grpc="$(free_port)" http="$(free_port)"
  OMP_WAIT_POLICY=passive "$llmserve" --host 127.0.0.1 --port "$grpc" --http-port "$http" --metrics-port 0 \
    --model "$model" --tokenizer "$tok" --weight-dtype f32 --threads 1 --chat-template "$work/chatml.jinja" "$@" \
    > "$work/$name.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  printf -v "${name}_http" '%s' "$http"
  printf -v "${name}_grpc" '%s' "$grpc"
  printf -v "${name}_pid" '%s' "$pid"
}
# wait_up NAME: until GET /health is 200 (60 s).
wait_up() {
  local port_var="${1}_http" pid_var="${1}_pid"
  for _ in $(seq 600); do
    if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
         "http://127.0.0.1:${!port_var}/health" 2>/dev/null; then return 0; fi
    kill -0 "${!pid_var}" 2>/dev/null || { cat "$work/$1.log"; echo "FAIL: llmserve ($1) exited"; exit 1; }
    sleep 0.1
  done
  cat "$work/$1.log"; echo "FAIL: llmserve ($1) did not become healthy"; exit 1
}

start main --api-key-file "$work/keys.txt"
start small --max-running 1 --max-waiting 1
start drain --drain-delay 3
for s in main small drain; do wait_up "$s"; done

prompt='Once upon a time, there was a little'
ids="$("$llmctl" --addr "127.0.0.1:$main_grpc" --api-key-file "$work/keys.txt" tokenize "$prompt" | tr ' ' ',')"

status=0
LLMSERVE_URL="http://127.0.0.1:$main_http/v1" LLMSERVE_API_KEY="$key" LLMSERVE_MODEL=stories260K \
LLMSERVE_SMALL_URL="http://127.0.0.1:$small_http/v1" \
LLMSERVE_DRAIN_URL="http://127.0.0.1:$drain_http/v1" LLMSERVE_DRAIN_PID="$drain_pid" \
LLMSERVE_PROMPT_IDS="[$ids]" \
  node --test --test-reporter=spec "$here/openai_sdk.test.mjs" || status=$?

# The drained server exits 0 by itself; the others must still be alive (nothing crashed them).
drain_exit=0
for _ in $(seq 100); do kill -0 "$drain_pid" 2>/dev/null || break; sleep 0.1; done
wait "$drain_pid" || drain_exit=$?
for s in main small; do
  pid_var="${s}_pid"
  kill -0 "${!pid_var}" 2>/dev/null || { cat "$work/$s.log"; echo "FAIL: llmserve ($s) died during the tests"; status=1; }
done
if [ "$drain_exit" != 0 ]; then cat "$work/drain.log"; echo "FAIL: the drained server exited $drain_exit"; status=1; fi
if [ "$status" != 0 ]; then tail -n 40 "$work/main.log"; fi
exit "$status"
