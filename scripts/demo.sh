#!/usr/bin/env bash
# Sets strata up (Debian packages + build) and trains a small character-level
# GPT on Tiny Shakespeare on the CPU for about a minute: a progress line with
# loss, tokens/s and ETA, the validation loss every 100 steps, and a sample
# of generated text at the end. Extra arguments go to `strata train`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build/tools/strata/strata train examples/gpt_tiny.textproto \
  --steps 300 --warmup 30 --decay-iters 300 --eval-every 100 \
  --out out/demo --overwrite "$@"
