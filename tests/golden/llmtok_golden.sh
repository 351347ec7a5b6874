#!/usr/bin/env bash
# Golden tokenizer check: llmtok must reproduce a reference .out file exactly, and
# (unless --no-roundtrip) decoding those ids must give back the .inp file exactly.
#
#   llmtok_golden.sh LLMTOK SOURCE_DIR TOKENIZER VECTORS [--pretokenizer NAME] [--no-roundtrip]
#
# TOKENIZER and VECTORS (path without .inp/.out) starting with "assets:" are resolved
# under LLMSERVE_TEST_ASSETS (relative values are relative to SOURCE_DIR; default
# SOURCE_DIR/../shared); "repo:" paths under SOURCE_DIR. A missing asset skips the test
# (exit 77) unless CI is set, where it fails.
set -euo pipefail
llmtok="$1"; src="$2"; tokenizer="$3"; vectors="$4"; shift 4
pretok=(); roundtrip=1
while [ $# -gt 0 ]; do
  case "$1" in
    --pretokenizer) pretok=(--pretokenizer "$2"); shift 2 ;;
    --no-roundtrip) roundtrip=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

assets="${LLMSERVE_TEST_ASSETS:-../shared}"
case "$assets" in /*) ;; *) assets="$src/$assets" ;; esac

resolve() {
  case "$1" in
    assets:*) echo "$assets/${1#assets:}" ;;
    repo:*) echo "$src/${1#repo:}" ;;
    *) echo "$1" ;;
  esac
}
tok_path="$(resolve "$tokenizer")"
vec_path="$(resolve "$vectors")"
for f in "$tok_path" "$vec_path.inp" "$vec_path.out"; do
  if [ ! -e "$f" ]; then
    if [ -n "${CI:-}" ] && [ "${CI}" != "false" ] && [ "${CI}" != "0" ]; then
      echo "FAIL: test asset $f not found (required under CI; LLMSERVE_TEST_ASSETS=$assets)"; exit 1
    fi
    echo "SKIP: test asset $f not found; set LLMSERVE_TEST_ASSETS to the shared assets directory"; exit 77
  fi
done

tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
"$llmtok" --tokenizer "$tok_path" "${pretok[@]}" --inp "$vec_path.inp" > "$tmp/got.out"
if ! cmp -s "$tmp/got.out" "$vec_path.out"; then
  echo "FAIL: encoding $vec_path.inp with $tok_path differs from $vec_path.out:"
  diff <(cat -A "$vec_path.out") <(cat -A "$tmp/got.out") | head -40 || true
  exit 1
fi
n=$(wc -l < "$vec_path.out")
echo "encode: $n strings match $vec_path.out"
if [ "$roundtrip" = 1 ]; then
  "$llmtok" --tokenizer "$tok_path" "${pretok[@]}" --decode --inp "$vec_path.out" > "$tmp/got.inp"
  if ! cmp -s "$tmp/got.inp" "$vec_path.inp"; then
    echo "FAIL: decoding $vec_path.out does not give back $vec_path.inp:"
    diff <(cat -A "$vec_path.inp") <(cat -A "$tmp/got.inp") | head -40 || true
    exit 1
  fi
  echo "decode: all $n strings round-trip"
fi
