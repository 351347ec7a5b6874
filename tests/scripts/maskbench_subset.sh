#!/bin/bash
# MaskBench's method (llmgrammar --bench) over the shared subset of MaskBench
# (LLMSERVE_TEST_ASSETS/golden/maskbench/data) with the Llama 3 tokenizer: no invalid
# instance may be accepted, and the passing count must not fall below its floor. Outcome
# counts only; the timings it prints are not checked (a benchmark's business).
# Usage: maskbench_subset.sh LLMGRAMMAR   (exit 77: assets missing)
set -euo pipefail
llmgrammar=$1
assets=${LLMSERVE_TEST_ASSETS:-}
data=$assets/golden/maskbench/data
tok=$assets/models/tokenizers/bpe/llama3
if [[ -z "$assets" || ! -d "$data" || ! -d "$tok" ]]; then
  echo "SKIP: LLMSERVE_TEST_ASSETS has no MaskBench subset or Llama 3 tokenizer"
  exit 77
fi
# Floors measured on the subset (1,131 files): 939 passing, 2 validation errors (both
# instances whose property order differs from the schema's; see docs/STRUCTURED_OUTPUTS.md).
min_passing=930
max_validation=2
out=$("$llmgrammar" --tokenizer "$tok" --bench "$data" --timeout 600)
echo "$out"
count() { awk -F'|' -v k="$1" '{gsub(/^ +| +$/, "", $2); gsub(/^ +| +$/, "", $3)} $2 == k {print $3}' <<<"$out"; }
passing=$(count passing); invalid=$(count "invalidation error"); validation=$(count "validation error")
schemas=$(count schemas)
status=0
[[ "$schemas" == 1131 ]] || { echo "FAIL: expected 1131 schemas, got $schemas"; status=1; }
[[ "$invalid" == 0 ]] || { echo "FAIL: $invalid invalid instances accepted"; status=1; }
(( validation <= max_validation )) || { echo "FAIL: $validation valid instances refused (at most $max_validation)"; status=1; }
(( passing >= min_passing )) || { echo "FAIL: $passing schemas passing (floor $min_passing)"; status=1; }
exit $status
