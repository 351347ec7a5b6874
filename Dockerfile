# syntax=docker/dockerfile:1
# llmserve container image: the gRPC server `llmserve` and the client `llmctl`.
#
# Build (docker or podman; podman needs --format docker to keep HEALTHCHECK/STOPSIGNAL):
#   podman build --format docker -t llmserve .        # scripts/container-test.sh does this
#   docker build -t llmserve .
# Run (models are mounted at run time, read-only, at /models):
#   podman run --rm -p 50051:50051 -p 8000:8000 -p 9400:9400 -v /path/to/models:/models:ro llmserve \
#       --model /models/stories15M.bin --tokenizer /models/tokenizer.bin --http-port 8000
# With no --model it serves the built-in demo model (meaningless text).
#
# Arguments after the image name are llmserve flags (`llmserve --help`; docs/OPERATIONS.md):
#   --model PATH --tokenizer PATH --model-name NAME   what to serve (under /models)
#   --port 50051 --metrics-port 9400 --host 0.0.0.0   gRPC and Prometheus /metrics ports
#   --http-port 8000 (0 = off, the default)           the OpenAI-compatible HTTP API
#   --threads N (0 = all cores) --kv-cache-bytes 2G --max-running 64 --max-waiting 256 ...
#   --drain-timeout 30   seconds SIGTERM waits for in-flight streams; keep the stop timeout
#                        (docker stop -t, k8s terminationGracePeriodSeconds) longer than it.
# Environment:
#   LLMSERVE_ADDR   address `llmctl` (and so the HEALTHCHECK) talks to; default
#                   127.0.0.1:50051. Set it when you change --port.

# ---------------------------------------------------------------------------- builder
FROM debian:bookworm AS builder
# Marks this stage's (untagged) images so scripts/podman-env.sh can prune superseded ones.
LABEL io.llmserve.build=builder
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      build-essential cmake ninja-build pkg-config ccache ca-certificates \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libabsl-dev libdnnl-dev libspdlog-dev libfmt-dev prometheus-cpp-dev \
      libpcre2-dev nlohmann-json3-dev libutf8proc-dev libssl-dev libcpp-httplib-dev libboost1.81-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the two binaries need, so edits to tests, docs or deploy/ reuse the build layer.
COPY CMakeLists.txt ./
COPY proto/ proto/
COPY constraint/ constraint/
COPY model/ model/
COPY scheduler/ scheduler/
COPY server/ server/
COPY client/ client/
COPY tools/ tools/
# ccache lives in a cache mount: a rebuild on the same machine after a source change only
# recompiles what changed (the layer cache covers the no-change case). CCACHE_DIR may
# point elsewhere instead: scripts/container-test.sh mounts the host's ccache (the one
# scripts/test.sh's Release build fills) with `podman build -v` and sets it here, so on a
# fresh CI machine the image's compile is mostly cache hits. CCACHE_BASEDIR and a build
# directory inside the source tree make the paths relative, the same as the host's.
ARG CCACHE_DIR=/ccache
ENV CCACHE_DIR=${CCACHE_DIR} CCACHE_BASEDIR=/src CCACHE_SLOPPINESS=locale
RUN --mount=type=cache,target=/ccache \
    cmake -S . -B /src/build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DLLMSERVE_BUILD_TESTS=OFF -DLLMSERVE_BUILD_BENCH=OFF \
      -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
 && ninja -C /src/build llmserve llmctl \
 && (ccache --show-stats | grep -iE 'hits|misses' || true)
RUN install -D -m 0755 /src/build/server/llmserve /out/llmserve \
 && install -D -m 0755 /src/build/tools/llmctl /out/llmctl \
 && strip /out/llmserve /out/llmctl

# ---------------------------------------------------------------------------- runtime
FROM debian:bookworm-slim
# Runtime shared libraries only (ldd of both binaries → their Debian packages).
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libabsl20220623 libc-ares2 libdnnl2 libfmt9 libgomp1 libgrpc++1.51 \
      libgrpc29 libpcre2-8-0 libprometheus-cpp-core1.0 \
      libprotobuf32 libre2-9 libspdlog1.10 libssl3 libutf8proc2 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 llmserve \
 && useradd --uid 10001 --gid llmserve --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin llmserve \
 && mkdir -p /models
COPY --from=builder /out/llmserve /out/llmctl /usr/local/bin/

LABEL org.opencontainers.image.title="llmserve" \
      io.llmserve.build=runtime \
      org.opencontainers.image.description="CPU LLM gRPC streaming server (llmserve.v1.LlmService, grpc.health.v1, Prometheus metrics)" \
      io.llmserve.ports="50051/tcp gRPC (--port), 8000/tcp OpenAI-compatible HTTP API (--http-port 8000), 9400/tcp Prometheus /metrics (--metrics-port)" \
      io.llmserve.volume.models="/models: model files, mounted read-only; pass --model /models/..." \
      io.llmserve.env.LLMSERVE_ADDR="address llmctl and the HEALTHCHECK use (default 127.0.0.1:50051)" \
      io.llmserve.usage="args are llmserve flags: llmserve --help; see docs/OPERATIONS.md"

ENV LLMSERVE_ADDR=127.0.0.1:50051
VOLUME ["/models"]
EXPOSE 50051/tcp 8000/tcp 9400/tcp
USER 10001:10001
# llmctl health exits 0 only when grpc.health.v1 says SERVING (not while loading or draining).
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["llmctl", "health", "--timeout", "4"]
# SIGTERM drains in-flight streams (up to --drain-timeout), then exits 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["llmserve"]
