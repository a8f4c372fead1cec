#!/usr/bin/env bash
# Sets up (packages + build) and runs every default test: gtest units, lit
# tests, PyTorch parity. GPU tests are labelled `gpu` and skip without a device.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# PyTorch's idle OpenMP workers (the parity tests) sleep instead of spinning.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
ctest --test-dir build --output-on-failure -j2 "$@"
# Fuzzing (docs/fuzzing.md): 60 s per libFuzzer target in CI, or
# STRATA_FUZZ_SECONDS per target when set; a developer's plain run skips it.
if [ "${CI:-}" = true ] || [ -n "${STRATA_FUZZ_SECONDS:-}" ]; then
  scripts/fuzz.sh "${STRATA_FUZZ_SECONDS:-60}"
fi
