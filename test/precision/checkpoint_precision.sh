#!/bin/bash
# Checkpoints across precisions (docs/mixed-precision.md), on a 1-layer GPT
# and a generated text:
#  - a bf16 run resumed from its step-3 checkpoint ends bitwise equal to an
#    uninterrupted bf16 run (the state is the fp32 master weights and moments,
#    the 16-bit copies are remade from them every step);
#  - a checkpoint moves f32 -> bf16 -> f32 with --resume (a note names the
#    change), and every checkpoint holds the same fp32 bytes.
# usage: checkpoint_precision.sh STRATA_BIN
set -euo pipefail
strata=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 -c "
import random
random.seed(3)
words = ['the', 'king', 'and', 'queen', 'of', 'a', 'night', 'day', 'sword']
print(' '.join(random.choice(words) for _ in range(4000)))" > "$dir/text.txt"
cat > "$dir/spec.textproto" <<SPEC
name: "tiny" family: GPT vocab_size: 32 hidden: 32 layers: 1 heads: 2
seq_len: 16 micro_batch: 2 dropout: 0
training { steps: 6 lr: 1e-3 warmup: 0 decay_iters: 9 grad_accum: 1 }
data { path: "$dir/text.txt" }
SPEC
run() { "$strata" train "$dir/spec.textproto" "$@" > "$dir/log" 2>&1 || {
  cat "$dir/log"; exit 1; }; }

run --precision bf16 --out "$dir/a"
run --precision bf16 --steps 3 --out "$dir/b"
run --precision bf16 --out "$dir/b" --resume
cmp "$dir/a/checkpoint.bin" "$dir/b/checkpoint.bin" ||
  { echo "FAIL: resumed bf16 run is not bitwise the uninterrupted one"; exit 1; }

run --steps 3 --out "$dir/c"
bytes() { "$strata" inspect "$1/checkpoint.bin" | grep '^  tensors'; }
f32=$(bytes "$dir/c")
run --steps 6 --precision bf16 --out "$dir/c" --resume
grep -q "note: resuming with a changed training.precision" "$dir/log" ||
  { echo "FAIL: no note on the precision change"; cat "$dir/log"; exit 1; }
bf16=$(bytes "$dir/c")
run --steps 9 --precision f32 --out "$dir/c" --resume
back=$(bytes "$dir/c")
[[ "$f32" == "$bf16" && "$bf16" == "$back" ]] ||
  { echo "FAIL: checkpoint contents differ: '$f32' '$bf16' '$back'"; exit 1; }
# The run continued: metrics hold steps 1..9 once each.
steps=$(grep -c '"loss"' "$dir/c/metrics.jsonl")
[[ $steps == 9 ]] || { echo "FAIL: $steps loss lines, want 9"; exit 1; }

# fp16 with Megatron's dynamic loss scale: 2^32 overflows the first steps,
# so a run stopped at step 3 is mid-backoff; resumed, it is bitwise the
# uninterrupted run (state, step, updates and the scaler's state).
run --precision fp16 --out "$dir/d"
run --precision fp16 --steps 3 --out "$dir/e"
run --precision fp16 --out "$dir/e" --resume
cmp "$dir/d/checkpoint.bin" "$dir/e/checkpoint.bin" ||
  { echo "FAIL: resumed fp16 run is not bitwise the uninterrupted one"; exit 1; }
skipped=$(grep -c '"skipped":true' "$dir/d/metrics.jsonl" || true)
[[ $skipped -ge 3 ]] && grep -q '"loss_scale":' "$dir/d/metrics.jsonl" ||
  { echo "FAIL: metrics lack the loss scale or skipped steps ($skipped)"; exit 1; }
echo "OK: bf16 resume bitwise; f32 -> bf16 -> f32 ($f32); fp16 resume bitwise ($skipped skipped)"
