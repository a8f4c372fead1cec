#!/usr/bin/env bash
# The one prepared GPU run (docs/cuda-backend.md).
#
#   scripts/gpu_check.sh bundle [BUILD_DIR] [OUT_DIR]   here, without a GPU
#   scripts/gpu_check.sh device [BUNDLE_DIR]            on the lent GPU machine
#
# `bundle` builds (in BUILD_DIR, default build-gpu: Release, no -march=native)
# the GPU binaries, strips them, adds the Debian shared libraries they need
# (protobuf, gloo and its deps, OpenBLAS, ...; not glibc or libstdc++, which
# the Ubuntu image has newer) and packs OUT_DIR/strata-gpu.tar.gz, refusing
# one over the 64 MiB a GPU machine accepts. Pass `build` as BUILD_DIR to
# package an existing build (the test of this script does).
#
# `device` unpacks it, prints the environment (glibc, driver, where
# cuBLASLt / NVRTC / NCCL are: /usr/local/cuda/lib64 or the venv's nvidia/*
# wheels), runs the `gpu` tests, one training step under compute-sanitizer
# memcheck and gpt_tiny on the GPU against the CPU, writing everything under
# $OUT (default ./gpu-out), in well under 8 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

limit=$((64 * 1024 * 1024))

bundle() {
  local build=${1:-build-gpu} out=${2:-build-gpu/bundle}
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DSTRATA_NATIVE=OFF >/dev/null
  fi
  ninja -C "$build" strata cuda_gpu_test >/dev/null
  local stage="$out/strata-gpu"
  rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib"
  cp "$build/tools/strata/strata" "$build/test/cuda/cuda_gpu_test" "$stage/bin/"
  strip --strip-unneeded "$stage"/bin/*
  # Every shared library they load, but the C and C++ runtimes.
  ldd "$stage"/bin/* | awk '/=> \// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libstdc\+\+|libgcc_s)\.so' |
    while read -r lib; do cp -L "$lib" "$stage/lib/"; done
  cp -r examples "$stage/"
  cp scripts/gpu_check.sh "$stage/"
  tar -C "$out" -czf "$out/strata-gpu.tar.gz" strata-gpu
  local size
  size=$(stat -c %s "$out/strata-gpu.tar.gz")
  echo "bundle: $out/strata-gpu.tar.gz, $((size / 1024 / 1024)) MiB" \
    "($(ls "$stage/lib" | wc -l) libraries)"
  if [ "$size" -gt "$limit" ]; then
    echo "bundle: over the 64 MiB upload limit" >&2
    return 1
  fi
}

# The directory of the first of $2... found under $1 (a library search).
find_lib() {
  local root=$1
  shift
  for name in "$@"; do
    local hit
    hit=$(find "$root" -maxdepth 4 -name "$name" 2>/dev/null | head -1)
    if [ -n "$hit" ]; then
      dirname "$hit"
      return
    fi
  done
}

device() {
  local here out=${OUT:-$PWD/gpu-out}
  here=$(cd "${1:-.}" && pwd)
  mkdir -p "$out"
  if [ -f "$here/strata-gpu.tar.gz" ]; then
    tar -C "$out" -xzf "$here/strata-gpu.tar.gz"
    here="$out/strata-gpu"
  fi
  local libs="$here/lib" roots=/usr/local/cuda/lib64 wheels
  wheels=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null || true)
  [ -n "$wheels" ] && roots="$roots $wheels/nvidia"
  for root in $roots; do
    for want in "libcublasLt.so.1[23]*" "libnvrtc.so.1[23]*" "libnccl.so.2*"; do
      local d
      d=$(find_lib "$root" "$want")
      [ -n "$d" ] && libs="$libs:$d"
    done
  done
  export LD_LIBRARY_PATH="$libs:${LD_LIBRARY_PATH:-}"
  {
    echo "== environment"
    ldd --version | head -1
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  } | tee "$out/environment.txt"
  local S="$here/bin/strata" status=0
  echo "== gpu tests" | tee "$out/gpu_tests.txt"
  timeout 240 "$here/bin/cuda_gpu_test" 2>&1 | tee -a "$out/gpu_tests.txt" ||
    status=1
  echo "== gpt_tiny: cuda against cpu" | tee "$out/train.txt"
  for dev in cpu cuda; do
    timeout 120 "$S" train "$here/examples/gpt_tiny.textproto" --steps 10 \
      --device "$dev" --out "$out/run-$dev" --overwrite 2>&1 |
      tail -3 | tee -a "$out/train.txt" || status=1
  done
  if command -v compute-sanitizer >/dev/null; then
    echo "== memcheck: one step" | tee "$out/memcheck.txt"
    timeout 180 compute-sanitizer --tool memcheck "$S" train \
      "$here/examples/gpt_tiny.textproto" --steps 1 --device cuda \
      --out "$out/run-memcheck" --overwrite 2>&1 | tail -20 |
      tee -a "$out/memcheck.txt" || status=1
  fi
  return $status
}

case "${1:-}" in
bundle) shift && bundle "$@" ;;
device) shift && device "$@" ;;
*)
  echo "usage: scripts/gpu_check.sh bundle [BUILD_DIR] [OUT_DIR] | device [BUNDLE_DIR]" >&2
  exit 2
  ;;
esac
