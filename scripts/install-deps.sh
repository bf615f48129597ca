#!/usr/bin/env bash
# Installs every build and test dependency of Tidal on Debian 12. Idempotent:
# packages already present are skipped, so a second run does nothing.
#   scripts/install-deps.sh          build and test (scripts/build.sh, run.sh, test.sh)
#   scripts/install-deps.sh build    only what builds the executables (the Dockerfile's builder)
#   scripts/install-deps.sh image    only the tools of scripts/build-image.sh
set -euo pipefail

# What `cmake --preset release` with the tests and benchmarks off needs.
build_packages=(
  build-essential cmake ninja-build pkg-config git
  libsimdjson-dev nlohmann-json3-dev libyaml-cpp-dev libcpp-httplib-dev libcli11-dev
  libspdlog-dev libfmt-dev libboost-dev libssl-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
)

group="${1:-all}"
case "$group" in
  all)
    packages=(
      "${build_packages[@]}"
      libgtest-dev libgmock-dev libbenchmark-dev
      python3 python3-matplotlib python3-yaml python3-jsonschema
      prometheus prometheus-node-exporter etcd-server openssl
      glpk-utils
      wrk curl
      clang clang-format libclang-rt-14-dev
    )
    # kubectl renders the kustomize trees in deploy/ (deploy_test). Any kubectl on
    # PATH will do; Debian's kubernetes-client (1.20, kustomize v2.0.3) otherwise.
    command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)
    ;;
  build) packages=("${build_packages[@]}") ;;
  # The OCI image built offline from the built executables (docs/image.md):
  # umoci writes and unpacks it without a daemon, skopeo converts it to the
  # docker-archive that `kind load image-archive` takes, podman runs it (with
  # runc, which also takes hybrid cgroup hierarchies), ca-certificates is the
  # CA bundle the image carries, procps's pgrep waits for podman's cleanup. Not
  # needed to build, run or test anything else, so scripts/run.sh does not
  # install them.
  image) packages=(umoci skopeo podman runc ca-certificates procps) ;;
  *)
    echo "usage: scripts/install-deps.sh [all|build|image]" >&2
    exit 2
    ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
