#!/usr/bin/env bash
# Long fuzzing: every target of scripts/fuzz.sh for FUZZ_SECONDS each
# (default 3600, one after the other), growing the corpora that
# build-fuzz/fuzz/corpus/ keeps between runs. Findings are reported and
# kept as scripts/fuzz.sh does (exit 1).
#   FUZZ_SECONDS=14400 bench/fuzz_long.sh
#   FUZZ_RUNS=1000000 FUZZ_SECONDS=7200 bench/fuzz_long.sh   # the 1M aim
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/fuzz.sh "${FUZZ_SECONDS:-3600}"
