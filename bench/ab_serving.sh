#!/bin/bash
# ab_serving.sh: alternating A/B runs of one llmbench workload against two llmserve
# configurations, restarting the server for every run (so each starts cold, as the
# serving bench does), on a shared machine whose bandwidth moves within minutes.
#
#   bench/ab_serving.sh MODEL_FILE CONCURRENCY REQUESTS "SERVER_ARGS_A" "SERVER_ARGS_B" [PAIRS]
#
# e.g. bench/ab_serving.sh build/benchmodels/llama-1b-bf16.gguf 8 32 "--piggyback off" "--piggyback on" 3
# Per run: a 2-request warm-up, then `llmbench --concurrency C --requests R --input-len 128
# --output-len 128 --ignore-eos`; prints generated tok/s, TTFT p50, ITL p50, failed and
# mismatched requests, and the engine's step count and mean step time (from the metrics).
# Needs the Release build in $BUILD_DIR (default build/).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 5 ]; then sed -n 2,12p "$0" >&2; exit 2; fi
model=$1; conc=$2; requests=$3; args_a=$4; args_b=$5; pairs=${6:-3}
build=${BUILD_DIR:-build}
port=${AB_PORT:-50593}; mport=${AB_METRICS_PORT:-9493}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
py=/usr/bin/python3
for _ in $(seq "$pairs"); do
  for which in A B; do
    if [ $which = A ]; then args=$args_a; else args=$args_b; fi
    # shellcheck disable=SC2086  # the server args are words
    "$build/server/llmserve" --model "$model" --threads 2 --port "$port" --metrics-port "$mport" --host 127.0.0.1 \
      --log-level warn $args > "$work/server.log" 2>&1 &
    server=$!
    until "$build/tools/llmctl" --addr "127.0.0.1:$port" health > /dev/null 2>&1; do
      kill -0 $server 2> /dev/null || { cat "$work/server.log" >&2; exit 1; }
      sleep 0.3
    done
    "$build/bench/llmbench" --addr "127.0.0.1:$port" --concurrency 2 --requests 2 --input-len 128 --output-len 4 \
      --ignore-eos --progress off > /dev/null
    bench/step_phases.py snap "http://127.0.0.1:$mport/metrics" "$work/before.json"
    "$build/bench/llmbench" --addr "127.0.0.1:$port" --concurrency "$conc" --requests "$requests" --input-len 128 \
      --output-len 128 --ignore-eos --progress off --json "$work/run.json" > /dev/null
    bench/step_phases.py snap "http://127.0.0.1:$mport/metrics" "$work/after.json"
    line=$($py -c "import json;d=json.load(open('$work/run.json'));print('%.1f tok/s, TTFT p50 %.2f s, ITL p50 %.1f ms, failed %d, mismatches %d'%(d['gen_tok_s'],d['ttft_s']['p50'],d['itl_s']['p50']*1e3,d['requests']['failed'],d['requests']['mismatches']))")
    wall=$($py -c "import json;print(json.load(open('$work/run.json'))['duration_s'])")
    echo "$which [$args] $line | $(bench/step_phases.py report "$work/before.json" "$work/after.json" "$wall" | tail -1)"
    kill $server; wait $server || true
  done
done
