#!/usr/bin/env bash
# Checks the Prometheus and Grafana files under deploy/:
#   - promtool check config / check rules / test rules on deploy/prometheus/;
#   - the Grafana dashboard deploy/grafana/llmserve.json: its variables, that every panel
#     and query uses the ${datasource} variable and filters model_name=~"$model_name",
#     that it and the rules only use metric names llmserve exports, and that every query
#     is valid PromQL (Grafana variables replaced by concrete values, the queries written
#     as recording rules into a temporary file and checked with promtool check rules).
# Usage: check_deploy.sh [SOURCE_DIR]   (default: the repository holding this script)
# Exit 77 (skipped) when promtool is missing and CI is unset; with CI set that fails.
# promtool comes with Debian's `prometheus` package: apt-get install -y prometheus
set -euo pipefail

src="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
prom_dir="$src/deploy/prometheus"
dashboard="$src/deploy/grafana/llmserve.json"

if ! command -v promtool >/dev/null 2>&1; then
  if [[ -n "${CI:-}" ]]; then
    echo "FAIL: promtool not found (apt-get install -y prometheus)" >&2
    exit 1
  fi
  echo "SKIP: promtool not found (apt-get install -y prometheus)"
  exit 77
fi
python=/usr/bin/python3
[[ -x "$python" ]] || python="$(command -v python3)"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "== promtool check config"
promtool check config "$prom_dir/prometheus.yml"
echo "== promtool check rules"
promtool check rules "$prom_dir/rules.yml"
echo "== promtool test rules"
promtool test rules "$prom_dir/rules_test.yml"

echo "== dashboard checks"
status=0
if "$python" - "$dashboard" "$prom_dir/rules.yml" "$tmp/dashboard_rules.yml" <<'PY'
import json
import re
import sys

dashboard_path, rules_path, out_path = sys.argv[1:4]
errors = []

# Metric names exported by llmserve under the default prefix (docs/OPERATIONS.md).
GAUGES = ["num_requests_running", "num_requests_waiting", "kv_cache_usage_perc",
          "kv_cache_num_blocks", "kv_cache_blocks_used", "kv_cache_blocks_cached", "engine_config_info"]
COUNTERS = ["prompt_tokens_total", "generation_tokens_total", "request_success_total",
            "request_failure_total", "num_preemptions_total", "prefix_cache_queries_total",
            "prefix_cache_hits_total", "prefix_cache_evictions_total",
            "constrained_requests_total", "constraint_cache_lookups_total"]
HISTOGRAMS = ["time_to_first_token_seconds", "inter_token_latency_seconds",
              "e2e_request_latency_seconds", "request_queue_time_seconds",
              "request_prefill_time_seconds", "request_decode_time_seconds",
              "request_prompt_tokens", "request_generation_tokens", "iteration_tokens",
              "engine_step_duration_seconds", "constraint_compile_seconds", "constraint_mask_seconds"]
KNOWN = {"llmserve_" + n for n in GAUGES + COUNTERS}
for h in HISTOGRAMS:
    KNOWN |= {"llmserve_%s%s" % (h, s) for s in ("_bucket", "_sum", "_count")}

# A metric name: llmserve_... not preceded by a word character or ':' (which would
# make it part of a recording rule name such as model_name:llmserve_x:rate1m).
METRIC_RE = re.compile(r"(?<![\w:])(llmserve_\w+)")

def check_names(where, text):
    for name in METRIC_RE.findall(text):
        if name not in KNOWN:
            errors.append("%s: unknown metric %s" % (where, name))

with open(dashboard_path) as f:
    dash = json.load(f)

# Variables.
variables = {v.get("name"): v for v in dash.get("templating", {}).get("list", [])}
ds = variables.get("datasource")
if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
    errors.append("templating: need variable datasource (type datasource, query prometheus)")
mn = variables.get("model_name")
if not mn or mn.get("type") != "query" or not mn.get("multi") or not mn.get("includeAll"):
    errors.append("templating: need variable model_name (type query, multi, includeAll)")
else:
    q = mn.get("query")
    q = q.get("query", "") if isinstance(q, dict) else (q or "")
    m = re.fullmatch(r"\s*label_values\(\s*(\w+)\s*,\s*model_name\s*\)\s*", q)
    if not m:
        errors.append("templating: model_name query %r is not label_values(<metric>, model_name)" % q)
    else:
        check_names("templating model_name", m.group(1))
    if (mn.get("datasource") or {}).get("uid") != "${datasource}":
        errors.append("templating: model_name does not use ${datasource}")

def walk(panels):
    for p in panels:
        yield p
        yield from walk(p.get("panels", []))

# Grafana variables -> concrete values for parsing.
SUBST = [
    (re.compile(r"\$\{__(rate_interval|interval|range)\}|\$__(rate_interval|interval|range)\b"), "1m"),
    (re.compile(r"\$\{__(interval_ms|range_ms|range_s)\}|\$__(interval_ms|range_ms|range_s)\b"), "60"),
    (re.compile(r"\$\{model_name(:\w+)?\}|\$model_name\b"), ".*"),
]
SELECTOR_RE = re.compile(r"(?<![\w:])(llmserve_\w+)\s*(\{[^}]*\})?")

exprs = []
for p in walk(dash.get("panels", [])):
    if p.get("type") == "row":
        continue
    title = "panel %r" % p.get("title")
    if (p.get("datasource") or {}).get("uid") != "${datasource}":
        errors.append("%s: datasource is not ${datasource}" % title)
    targets = p.get("targets") or []
    if not targets:
        errors.append("%s: no targets" % title)
    for t in targets:
        where = "%s target %s" % (title, t.get("refId"))
        if (t.get("datasource") or {}).get("uid") != "${datasource}":
            errors.append("%s: datasource is not ${datasource}" % where)
        expr = t.get("expr", "")
        if not expr.strip():
            errors.append("%s: empty expr" % where)
            continue
        check_names(where, expr)
        selectors = SELECTOR_RE.findall(expr)
        if not selectors:
            errors.append("%s: no llmserve metric in %r" % (where, expr))
        for name, matchers in selectors:
            if 'model_name=~"$model_name"' not in (matchers or ""):
                errors.append('%s: %s lacks model_name=~"$model_name"' % (where, name))
        concrete = expr
        for pattern, value in SUBST:
            concrete = pattern.sub(value, concrete)
        if "$" in concrete:
            errors.append("%s: unknown Grafana variable in %r" % (where, expr))
            continue
        exprs.append((where, concrete))

# Metric names used by the rules (comments stripped).
with open(rules_path) as f:
    rules_text = "\n".join(line.split(" #")[0] for line in f if not line.lstrip().startswith("#"))
check_names("rules.yml", rules_text)

with open(out_path, "w") as out:
    out.write("groups:\n  - name: dashboard_exprs\n    rules:\n")
    for i, (where, expr) in enumerate(exprs):
        out.write("      # %s\n      - record: dashboard:expr_%d:check\n        expr: %s\n"
                  % (where, i, json.dumps(expr)))

print("dashboard %s: %d panels, %d queries" % (
    dash.get("title"), sum(1 for p in walk(dash.get("panels", [])) if p.get("type") != "row"), len(exprs)))
for e in errors:
    print("ERROR: " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
then :; else status=1; fi

echo "== promtool check rules (dashboard queries)"
promtool check rules "$tmp/dashboard_rules.yml" || status=1
if [[ $status -ne 0 ]]; then
  echo "FAIL" >&2
  exit 1
fi
echo "PASS"
