#!/usr/bin/env bash
# Sets up, builds and starts llmserve's main program on a default model.
# Usage: scripts/run.sh [extra flags for the program...]
#   MODEL      model path (default: ../shared/models/llama2c/stories260K.bin)
#   TOKENIZER  tokenizer path (default: tok512.bin beside a llama2.c model)
#
# The gRPC server (llmserve) is not built yet; until it lands this starts `llminfo`,
# which loads the model and tokenizer exactly as the server will and prints the
# model config, the tensors and a sample encoding.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build -G Ninja
cmake --build build --parallel "$(nproc)" --target llminfo

model="${MODEL:-../shared/models/llama2c/stories260K.bin}"
tokenizer="${TOKENIZER:-}"
if [ -z "$tokenizer" ] && [ -f "$(dirname "$model")/tok512.bin" ] && [[ "$model" == *.bin ]]; then
  tokenizer="$(dirname "$model")/tok512.bin"
fi
args=(--model "$model")
[ -n "$tokenizer" ] && args+=(--tokenizer "$tokenizer")
exec build/tools/llminfo "${args[@]}" "$@"
