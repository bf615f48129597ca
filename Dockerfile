# Tidal's image: tidal, tidal-agent and tidal-device-plugin on Debian 12, run as
# the non-root user tidal (65532).
#   docker build -t tidal:$(cat VERSION) .
# Where no base image can be pulled (CI), scripts/build-image.sh builds the
# equivalent image from executables already built (docs/image.md).

# --- builder: the release preset, only the three executables -------------------
FROM debian:12 AS builder
WORKDIR /src
# The build dependencies, from the one list of them (scripts/install-deps.sh
# build); copied alone so that this layer survives source changes.
COPY scripts/install-deps.sh scripts/
RUN scripts/install-deps.sh build && rm -rf /var/lib/apt/lists/*
COPY . .
# The tests and benchmarks are off: they need packages the image does not.
# Debug info is stripped (tidal: 118 MB to 5 MB); the symbols stay for backtraces.
# tidal-https.so is the https half of the agent's GET client, loaded on first use
# from ../lib/tidal/ beside the executable.
RUN cmake --preset release -DTIDAL_BUILD_TESTS=OFF -DTIDAL_BUILD_BENCH=OFF \
 && cmake --build --preset release --target tidal tidal-agent tidal-device-plugin tidal_https \
 && mkdir -p /out/bin /out/lib/tidal \
 && for b in tidal tidal-agent tidal-device-plugin; do \
      strip --strip-debug -o "/out/bin/$b" "build/release/src/cli/$b"; \
    done \
 && strip --strip-debug -o /out/lib/tidal/tidal-https.so build/release/src/cli/tidal-https.so

# --- runtime: debian:12-slim with only the shared libraries they load --------------
FROM debian:12-slim
# The packages of every library `ldd` lists for the three executables (dpkg -S),
# and the CA bundle for TLS (kube-apiserver, kubelet, an https Prometheus).
# libc6, libgcc-s1, libstdc++6 and zlib1g are in the slim image already.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates \
      libabsl20220623 libbrotli1 libc-ares2 libcpp-httplib0.11 libfmt9 \
      libgrpc++1.51 libgrpc29 libprotobuf32 libre2-9 libsimdjson14 libspdlog1.10 \
      libssl3 libstdc++6 libyaml-cpp0.7 zlib1g \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --gid 65532 tidal \
 && useradd --uid 65532 --gid 65532 --home-dir /home/tidal --create-home \
      --shell /usr/sbin/nologin tidal
COPY --from=builder /out/bin/ /usr/local/bin/
COPY --from=builder /out/lib/ /usr/local/lib/
USER 65532:65532
WORKDIR /home/tidal
# The Deployments pass the subcommand as args; the DaemonSets name tidal-agent
# or tidal-device-plugin as the command (found on PATH, /usr/local/bin).
ENTRYPOINT ["/usr/local/bin/tidal"]
CMD ["--help"]
