#!/usr/bin/env bash
# Sets up (packages + build) and runs every default test: gtest units, lit
# tests, PyTorch parity. GPU tests are labelled `gpu` and skip without a device.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# PyTorch's idle OpenMP workers (the parity tests) sleep instead of spinning.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
ctest --test-dir build --output-on-failure -j2 "$@"
