#!/usr/bin/env bash
# Serving benchmark: the real llmserve on loopback driven by llmbench (gRPC), over a matrix
# of models x weight dtypes x step policies x concurrencies.
#
#   bench/run_serving_bench.sh [--models small,1b] [--dtypes bf16,f32] [--policies mixed,separate]
#                              [--concurrency 1,8,16,32] [--requests 32] [--c1-requests 8] [--input-len 128]
#                              [--output-len 128] [--prefill-len 512] [--threads 2]
#                              [--server-args "--kv-dtype bf16 ..."] [--roofline-each]
#   env: BUILD_DIR (default build), MODELS_DIR (default build/benchmodels),
#        LLMSERVE_TEST_ASSETS (default ../shared)
#
# Generates the random-weight bf16 GGUF models if missing (scripts/gen_bench_models.py),
# builds llmserve, llmbench and llmctl (Release) in $BUILD_DIR, builds ../shared/tools/roofline
# into a temp dir and runs it at the start and at the end. For each model/dtype/policy it
# starts llmserve (--threads, free gRPC and metrics ports), waits for health SERVING, runs
# a 2-request warm-up, then one closed-loop llmbench run per concurrency (random-token
# prompts of --input-len, --output-len generated, EOS ignored, greedy), and stops the
# server with SIGTERM. Then, unless --prefill-len 0, a prefill run: 4 requests one at a
# time of --prefill-len prompt tokens and 1 generated (prefill tok/s = prompt ÷ TTFT p50).
# Around each run it snapshots the server's step-phase metrics
# (bench/step_phases.py): where the engine's time went (schedule/forward/sample/emit/idle).
# Results: bench/results/serving-<date>.txt (everything + a summary table), .jsonl (one
# llmbench report per run, "label" = model/dtype/policy/cN), .phases.jsonl and .ceilings.json
# (the workload's ceilings from the roofline figures and issue 8's targets scaled to them).
# --roofline-each also runs roofline right before and after every llmbench run and scores
# that run against its own bracket (the machine's bandwidth moves by 2x within minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
models="small,1b"; dtypes="bf16,f32"; policies="mixed,separate"; conc="1,8,16,32"
roofline_each=0; requests=32; c1_requests=8; in_len=128; out_len=128; prefill_len=512; threads=2; server_args=""
while [ $# -gt 0 ]; do
  case "$1" in
    --models) models="$2"; shift 2 ;;
    --dtypes) dtypes="$2"; shift 2 ;;
    --policies) policies="$2"; shift 2 ;;
    --concurrency) conc="$2"; shift 2 ;;
    --requests) requests="$2"; shift 2 ;;
    --c1-requests) c1_requests="$2"; shift 2 ;;
    --input-len) in_len="$2"; shift 2 ;;
    --output-len) out_len="$2"; shift 2 ;;
    --prefill-len) prefill_len="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --server-args) server_args="$2"; shift 2 ;;
    --roofline-each) roofline_each=1; shift ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

build="${BUILD_DIR:-build}"
models_dir="${MODELS_DIR:-build/benchmodels}"
assets="${LLMSERVE_TEST_ASSETS:-../shared}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLMSERVE_BUILD_BENCH=ON >/dev/null
cmake --build "$build" --target llmserve llmbench llmctl >/dev/null
/usr/bin/python3 scripts/gen_bench_models.py --out "$models_dir" --models "$models" --formats gguf \
  --dtype bf16 --skip-existing --assets "$assets"

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
cp "$assets"/tools/roofline/* "$work"/ && chmod u+w "$work"/* && sh "$work/build.sh" >/dev/null

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Waits (up to 15 min: 1b f32 converts 4 GB of weights at load) for health SERVING.
wait_serving() {
  local addr="$1" _
  for _ in $(seq 1800); do
    if ! kill -0 "$server_pid" 2>/dev/null; then echo "llmserve exited during startup:" >&2; tail -20 "$work/server.log" >&2; return 1; fi
    if "$build/tools/llmctl" --addr "$addr" --timeout 2 health >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  echo "llmserve did not become SERVING in time" >&2; return 1
}

stop_server() {
  kill -TERM "$server_pid" 2>/dev/null || true
  wait "$server_pid" || echo "llmserve exited with $?" >&2
  server_pid=""
}

mkdir -p bench/results
stem="bench/results/serving-$(date -u +%Y%m%dT%H%M%SZ)"
: > "$stem.jsonl"; : > "$stem.phases.jsonl"
exec > >(tee "$stem.txt") 2>&1  # everything below also goes to the results file
echo "# $(date -u) $(uname -n) $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# workload: $requests requests ($c1_requests at concurrency 1), input $in_len, output $out_len, ignore EOS, greedy, closed loop; llmserve --threads $threads $server_args"
echo "## roofline (start)"; "$work/roofline" --threads 2 | tee "$work/roofline.jsonl"
for m in ${models//,/ }; do
  for d in ${dtypes//,/ }; do
    for p in ${policies//,/ }; do
      port="$(free_port)"; addr="127.0.0.1:$port"; mport="$(free_port)"
      metrics="http://127.0.0.1:$mport/metrics"
      echo "## $m weights=$d policy=$p threads=$threads"
      # shellcheck disable=SC2086  # server_args is a list of flags
      "$build/server/llmserve" --model "$models_dir/llama-$m-bf16.gguf" --model-name "llama-$m" --weight-dtype "$d" \
        --step-policy "$p" --threads "$threads" --host 127.0.0.1 --port "$port" --metrics-port "$mport" \
        --log-level info $server_args >"$work/server.log" 2>&1 &
      server_pid=$!
      wait_serving "$addr"
      grep -o 'prefill policy [a-z].*' "$work/server.log" | head -1 | sed 's/^/# /' || true  # the resolved policy
      "$build/bench/llmbench" --addr "$addr" --requests 2 --concurrency 1 --input-len "$in_len" --output-len 4 \
        --ignore-eos --progress off >/dev/null
      for c in ${conc//,/ }; do
        n="$requests"; if [ "$c" = 1 ]; then n="$c1_requests"; fi  # batch 1: a few requests suffice
        echo "### $m $d $p concurrency $c ($n requests)"
        if [ "$roofline_each" = 1 ]; then "$work/roofline" --threads 2 | tee "$work/bracket.jsonl"; fi
        bench/step_phases.py snap "$metrics" "$work/before.json"
        "$build/bench/llmbench" --addr "$addr" --concurrency "$c" --requests "$n" --input-len "$in_len" \
          --output-len "$out_len" --ignore-eos --progress lines --progress-interval 30 --allow-failures \
          --label "$m/$d/$p/c$c" --jsonl "$stem.jsonl"
        bench/step_phases.py snap "$metrics" "$work/after.json"
        wall="$(tail -1 "$stem.jsonl" | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["duration_s"])')"
        bench/step_phases.py report "$work/before.json" "$work/after.json" "$wall" --label "$m/$d/$p/c$c" \
          --jsonl "$stem.phases.jsonl"
        if [ "$roofline_each" = 1 ]; then
          "$work/roofline" --threads 2 | tee -a "$work/bracket.jsonl"
          bench/roofline_model.py "$work/bracket.jsonl" --requests "$n" --input-len "$in_len" --output-len "$out_len" \
            --json "$work/bracket.json" >/dev/null
          /usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d["label"] = sys.argv[2]; print(json.dumps(d))' \
            "$work/bracket.json" "$m/$d/$p/c$c" >> "$stem.brackets.jsonl"
        fi
      done
      if [ "$prefill_len" -gt 0 ]; then
        echo "### $m $d $p prefill $prefill_len (4 requests, 1 token each)"
        "$build/bench/llmbench" --addr "$addr" --concurrency 1 --requests 4 --input-len "$prefill_len" \
          --output-len 1 --ignore-eos --progress off --allow-failures --label "$m/$d/$p/prefill$prefill_len" \
          --jsonl "$stem.jsonl"
      fi
      stop_server
    done
  done
done
echo "## roofline (end)"; "$work/roofline" --threads 2 | tee -a "$work/roofline.jsonl"
echo "## ceilings of this workload from the roofline figures (bench/roofline_model.py)"
bench/roofline_model.py "$work/roofline.jsonl" --requests "$requests" --input-len "$in_len" --output-len "$out_len" \
  --json "$stem.ceilings.json"
echo "## summary (TTFT and e2e p50 over requests, ITL p50 over tokens)"
brackets=(); if [ -s "$stem.brackets.jsonl" ]; then brackets=("$stem.brackets.jsonl"); fi
/usr/bin/python3 - "$stem.jsonl" "$stem.phases.jsonl" "$stem.ceilings.json" "${brackets[@]}" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
phases = {r["label"]: r for r in (json.loads(line) for line in open(sys.argv[2]) if line.strip())}
ceil = {(r["model"], r["dtype"], r["workload"]): r for r in json.load(open(sys.argv[3]))["rows"]}
brackets = {}  # label -> that run's own ceilings (--roofline-each)
for line in (open(sys.argv[4]) if len(sys.argv) > 4 else []):
  b = json.loads(line)
  brackets[b["label"]] = {(r["model"], r["dtype"], r["workload"]): r for r in b["rows"]}
def vs_ceiling(m, d, p, w, value):
  c = brackets.get(f"{m}/{d}/{p}/{w}", ceil).get((m, d, w))
  if not c: return "| |"
  t = f"{c['scaled_target']:.1f}" if c["scaled_target"] else ""
  return f"{c['ceiling']:.1f} ({100 * value / c['ceiling']:.0f}%) | {t}"
head = ("model", "dtype", "policy", "conc", "gen tok/s", "TTFT p50 (s)", "ITL p50 (ms)", "e2e p50 (s)", "failed",
      "mismatches", "forward %", "engine idle %", "step ms", "tok/step", "ceiling tok/s (achieved %)",
      "issue target scaled")
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
prefill = [r for r in rows if r["label"].split("/")[3].startswith("prefill")]
rows = [r for r in rows if r not in prefill]
for r in rows:
  m, d, p, c = r["label"].split("/")
  q = r["requests"]
  ph = phases.get(r["label"])
  prof = (f"{100 * ph['forward_s'] / ph['wall_s']:.1f} | {100 * ph['idle_s'] / ph['wall_s']:.1f} | "
          f"{ph['mean_step_ms']:.1f} | {ph['tokens_per_step']:.1f}") if ph else "| | |"
  print(f"| {m} | {d} | {p} | {c[1:]} | {r['gen_tok_s']:.1f} | {r['ttft_s']['p50']:.3f} | "
        f"{r['itl_s']['p50'] * 1e3:.1f} | {r['e2e_s']['p50']:.2f} | {q['failed']} | {q['mismatches']} | {prof} | "
        f"{vs_ceiling(m, d, p, c, r['gen_tok_s'])} |")
if prefill:
  print()
  print("| model | dtype | policy | prompt tokens | TTFT p50 (s) | prefill tok/s | failed | mismatches | "
        "ceiling tok/s (achieved %) | issue target scaled |")
  print("|---|---|---|---|---|---|---|---|---|---|")
  for r in prefill:
    m, d, p, c = r["label"].split("/")
    n = int(c[len("prefill"):])
    t = r["ttft_s"]["p50"]
    print(f"| {m} | {d} | {p} | {n} | {t:.3f} | {n / t:.1f} | {r['requests']['failed']} | "
          f"{r['requests']['mismatches']} | {vs_ceiling(m, d, p, c, n / t)} |")
PY
echo "results: $stem.txt $stem.jsonl $stem.phases.jsonl $stem.ceilings.json"
