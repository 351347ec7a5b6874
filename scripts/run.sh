#!/usr/bin/env bash
# Sets up, builds and starts the llmserve gRPC server (and builds llmctl, its client).
# Usage: scripts/run.sh [extra llmserve flags...]      e.g. --port 50052 (--help lists all)
#   MODEL      serve this model (llama2.c .bin, .gguf, or HuggingFace directory)
#   TOKENIZER  its tokenizer (llama2.c: default tok512.bin beside a stories260K model,
#              else tokenizer.bin beside the model)
#   BUILD_DIR  build directory (default build); SKIP_BUILD=1 uses it as it is (no set-up)
# Without MODEL: llama2.c's stories15M from models/ if scripts/get-model.sh has fetched it,
# else the committed models/stories260K.bin (offline; models/README.md has its provenance).
# Stop the server with Ctrl-C (SIGINT) or SIGTERM: it drains in-flight requests first.
set -euo pipefail
cd "$(dirname "$0")/.."

build="${BUILD_DIR:-build}"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  scripts/install-deps.sh
  cmake -S . -B "$build" -G Ninja
  cmake --build "$build" --parallel "$(nproc)" --target llmserve llmctl
fi

args=()
if [ -n "${MODEL:-}" ]; then
  tokenizer="${TOKENIZER:-}"
  if [ -z "$tokenizer" ] && [ -f "$MODEL" ] && [[ "$MODEL" == *.bin ]]; then
    beside="$(dirname "$MODEL")"
    if [[ "$(basename "$MODEL")" == stories260K* ]] && [ -f "$beside/tok512.bin" ]; then
      tokenizer="$beside/tok512.bin"
    elif [ -f "$beside/tokenizer.bin" ]; then
      tokenizer="$beside/tokenizer.bin"
    fi
  fi
  args+=(--model "$MODEL")
  [ -n "$tokenizer" ] && args+=(--tokenizer "$tokenizer")
elif [ -f models/stories15M.bin ] && [ -f models/tokenizer.bin ]; then
  args+=(--model models/stories15M.bin --tokenizer models/tokenizer.bin)
else
  echo "run.sh: serving models/stories260K.bin (scripts/get-model.sh fetches the larger stories15M)" >&2
  args+=(--model models/stories260K.bin --tokenizer models/tok512.bin)
fi

exec "$build/server/llmserve" "${args[@]}" "$@"
