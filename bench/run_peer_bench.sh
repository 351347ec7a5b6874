#!/usr/bin/env bash
# Side-by-side benchmark: llmserve and llama.cpp's llama-server on the same GGUF file, the
# same machine and the same workloads, the two servers alternating round by round.
#
#   bench/run_peer_bench.sh --model FILE.gguf --llama-server PATH [--rounds 3] [--threads 2]
#                           [--requests 32] [--c1-requests 8] [--input-len 128] [--output-len 128]
#                           [--prefill-len 512] [--cells c16,c8,c1,prefill] [--llmserve-args "..."]
#                           [--warmup 16] [--prefix-len 1024] [--prefix-input-len 64] [--chat-prefix-len 512]
#                           [--chat-turns 4] [--chat-len 32]
#                           [--baseline-args "..."] [--label NAME] [--grpc] [--json-schema FILE]
#   env: BUILD_DIR (default build)
#
# Cells, each run by llmbench --backend openai against both servers (the same client: a
# streaming POST /v1/completions per request; llmserve serves it on --http-port): 16 and 8 concurrent
# streams of --requests requests, --input-len random prompt tokens and --output-len
# generated (EOS ignored, greedy, closed loop); --c1-requests at concurrency 1; and
# --prefill-len-token prompts, one at a time, 1 token generated (prefill time = TTFT).
# Prefix-caching cells (not in the default --cells): `prefix`, 16 concurrent streams of
# --requests requests that all open with the same --prefix-len random tokens, then
# --prefix-input-len of their own, --output-len generated; `chat4`, 16 concurrent conversations
# of --chat-turns turns that open with a shared --chat-prefix-len-token system prompt,
# each turn adding --chat-len new tokens and generating --chat-len (every turn resends the
# conversation so far). Both cells first run --warmup requests (conversations) of the same
# workload at the same concurrency, left out of the figures (default 16, one wave): the
# steady state of a server whose prefix is already cached, not its first cold prefill, which
# would otherwise be half of a 32-request run. llama-server gets "cache_prompt": true in these cells (its slot reuses
# the longest common prefix of its previous prompt), false in the others. A conversation's
# next turn carries the ids the last one generated: llmserve returns them in each chunk
# ("return_token_ids"), llama-server in each chunk's "__verbose" (llmbench asks with
# "verbose": true when --turns > 1). --grpc runs llmserve's cells over gRPC instead (the
# HTTP path's cost).
# Structured-output cell (not in the default --cells): `json16`, 16 concurrent streams of
# --requests requests like c16, each constrained by the JSON Schema in --json-schema FILE
# (llama.cpp's "json_schema" field, which both servers accept), EOS not ignored (a finished
# object ends the request); compare with c16 of the same run for the cost of the constraint.
# --baseline-args "ARGS" adds a third server each round, llmserve-base: llmserve with ARGS
# appended (e.g. --baseline-args "--prefix-caching off"), reported as llmserve / llmserve-base.
# Each round starts one server, warms it up (2 short requests), runs every cell, stops it,
# then does the same with the other; odd rounds start with llmserve, even ones with llama.cpp. Both get --threads
# compute threads; llama-server gets -np 16 slots of (input + output or prefill) context
# each, and logit_bias false for ids 3..258 (the byte tokens of the Llama SentencePiece
# vocabulary: on random weights a stream would otherwise end in partial UTF-8, which
# llama-server aborts); llmserve samples over the whole vocabulary (the same work per step).
#
# Reported per cell and round: llmserve / llama.cpp ratios of generated tok/s (c16, c8),
# decode tok/s = 1 / TPOT p50 (c1), TTFT p50 (c16) and prefill time (TTFT p50 of the
# prefill cell), TTFT p50 and generated tok/s of prefix and chat4, then the median over
# rounds, and each server's prefix-cache hit rate (cached / prompt tokens).
# Results: bench/results/peer-<label>-<date>.{txt,jsonl}.
#
# llama.cpp is not a Debian package and is never downloaded or vendored by this project.
# Build it beside the repository from a llama.cpp source checkout of tag b10573 (e.g. the
# git mirror of ngxson/llama.cpp, which carries upstream's tags):
#   ../shared/tools/build_llama_cpp.sh LLAMA_GIT_DIR OUT_DIR b10573
# which runs a CPU-only Release build with the native ISA:
#   cmake -S OUT_DIR -B OUT_DIR/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
#     -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
#   cmake --build OUT_DIR/build --target llama-server llama-quantize
# and gives OUT_DIR/build/bin/llama-server (and llama-quantize, which makes the Q8_0 and
# Q4_K_M copies of a bf16 GGUF: llama-quantize IN.gguf OUT.gguf Q4_K_M).
set -euo pipefail
cd "$(dirname "$0")/.."
model=""; llama=""; rounds=3; threads=2; requests=32; c1_requests=8; in_len=128; out_len=128; prefill_len=512
llmserve_args=""; label=""; cells="c16,c8,c1,prefill"; llmserve_api=openai
json_schema=""; warmup=16; prefix_len=1024; prefix_in=64; chat_prefix_len=512; chat_turns=4; chat_len=32; baseline_args=""; baseline=0
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model="$2"; shift 2 ;;
    --llama-server) llama="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --requests) requests="$2"; shift 2 ;;
    --c1-requests) c1_requests="$2"; shift 2 ;;
    --input-len) in_len="$2"; shift 2 ;;
    --output-len) out_len="$2"; shift 2 ;;
    --prefill-len) prefill_len="$2"; shift 2 ;;
    --llmserve-args) llmserve_args="$2"; shift 2 ;;
    --cells) cells="$2"; shift 2 ;;
    --grpc) llmserve_api=grpc; shift ;;
    --prefix-len) prefix_len="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --prefix-input-len) prefix_in="$2"; shift 2 ;;
    --chat-prefix-len) chat_prefix_len="$2"; shift 2 ;;
    --chat-turns) chat_turns="$2"; shift 2 ;;
    --chat-len) chat_len="$2"; shift 2 ;;
    --baseline-args) baseline_args="$2"; baseline=1; shift 2 ;;
    --label) label="$2"; shift 2 ;;
    --json-schema) json_schema="$2"; shift 2 ;;
    -h|--help) sed -n '2,60p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$model" ] || [ -z "$llama" ]; then echo "give --model FILE.gguf and --llama-server PATH (see --help)" >&2; exit 2; fi
case ",$cells," in *",json16,"*) [ -f "$json_schema" ] || { echo "the json16 cell needs --json-schema FILE" >&2; exit 2; } ;; esac
if [ ! -x "$llama" ]; then echo "$llama: not an executable llama-server (see --help for how to build it)" >&2; exit 2; fi
[ -n "$label" ] || label="$(basename "$model" .gguf)"

build="${BUILD_DIR:-build}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLMSERVE_BUILD_BENCH=ON >/dev/null
cmake --build "$build" --target llmserve llmbench llmctl >/dev/null

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

mkdir -p bench/results
stem="bench/results/peer-$label-$(date -u +%Y%m%dT%H%M%SZ)"
: > "$stem.jsonl"
exec > >(tee "$stem.txt") 2>&1
echo "# $(date -u) $(uname -n) $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# model $model ($(stat -c %s "$model") bytes); llama-server $("$llama" --version 2>&1 | grep -m1 version || true)"
echo "# workload: c16 and c8 $requests requests, c1 $c1_requests, input $in_len, output $out_len, prefill $prefill_len; $threads threads each; $rounds rounds"
echo "# cells: $cells; prefix $prefix_len + $prefix_in, chat $chat_prefix_len + $chat_turns turns of $chat_len in / $chat_len out"
[ "$baseline" = 0 ] || echo "# llmserve-base: llmserve $llmserve_args $baseline_args"

max() { local m="$1"; shift; for x in "$@"; do [ "$x" -gt "$m" ] && m="$x"; done; echo "$m"; }
# llama-server's per-slot context: the longest sequence any enabled cell makes.
need=(1)
case ",$cells," in *",c16,"*|*",c8,"*|*",c1,"*) need+=($((in_len + out_len))) ;; esac
case ",$cells," in *",prefill,"*) need+=($((prefill_len + 1))) ;; esac
case ",$cells," in *",prefix,"*) need+=($((prefix_len + prefix_in + out_len))) ;; esac
case ",$cells," in *",chat4,"*) need+=($((chat_prefix_len + 2 * chat_turns * chat_len))) ;; esac
ctx=$(( $(max "${need[@]}") + 16 ))
vocab=""
start_server() {  # $1 = llmserve | llmserve-base | llamacpp; sets addr (gRPC or HTTP), http_addr, server_pid
  local port; port="$(free_port)"; addr="127.0.0.1:$port"; http_addr="$addr"
  if [ "$1" != llamacpp ]; then
    local extra=""; [ "$1" = llmserve ] || extra="$baseline_args"
    local http_port; http_port="$(free_port)"; http_addr="127.0.0.1:$http_port"
    # shellcheck disable=SC2086  # llmserve_args and extra are lists of flags
    "$build/server/llmserve" --model "$model" --threads "$threads" --host 127.0.0.1 --port "$port" --metrics-port 0 \
      --http-port "$http_port" $llmserve_args $extra >"$work/server.log" 2>&1 &
  else
    "$llama" -m "$model" -t "$threads" -tb "$threads" --host 127.0.0.1 --port "$port" -np 16 -c $((16 * ctx)) \
      --no-warmup >"$work/server.log" 2>&1 &
  fi
  server_pid=$!
  for _ in $(seq 1200); do
    if ! kill -0 "$server_pid" 2>/dev/null; then echo "$1 exited during startup:" >&2; tail -20 "$work/server.log" >&2; exit 1; fi
    if [ "$1" != llamacpp ]; then
      "$build/tools/llmctl" --addr "$addr" --timeout 2 health >/dev/null 2>&1 && break
    else
      [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/health" || true)" = 200 ] && break
    fi
    sleep 0.5
  done
  if [ "$1" != llamacpp ]; then
    grep -o 'serving on .*' "$work/server.log" | head -1 | sed 's/^/# /'
    # The vocabulary random prompt ids are drawn from (the OpenAI API does not say it):
    # llmserve's, read once (round 1 starts with llmserve), then used for both servers.
    if [ -z "$vocab" ]; then
      vocab="$("$build/tools/llmctl" --addr "$addr" --json info | /usr/bin/python3 -c \
        'import json, sys; print(next(json.loads(l)["model"]["vocab_size"] for l in sys.stdin if "vocab_size" in l))')"
      echo "# vocabulary: $vocab tokens"
    fi
  fi
}
stop_server() {
  kill -TERM "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}
bench() {  # $1 server, $2 round, $3 cell, then llmbench flags
  local server="$1" round="$2" cell="$3"; shift 3
  local backend=(--backend openai --addr "$http_addr" --vocab "$vocab")
  if [ "$server" = llamacpp ]; then
    backend+=(--ban-ids 3-258)
    case "$cell" in prefix|chat4) backend+=(--llamacpp-cache-prompt) ;; esac
  elif [ "$llmserve_api" = grpc ]; then
    backend=(--backend grpc --addr "$addr")
  fi
  local eos=(--ignore-eos); [ "$cell" != json16 ] || eos=()  # a finished object ends its request
  "$build/bench/llmbench" "${backend[@]}" "${eos[@]}" --progress off --allow-failures \
    --label "$server/$round/$cell" --jsonl "$stem.jsonl" "$@" | grep -E 'Generated tokens|TTFT |TPOT|ok / failed|Cached tokens|Per turn|^  turn '
}
run_cells() {  # $1 server, $2 round
  echo "## round $2: $1"
  start_server "$1"
  bench "$1" "$2" warmup --concurrency 1 --requests 2 --input-len "$in_len" --output-len 4 >/dev/null
  sed -i '$d' "$stem.jsonl"  # the warm-up is not a result
  for c in 16 8 1; do
    case ",$cells," in *",c$c,"*) ;; *) continue ;; esac
    n="$requests"; if [ "$c" = 1 ]; then n="$c1_requests"; fi
    echo "### $1 round $2 c$c"
    bench "$1" "$2" "c$c" --concurrency "$c" --requests "$n" --input-len "$in_len" --output-len "$out_len"
  done
  case ",$cells," in
    *",json16,"*)
      echo "### $1 round $2 json16"
      # Its own seed: prompts other than c16's, which the prefix cache would hold.
      bench "$1" "$2" json16 --concurrency 16 --requests "$requests" --input-len "$in_len" --output-len "$out_len" \
        --json-schema "$json_schema" --seed 2 ;;
  esac
  case ",$cells," in
    *",prefill,"*)
      echo "### $1 round $2 prefill $prefill_len"
      bench "$1" "$2" prefill --concurrency 1 --requests 4 --input-len "$prefill_len" --output-len 1 ;;
  esac
  case ",$cells," in
    *",prefix,"*)
      echo "### $1 round $2 prefix $prefix_len + $prefix_in"
      bench "$1" "$2" prefix --concurrency 16 --requests "$requests" --shared-prefix-len "$prefix_len" \
        --input-len "$prefix_in" --output-len "$out_len" --warmup-requests "$warmup" ;;
  esac
  case ",$cells," in
    *",chat4,"*)  # its own seed: a system prompt other than the prefix cell's
      echo "### $1 round $2 chat $chat_turns turns"
      bench "$1" "$2" chat4 --concurrency 16 --requests 16 --turns "$chat_turns" --shared-prefix-len "$chat_prefix_len" \
        --input-len "$chat_len" --output-len "$chat_len" --seed 1 --warmup-requests "$warmup" ;;
  esac
  stop_server
}
servers="llmserve llamacpp"; [ "$baseline" = 0 ] || servers="llmserve llmserve-base llamacpp"
for r in $(seq "$rounds"); do
  order="$servers"; [ $((r % 2)) = 1 ] || order="$(echo "$servers" | tr ' ' '\n' | tac | tr '\n' ' ')"
  for s in $order; do run_cells "$s" "$r"; done
done

echo "## llmserve / each other server, per round and median"
/usr/bin/python3 bench/peer_summary.py "$stem.jsonl"
echo "results: $stem.txt $stem.jsonl"
