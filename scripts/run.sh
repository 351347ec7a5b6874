#!/usr/bin/env bash
# Sets up, builds and starts the llmserve gRPC server (and builds llmctl, its client).
# Usage: scripts/run.sh [extra llmserve flags...]      e.g. --port 50052 (--help lists all)
#   MODEL      serve this model (llama2.c .bin, .gguf, or HuggingFace directory)
#   TOKENIZER  its tokenizer (llama2.c: default tok512.bin beside a stories260K model,
#              else tokenizer.bin beside the model)
# Without MODEL: scripts/get-model.sh fetches llama2.c stories15M into models/ (once,
# verified by sha256) and the server runs it; where it cannot be downloaded (no internet),
# the server starts on its built-in demo model, whose text is meaningless.
# Stop the server with Ctrl-C (SIGINT) or SIGTERM: it drains in-flight requests first.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build -G Ninja
cmake --build build --parallel "$(nproc)" --target llmserve llmctl

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
elif scripts/get-model.sh models; then
  args+=(--model models/stories15M.bin --tokenizer models/tokenizer.bin)
else
  echo "run.sh: stories15M could not be downloaded; starting the built-in demo model (meaningless text)" >&2
fi

exec build/server/llmserve "${args[@]}" "$@"
