#!/usr/bin/env bash
# Installs every build and test dependency of Tidal on Debian 12. Idempotent:
# packages already present are skipped, so a second run does nothing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libsimdjson-dev nlohmann-json3-dev libyaml-cpp-dev libcpp-httplib-dev libcli11-dev
  libspdlog-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-matplotlib python3-yaml python3-jsonschema
  prometheus prometheus-node-exporter etcd-server openssl
  wrk curl
  clang clang-format libclang-rt-14-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
)

# kubectl renders the kustomize trees in deploy/ (deploy_test). Any kubectl on
# PATH will do; Debian's kubernetes-client (1.20, kustomize v2.0.3) otherwise.
command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)

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
