#!/usr/bin/env bash
# Side-by-side benchmark: llmserve and llama.cpp's llama-server on the same GGUF file, the
# same machine and the same workloads, the two servers alternating round by round.
#
#   bench/run_peer_bench.sh --model FILE.gguf --llama-server PATH [--rounds 3] [--threads 2]
#                           [--requests 32] [--c1-requests 8] [--input-len 128] [--output-len 128]
#                           [--prefill-len 512] [--cells c16,c8,c1,prefill] [--llmserve-args "..."]
#                           [--label NAME]
#   env: BUILD_DIR (default build)
#
# Cells, each run by llmbench against both servers (llmserve over gRPC, llama-server over
# its streaming HTTP /completion endpoint with --backend llamacpp): 16 and 8 concurrent
# streams of --requests requests, --input-len random prompt tokens and --output-len
# generated (EOS ignored, greedy, closed loop); --c1-requests at concurrency 1; and
# --prefill-len-token prompts, one at a time, 1 token generated (prefill time = TTFT).
# Each round starts one server, warms it up (2 short requests), runs every cell, stops it,
# then does the same with the other; odd rounds start with llmserve, even ones with llama.cpp. Both get --threads
# compute threads; llama-server gets -np 16 slots of (input + output or prefill) context
# each, and logit_bias false for ids 3..258 (the byte tokens of the Llama SentencePiece
# vocabulary: on random weights a stream would otherwise end in partial UTF-8, which
# llama-server aborts); llmserve samples over the whole vocabulary (the same work per step).
#
# Reported per cell and round: llmserve / llama.cpp ratios of generated tok/s (c16, c8),
# decode tok/s = 1 / TPOT p50 (c1), TTFT p50 (c16) and prefill time (TTFT p50 of the
# prefill cell), then the median over rounds. Results: bench/results/peer-<label>-<date>.{txt,jsonl}.
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
llmserve_args=""; label=""; cells="c16,c8,c1,prefill"
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
    --label) label="$2"; shift 2 ;;
    -h|--help) sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$model" ] || [ -z "$llama" ]; then echo "give --model FILE.gguf and --llama-server PATH (see --help)" >&2; exit 2; fi
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

ctx=$(( (in_len + out_len > prefill_len + 1 ? in_len + out_len : prefill_len + 1) + 16 ))
start_server() {  # $1 = llmserve | llamacpp; sets addr, server_pid
  local port; port="$(free_port)"; addr="127.0.0.1:$port"
  if [ "$1" = llmserve ]; then
    # shellcheck disable=SC2086  # llmserve_args is a list of flags
    "$build/server/llmserve" --model "$model" --threads "$threads" --host 127.0.0.1 --port "$port" --metrics-port 0 \
      $llmserve_args >"$work/server.log" 2>&1 &
  else
    "$llama" -m "$model" -t "$threads" -tb "$threads" --host 127.0.0.1 --port "$port" -np 16 -c $((16 * ctx)) \
      --no-warmup >"$work/server.log" 2>&1 &
  fi
  server_pid=$!
  for _ in $(seq 1200); do
    if ! kill -0 "$server_pid" 2>/dev/null; then echo "$1 exited during startup:" >&2; tail -20 "$work/server.log" >&2; exit 1; fi
    if [ "$1" = llmserve ]; then
      "$build/tools/llmctl" --addr "$addr" --timeout 2 health >/dev/null 2>&1 && break
    else
      [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/health" || true)" = 200 ] && break
    fi
    sleep 0.5
  done
  if [ "$1" = llmserve ]; then grep -o 'serving on .*' "$work/server.log" | head -1 | sed 's/^/# /'; fi
}
stop_server() {
  kill -TERM "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}
bench() {  # $1 server, $2 round, $3 cell, then llmbench flags
  local server="$1" round="$2" cell="$3"; shift 3
  local backend=(--backend grpc)
  if [ "$server" = llamacpp ]; then backend=(--backend llamacpp --vocab 32000 --ban-ids 3-258); fi
  "$build/bench/llmbench" "${backend[@]}" --addr "$addr" --ignore-eos --progress off --allow-failures \
    --label "$server/$round/$cell" --jsonl "$stem.jsonl" "$@" | grep -E 'Generated tokens|TTFT |TPOT|ok / failed'
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
    *",prefill,"*)
      echo "### $1 round $2 prefill $prefill_len"
      bench "$1" "$2" prefill --concurrency 1 --requests 4 --input-len "$prefill_len" --output-len 1 ;;
  esac
  stop_server
}
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order="llmserve llamacpp"; else order="llamacpp llmserve"; fi
  for s in $order; do run_cells "$s" "$r"; done
done

echo "## llmserve / llama.cpp, per round and median"
/usr/bin/python3 bench/peer_summary.py "$stem.jsonl"
echo "results: $stem.txt $stem.jsonl"
