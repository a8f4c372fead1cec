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
  libsentencepiece-dev libre2-dev libicu-dev # tokenizers (runtime/text)
  libcpp-httplib-dev libsimdjson-dev   # generation server, JSON requests
  clang-14 libfuzzer-14-dev libclang-rt-14-dev # fuzz targets (test/fuzz)
  librsvg2-bin                         # rsvg-convert: look at inspect --schedule SVGs as PNGs
  python3 python3-numpy python3-torch  # independent references in tests
  python3-venv python3-sentencepiece
  python3-protobuf                     # transformers' Llama tokenizer converter (test/text)
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

# Test-only Python references from PyPI (pinned in test/requirements.txt), in a
# virtual environment over Debian's torch: never a second torch.
if [ ! -x build/venv/bin/python ] || ! cmp -s test/requirements.txt build/venv/requirements.txt; then
  /usr/bin/python3 -m venv --system-site-packages build/venv
  build/venv/bin/pip install --quiet --disable-pip-version-check -r test/requirements.txt
  cp test/requirements.txt build/venv/requirements.txt
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${STRATA_CMAKE_ARGS:-}
ninja -C build
