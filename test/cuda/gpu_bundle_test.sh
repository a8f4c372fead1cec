#!/usr/bin/env bash
# The local part of scripts/gpu_check.sh, so it cannot rot until a GPU is
# lent: the bundle packs from this build, stays under 64 MiB, and its
# strata runs with the bundled libraries (gloo, protobuf, OpenBLAS resolve
# from the bundle's lib/).
set -euo pipefail
build=$1 out=$2
repo=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$out"
"$repo/scripts/gpu_check.sh" bundle "$build" "$out"
stage="$out/strata-gpu"
test -f "$out/strata-gpu.tar.gz"
resolved=$(LD_LIBRARY_PATH="$stage/lib" ldd "$stage/bin/strata")
for lib in libgloo libprotobuf libopenblas; do
  grep -q "$lib.*$stage/lib" <<<"$resolved" ||
    { echo "FAIL: $lib does not resolve from the bundle" >&2; exit 1; }
done
LD_LIBRARY_PATH="$stage/lib" "$stage/bin/strata" help >/dev/null
# Without a GPU, --device cuda names what is missing and runs nothing.
if [ ! -e /dev/nvidiactl ]; then
  msg=$(LD_LIBRARY_PATH="$stage/lib" "$stage/bin/strata" train --device cuda \
    "$stage/examples/gpt_tiny.textproto" 2>&1 || true)
  echo "$msg" | grep -q "no CUDA driver: libcuda.so.1 cannot be loaded" ||
    { echo "FAIL: --device cuda without a driver said: $msg" >&2; exit 1; }
fi
echo "PASS"
