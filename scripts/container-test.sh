#!/usr/bin/env bash
# Builds the llmserve image with podman and checks it end to end, offline:
#   1. base images debian:bookworm / debian:bookworm-slim: reused when present, else made
#      from Debian's packages with debootstrap + `podman import` (never `podman pull`);
#   2. `podman build` of the Dockerfile (layer cache + ccache cache mount: a rerun is fast);
#   3. runs the image with the stories260K model mounted read-only at /models, waits for
#      the image's HEALTHCHECK to pass, streams a completion with the image's llmctl and
#      one through the OpenAI-compatible HTTP API (curl), scrapes /metrics;
#   4. `podman stop` (SIGTERM) and checks the exit code is 0 (clean drain).
# Usage: scripts/container-test.sh            (as root; the CI runs it from scripts/deploy-test.sh)
# Env: LLMSERVE_TEST_ASSETS (default ../shared; missing → skip, or fail when CI=true),
#      LLMSERVE_IMAGE (default localhost/llmserve:test), CT_PORT / CT_METRICS_PORT /
#      CT_HTTP_PORT (host-network ports, default 50961 / 9461 / 8461). Sources scripts/podman-env.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/podman-env.sh

IMAGE="${LLMSERVE_IMAGE:-localhost/llmserve:test}"
PORT="${CT_PORT:-50961}"
MPORT="${CT_METRICS_PORT:-9461}"
HPORT="${CT_HTTP_PORT:-8461}"
NAME="llmserve-ct-$$"
ASSETS="${LLMSERVE_TEST_ASSETS:-../shared}"
MODELS="$ASSETS/models/llama2c"

if [ ! -f "$MODELS/stories260K.bin" ] || [ ! -f "$MODELS/tok512.bin" ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "container-test: FAIL: stories260K not found under $MODELS (set LLMSERVE_TEST_ASSETS)" >&2
    exit 1
  fi
  echo "container-test: SKIP: stories260K not found under $MODELS (set LLMSERVE_TEST_ASSETS)"
  exit 0
fi
MODELS="$(cd "$MODELS" && pwd)"

ensure_base_images
build_image "$IMAGE"

cleanup() {
  podman rm -f -t 0 "$NAME" >/dev/null 2>&1 || true
  rm -f "$PODMAN_ENV_DIR/run-$$.log"
}
trap cleanup EXIT

echo "container-test: run $IMAGE on 127.0.0.1:$PORT (metrics $MPORT, HTTP API $HPORT)"
podman run -d --name "$NAME" --network host \
  -v "$MODELS:/models:ro" -e "LLMSERVE_ADDR=127.0.0.1:$PORT" \
  "$IMAGE" --model /models/stories260K.bin --tokenizer /models/tok512.bin \
  --host 127.0.0.1 --port "$PORT" --metrics-port "$MPORT" --http-port "$HPORT" --threads 1 \
  --kv-cache-bytes 64M --drain-timeout 10 >/dev/null 2>"$PODMAN_ENV_DIR/run-$$.log" || {
  cat "$PODMAN_ENV_DIR/run-$$.log" >&2; exit 1; }

# The image's own HEALTHCHECK (llmctl health against $LLMSERVE_ADDR), run on demand (podman
# cannot schedule it here: no systemd; its complaint about that went to run-$$.log):
# bounded at 60 tries, 1 s apart.
healthy=0
for _ in $(seq 1 60); do
  if [ "$(podman inspect -f '{{.State.Running}}' "$NAME")" != "true" ]; then
    echo "container-test: FAIL: container exited before it was healthy" >&2
    podman logs "$NAME" >&2 || true
    exit 1
  fi
  if podman healthcheck run "$NAME" >/dev/null 2>&1; then healthy=1; break; fi
  sleep 1
done
if [ "$healthy" -ne 1 ]; then
  echo "container-test: FAIL: HEALTHCHECK did not pass within 60 tries" >&2
  podman logs "$NAME" >&2 || true
  exit 1
fi
echo "container-test: HEALTHCHECK passed ($(podman inspect -f '{{.State.Health.Status}}' "$NAME" 2>/dev/null || echo healthy))"

# The server runs as the image's non-root user.
uid="$(podman exec "$NAME" id -u)"
if [ "$uid" != "10001" ]; then
  echo "container-test: FAIL: llmserve runs as uid $uid, not 10001" >&2
  exit 1
fi

# A streamed completion through the image's llmctl (host network = the host's loopback).
out="$(podman run --rm --network host --no-healthcheck --entrypoint llmctl "$IMAGE" \
  generate --addr "127.0.0.1:$PORT" --timeout 60 --max-tokens 24 --temperature 0 "Once upon a time")"
echo "container-test: completion: ${out//$'\n'/ }"
if [ "$(printf '%s' "$out" | tr -d '[:space:]' | wc -c)" -lt 10 ]; then
  echo "container-test: FAIL: completion is (nearly) empty" >&2
  exit 1
fi

# The same through the OpenAI-compatible HTTP API, streamed (server-sent events).
sse="$(curl -sSN --max-time 60 "http://127.0.0.1:$HPORT/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0, "stream": true}')"
if ! grep -q '"text_completion"' <<< "$sse" || [ "$(tail -n 1 <<< "$sse")" != "data: [DONE]" ]; then
  echo "container-test: FAIL: the HTTP API's stream: ${sse:0:300}" >&2
  exit 1
fi
echo "container-test: HTTP API: $(grep -c '^data: {' <<< "$sse") events, then [DONE]"

# The metrics endpoint answers from inside the network namespace (host network).
metrics="$(podman exec "$NAME" bash -c "exec 3<>/dev/tcp/127.0.0.1/$MPORT && printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && cat <&3")"
if ! grep -q '^llmserve_generation_tokens_total' <<< "$metrics"; then
  echo "container-test: FAIL: /metrics on $MPORT has no llmserve_generation_tokens_total" >&2
  exit 1
fi
echo "container-test: /metrics ok"

# SIGTERM (the image's STOPSIGNAL) → drain → exit 0; podman stop waits up to 30 s.
podman stop -t 30 "$NAME" >/dev/null 2>>"$PODMAN_ENV_DIR/run-$$.log"
code="$(podman inspect -f '{{.State.ExitCode}}' "$NAME")"
if [ "$code" != "0" ]; then
  echo "container-test: FAIL: exit code $code after SIGTERM" >&2
  podman logs "$NAME" >&2 || true
  exit 1
fi
echo "container-test: SIGTERM → exit 0"
echo "container-test: PASS"
