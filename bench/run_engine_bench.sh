#!/usr/bin/env bash
# Engine (continuous batching, no gRPC) benchmark: generated tok/s and step times at
# concurrency 1, 4, 16, 64 on the "small" (~110M) benchmark model, bf16 and f32 weights.
#
#   bench/run_engine_bench.sh [--models small] [--dtypes bf16,f32] [--concurrency 1,4,16,64]
#                             [--policies mixed] [--input-len 128] [--output-len 128]
#
# Generates the model into build/benchmodels if missing (scripts/gen_bench_models.py).
# Results: bench/results/engine-<date>.txt (table) and .jsonl (one object per run).
set -euo pipefail
cd "$(dirname "$0")/.."
models="small"; dtypes="bf16,f32"; conc="1,4,16,64"; policies="mixed"; in_len=128; out_len=128
while [ $# -gt 0 ]; do
  case "$1" in
    --models) models="$2"; shift 2 ;;
    --dtypes) dtypes="$2"; shift 2 ;;
    --concurrency) conc="$2"; shift 2 ;;
    --policies) policies="$2"; shift 2 ;;
    --input-len) in_len="$2"; shift 2 ;;
    --output-len) out_len="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

assets="${LLMSERVE_TEST_ASSETS:-../shared}"
cmake -S . -B build -G Ninja >/dev/null
cmake --build build --target engine_bench >/dev/null
/usr/bin/python3 scripts/gen_bench_models.py --out build/benchmodels --models "$models" --formats gguf \
  --dtype bf16 --skip-existing --assets "$assets"

mkdir -p bench/results
stem="bench/results/engine-$(date -u +%Y%m%dT%H%MZ)"
{
  echo "# $(date -u) $(uname -n) $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); load: $(cut -d' ' -f1-3 /proc/loadavg)"
  for m in ${models//,/ }; do
    for d in ${dtypes//,/ }; do
      for p in ${policies//,/ }; do
        echo "## $m weights=$d kv=$d (auto: the weights' dtype) policy=$p input=$in_len output=$out_len threads=2"
        build/bench/engine_bench --model "build/benchmodels/llama-$m-bf16.gguf" \
          --weight_dtype "$d" --step_policy "$p" --concurrency "$conc" --input_len "$in_len" \
          --output_len "$out_len" --threads 2 --json "$stem.jsonl"
      done
    done
  done
} | tee "$stem.txt"
echo "results: $stem.txt"
