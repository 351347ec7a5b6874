#!/usr/bin/env bash
# Offline forward-pass benchmark with the machine's ceilings measured in the same run.
#
#   bench/run_forward_bench.sh [--models small,1b] [--reps N]
#
# Generates the random-weight benchmark models (scripts/gen_bench_models.py, bf16 GGUF)
# into build/benchmodels if missing, builds ../shared/tools/roofline into a temp dir,
# then alternates roofline and forward_bench (2 threads) N times (default 3) so the
# ceilings and our figures come from the same minutes. Results go to
# bench/results/forward-<date>.txt (not committed); docs/PERFORMANCE.md keeps the table.
set -euo pipefail
cd "$(dirname "$0")/.."
models="small,1b"; reps=3
while [ $# -gt 0 ]; do
  case "$1" in
    --models) models="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

assets="${LLMSERVE_TEST_ASSETS:-../shared}"
cmake -S . -B build -G Ninja >/dev/null
cmake --build build --target forward_bench >/dev/null
/usr/bin/python3 scripts/gen_bench_models.py --out build/benchmodels --models "$models" --formats gguf \
  --dtype bf16 --skip-existing --assets "$assets"

roof_dir="$(mktemp -d)"; trap 'rm -rf "$roof_dir"' EXIT
cp "$assets"/tools/roofline/* "$roof_dir"/ && chmod u+w "$roof_dir"/* && sh "$roof_dir/build.sh"

mkdir -p bench/results
out="bench/results/forward-$(date -u +%Y%m%dT%H%MZ).txt"
{
  echo "# $(date -u) $(uname -n) $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  for r in $(seq "$reps"); do
    echo "## rep $r roofline"; "$roof_dir/roofline" --threads 2
    for m in ${models//,/ }; do
      echo "## rep $r forward_bench $m"
      LLMSERVE_BENCH_MODEL="build/benchmodels/llama-$m-bf16.gguf" build/bench/forward_bench \
        --benchmark_counters_tabular=true 2>&1 | grep -E '^(Decode|Prefill|Benchmark|-)'
    done
  done
} | tee "$out"
echo "results: $out"
