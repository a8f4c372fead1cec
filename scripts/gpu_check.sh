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
# wheels), runs the `gpu` tests (the hand-written kernels, batched AdamW and
# the 16-bit conversions included), gpt_tiny on the GPU against the CPU in
# f32 and bf16, one training step under compute-sanitizer memcheck, and the
# step-time table: GPT-2 124M's transformer at sequence 1024 on strata (f32,
# bf16) and on PyTorch (eager f32, eager bf16 autocast, torch.compile bf16;
# bench/torch_gpu_step.py, the same model and GPU), then `strata calibrate
# --device cuda` and the step `strata estimate` predicts from it and from
# the built-in h200 description, writing everything under
# $OUT (default ./gpu-out). Each stage starts only while the run is under
# 7 minutes (the machine is lent for 8). Without a GPU it says so and exits
# 0.
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
  mkdir -p "$stage/bench" "$stage/test/reference" "$stage/data"
  cp bench/torch_gpu_step.py bench/gpt2_124m_char.textproto "$stage/bench/"
  cp test/reference/torch_models.py "$stage/test/reference/"
  cp ../shared/data/tinyshakespeare.txt "$stage/data/"
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
  local S="$here/bin/strata" status=0 text="$here/data/tinyshakespeare.txt"
  if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu_check: no GPU here (nvidia-smi -L fails); nothing to run" |
      tee "$out/skipped.txt"
    return 0
  fi
  # A stage starts only before this many seconds (the machine: 8 minutes).
  local deadline=420
  in_time() {
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "== skipped (past ${deadline} s): $1" | tee -a "$out/skipped.txt"
      return 1
    fi
  }
  echo "== gpu tests" | tee "$out/gpu_tests.txt"
  timeout 240 "$here/bin/cuda_gpu_test" 2>&1 | tee -a "$out/gpu_tests.txt" ||
    status=1
  if in_time "gpt_tiny"; then
    echo "== gpt_tiny: cuda against cpu" | tee "$out/train.txt"
    for run in "cpu f32" "cuda f32" "cpu bf16" "cuda bf16"; do
      set -- $run
      timeout 120 "$S" train "$here/examples/gpt_tiny.textproto" --steps 10 \
        --data "$text" --device "$1" --precision "$2" \
        --out "$out/run-$1-$2" --overwrite 2>&1 |
        tail -3 | tee -a "$out/train.txt" || status=1
    done
  fi
  if command -v compute-sanitizer >/dev/null && in_time "memcheck"; then
    echo "== memcheck: one step" | tee "$out/memcheck.txt"
    timeout 180 compute-sanitizer --tool memcheck "$S" train \
      "$here/examples/gpt_tiny.textproto" --steps 1 --device cuda \
      --data "$text" --out "$out/run-memcheck" --overwrite 2>&1 | tail -20 |
      tee -a "$out/memcheck.txt" || status=1
  fi
  benchmark "$here" "$out" "$text" || status=1
  predicted "$here" "$out" || status=1
  return $status
}

# `strata calibrate --device cuda` (perf/CalibrateDevice.h, links from h200)
# and `strata estimate` of the benchmark's spec on that description, beside
# the measured step (issue 17): $out/h200-measured.textproto, predicted.txt.
predicted() {
  local here=$1 out=$2 spec="$1/bench/gpt2_124m_char.textproto" status=0
  in_time "calibrate" || return 0
  echo "== calibrate --device cuda, estimate against measured" |
    tee "$out/predicted.txt"
  timeout 150 "$here/bin/strata" calibrate --device cuda --base h200 \
    -o "$out/h200-measured.textproto" 2>&1 | tail -6 |
    tee -a "$out/predicted.txt" || status=1
  for precision in f32 bf16; do
    for cluster in h200 "$out/h200-measured.textproto"; do
      echo "estimate $precision on $(basename "$cluster"):" |
        tee -a "$out/predicted.txt"
      timeout 60 "$here/bin/strata" estimate "$spec" --cluster "$cluster" \
        --precision "$precision" 2>&1 | tee -a "$out/predicted.txt" ||
        status=1
    done
  done
  return $status
}

# The step-time table (GPT-2 124M's transformer, sequence 1024, micro batch
# 8): strata's tokens_per_s from metrics.jsonl (the mean of steps 4-10, after
# NVRTC and warm-up) and bench/torch_gpu_step.py's, into $out/benchmark.txt.
benchmark() {
  local here=$1 out=$2 text=$3 spec="$1/bench/gpt2_124m_char.textproto"
  local table="$out/benchmark.txt" status=0
  echo "== benchmark: GPT-2 124M transformer, seq 1024, micro batch 8" |
    tee "$table"
  for precision in f32 bf16; do
    in_time "strata $precision" || continue
    local run="$out/bench-strata-$precision"
    timeout 150 "$here/bin/strata" train "$spec" --device cuda --steps 10 \
      --data "$text" --precision "$precision" --log-every 1 --out "$run" \
      --overwrite >"$run.log" 2>&1 || status=1
    python3 - "$run/metrics.jsonl" "$precision" <<'PY' | tee -a "$table"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"tokens_per_s"' in l]
tok = [r["tokens_per_s"] for r in rows[3:]] or [r["tokens_per_s"] for r in rows]
mean = sum(tok) / len(tok)
print(f"strata {sys.argv[2]} ms_per_step {8 * 1024 * 1000 / mean:.1f} "
      f"tokens_per_s {mean:.0f}")
PY
  done
  if in_time "pytorch"; then
    timeout $((deadline + 60 - SECONDS)) python3 "$here/bench/torch_gpu_step.py" \
      --batch 8 --seq 1024 --vocab 65 2>&1 | tee -a "$table" || status=1
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
