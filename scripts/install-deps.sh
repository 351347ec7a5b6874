#!/usr/bin/env bash
# Installs every build and test dependency of llmserve from Debian 12 packages.
# Usage: scripts/install-deps.sh        (as root, or with sudo available)
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates ccache
  # Linking the test executables (scripts/configure.sh uses it when present)
  mold
  # RPC and serialization
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  # Core libraries
  libabsl-dev libdnnl-dev libspdlog-dev libfmt-dev prometheus-cpp-dev
  libpcre2-dev nlohmann-json3-dev libutf8proc-dev libcpp-httplib-dev libssl-dev
  # The HTTP servers: Boost.Beast and Asio (header-only)
  libboost1.81-dev
  # Tests: certificates for the TLS tests (openssl req / x509)
  openssl
  # Tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # Fuzzing (scripts/fuzz-test.sh): clang with libFuzzer and its sanitizer runtimes, OpenMP for clang
  clang libclang-rt-14-dev libomp-dev
  # Tests: independent Python reference
  python3-numpy
  # Tests: the reference chat-template renderer (python3-jinja2), llmctl chat on a terminal (tmux)
  python3-jinja2 tmux
  # Tests: promtool (check metrics, check/test rules) and a real Prometheus server
  prometheus
  # examples/python (gRPC client; its stubs come from protoc + grpc_python_plugin)
  python3-grpcio python3-protobuf
  # Container tests (scripts/deploy-test.sh): image build and run, base images without a
  # registry, compose file and nginx load-balancer config checks; curl for the image's and
  # the kube-play replicas' HTTP API
  podman buildah runc catatonit debootstrap docker-compose nginx curl
)
# Node.js for the offline Kubernetes schema validation (deploy/k8s/validate): only when
# absent, as a node from elsewhere (e.g. NodeSource's, which bundles npm) conflicts with
# Debian's npm package.
if ! command -v node >/dev/null; then PACKAGES+=(nodejs); fi
if ! command -v npm >/dev/null; then PACKAGES+=(npm); fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
