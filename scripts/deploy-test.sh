#!/usr/bin/env bash
# The deployment checks, as one CI step (.ci/run runs it after the test suites):
#   container  scripts/container-test.sh  image build (podman), run, HEALTHCHECK, generate, SIGTERM
#   k8s        scripts/k8s-validate.sh    kustomize render, schema validation, podman kube play
#   compose    docker-compose config      deploy/compose.yaml is a valid compose file
#   nginx      nginx -t                   deploy/nginx/nginx.conf (replica names → 127.0.0.1)
#   prometheus promtool check config      deploy/prometheus/prometheus-compose.yml
# Usage: scripts/deploy-test.sh   (as root; env as for the scripts it calls)
# Prints "N passed, N failed" and exits 1 if any check failed.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh >/dev/null
passed=0
failed=0
failures=()
t_all=$SECONDS

check() {
  local name="$1"; shift
  local t0=$SECONDS
  echo "=== deploy-test: $name"
  if "$@"; then
    passed=$((passed + 1))
    echo "=== deploy-test: $name: ok ($((SECONDS - t0)) s)"
  else
    failed=$((failed + 1))
    failures+=("$name")
    echo "=== deploy-test: $name: FAILED ($((SECONDS - t0)) s)"
  fi
}

compose_config() { docker-compose -f deploy/compose.yaml config -q; }

nginx_config() {
  local dir rc=0
  dir="$(mktemp -d)"
  # nginx resolves upstream names when it loads the config: point the compose service
  # names at the loopback address for the check.
  sed -E 's/llmserve-[0-9]+:/127.0.0.1:/' deploy/nginx/nginx.conf > "$dir/nginx.conf"
  nginx -t -q -p "$dir" -c "$dir/nginx.conf" || rc=$?
  rm -rf "$dir"
  return "$rc"
}

prometheus_config() { promtool check config deploy/prometheus/prometheus-compose.yml >/dev/null; }

check container scripts/container-test.sh
check k8s scripts/k8s-validate.sh
check compose compose_config
check nginx nginx_config
check prometheus prometheus_config

echo "deploy-test: wall time $((SECONDS - t_all)) s"
if [ "$failed" -gt 0 ]; then echo "deploy-test: failed: ${failures[*]}"; fi
echo "deploy: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
