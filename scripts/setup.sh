#!/usr/bin/env bash
# Installs strata's build and test dependencies (Debian 12 packages only) and
# configures + builds the project into ./build. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config
  llvm-14-dev llvm-14-tools            # LLVM ADT / Support, lit, FileCheck
  libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev libopenblas0-pthread # threaded OpenBLAS (torch uses it too)
  libxsmm-dev                          # JIT float GEMM tiles (runtime/kernels/MatMul.cpp)
  libgloo-dev
  python3 python3-numpy python3-torch  # independent references in tests
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${STRATA_CMAKE_ARGS:-}
ninja -C build
